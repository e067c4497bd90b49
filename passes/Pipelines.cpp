//===- Pipelines.cpp - The compile pipeline, and --pc-distribute ---------===//

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

void pc::buildCompilePipeline(mlir::OpPassManager &pm,
                              const CompilePipelineOptions &options) {
  if (options.train) {
    pm.addPass(createAutodiff(options.autodiff));
    pm.addPass(createOptimizer(options.optimizer));
  }
  if (!options.distribute)
    return;
  pm.addPass(createSbpPropagate());
  pm.addPass(createInsertBoxing());
  pm.addPass(createOptimizeBoxing());
  pm.addPass(createLowerBoxing());
  pm.addPass(createOptimizeBoxing());
  pm.addPass(createPartition());
}

void pc::registerDistributePipeline() {
  mlir::PassPipelineRegistration<>(
      "pc-distribute",
      "From a logical graph to per-device programs: pc-sbp-propagate, "
      "pc-insert-boxing, pc-optimize-boxing, pc-lower-boxing, "
      "pc-optimize-boxing, pc-partition",
      [](mlir::OpPassManager &pm) { buildCompilePipeline(pm, {}); });
}

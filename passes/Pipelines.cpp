//===- Pipelines.cpp - --pc-distribute ------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

void pc::registerDistributePipeline() {
  mlir::PassPipelineRegistration<>(
      "pc-distribute",
      "From a logical graph to per-device programs: pc-sbp-propagate, "
      "pc-insert-boxing, pc-optimize-boxing, pc-lower-boxing, "
      "pc-optimize-boxing, pc-partition",
      [](mlir::OpPassManager &pm) {
        pm.addPass(createSbpPropagate());
        pm.addPass(createInsertBoxing());
        pm.addPass(createOptimizeBoxing());
        pm.addPass(createLowerBoxing());
        pm.addPass(createOptimizeBoxing());
        pm.addPass(createPartition());
      });
}

//===- Pipelines.cpp - The compile pipeline, and --pc-distribute ---------===//

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

void pc::buildCompilePipeline(mlir::OpPassManager &pm,
                              const CompilePipelineOptions &options) {
  if (!options.cluster.empty())
    pm.addPass(createCostModel({options.cluster, "f32"}));
  if (!options.mixedPrecision.dtype.empty())
    pm.addPass(createMixedPrecision(options.mixedPrecision));
  // Pipelines and micro-batches: no-ops for a graph without them.
  pm.addPass(createPipelineSplit(options.pipeline));
  pm.addPass(createMicroBatch({/*phase=*/"shrink"}));
  if (options.train)
    pm.addPass(createAutodiff(options.autodiff));
  pm.addPass(createMicroBatch({/*phase=*/"unroll"}));
  // Layouts before the optimizer, which keeps each weight's state in the
  // weight's layout.
  if (options.autoParallel)
    pm.addPass(createAutoParallel(*options.autoParallel));
  if (options.train)
    pm.addPass(createOptimizer(options.optimizer));
  if (!options.distribute)
    return;
  if (options.fuse)
    pm.addPass(createFuse());
  pm.addPass(createSbpPropagate());
  // Copies of forward ops take their originals' layouts, so that they
  // compute the same values bit for bit.
  if (!options.recompute.empty())
    pm.addPass(createRecompute({options.recompute}));
  pm.addPass(createInsertBoxing());
  pm.addPass(createOptimizeBoxing());
  pm.addPass(createLowerBoxing());
  pm.addPass(createOptimizeBoxing());
  if (options.offload.optimizer || options.offload.parameters)
    pm.addPass(createOffload(options.offload));
  pm.addPass(createPartition());
  pm.addPass(createPipelineSchedule());
  pm.addPass(createMemoryPlan(options.memory));
}

void pc::registerDistributePipeline() {
  mlir::PassPipelineRegistration<>(
      "pc-distribute",
      "From a logical graph to per-device programs: pc-fuse, pc-sbp-propagate, "
      "pc-insert-boxing, pc-optimize-boxing, pc-lower-boxing, "
      "pc-optimize-boxing, pc-partition (and for pipelined graphs "
      "pc-pipeline-split and pc-micro-batch first, pc-pipeline-schedule "
      "after), pc-memory-plan",
      [](mlir::OpPassManager &pm) { buildCompilePipeline(pm, {}); });
}

//===- Passes.h - pc compiler passes ----------------------------*- C++ -*-===//

#ifndef PC_PASSES_PASSES_H
#define PC_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"

#include <optional>

namespace pc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// What the compile pipeline does before distributing a logical graph.
struct CompilePipelineOptions {
  /// A training step: differentiate the loss (--pc-autodiff), then add the
  /// optimizer (--pc-optimizer).
  bool train = false;
  /// Mixed precision before everything else (--pc-mixed-precision), when
  /// `mixedPrecision.dtype` is not empty.
  MixedPrecisionOptions mixedPrecision{/*dtype=*/""};
  AutodiffOptions autodiff;
  OptimizerOptions optimizer;
  /// CPU offload before partitioning (--pc-offload), when either is set.
  OffloadOptions offload{/*optimizer=*/false, /*parameters=*/false};
  /// Activation checkpointing after autodiff (--pc-recompute): "full",
  /// "selective", or empty for none.
  std::string recompute;
  /// Pipeline stages, micro-batches and the schedule (--pc-pipeline-split);
  /// a graph with none of them, and no pc.stage, is not pipelined.
  PipelineSplitOptions pipeline;
  /// A cluster spec whose rates every cost is figured with
  /// (--pc-cost-model, first); empty: the defaults.
  std::string cluster;
  /// Choose every value's layout for the least predicted step time
  /// (--pc-auto-parallel), after autodiff and before the optimizer.
  std::optional<AutoParallelOptions> autoParallel;
  /// Then partition into per-device programs (the --pc-distribute chain).
  bool distribute = true;
  /// Before partitioning, fold elementwise work into its neighbours
  /// (--pc-fuse).
  bool fuse = true;
  /// After partitioning: each program's predicted memory, against a
  /// budget (--pc-memory-plan).
  MemoryPlanOptions memory;
};

/// The one pipeline from a logical graph to per-device programs: autodiff
/// and the optimizer when training, then the --pc-distribute chain. The
/// API's compile (and so pc-run) and the --pc-distribute flag build it here.
void buildCompilePipeline(mlir::OpPassManager &pm,
                          const CompilePipelineOptions &options);

/// Registers --pc-distribute, the whole chain from a logical graph to
/// per-device programs.
void registerDistributePipeline();

} // namespace pc

#endif // PC_PASSES_PASSES_H

//===- Strategy.h - One way to train a model on a cluster -------*- C++ -*-===//
//
// A strategy is every choice the planner makes: the mesh (data, tensor and
// pipeline parallel sizes, tensor-parallel ranks innermost so that they
// share a node), the micro-batches, the pipeline schedule, ZeRO, recompute,
// sequence parallelism, precision and offload. It prints as the pc-run
// options that run it.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PLANNER_STRATEGY_H
#define PC_PLANNER_STRATEGY_H

#include "pipeline/Schedule.h"
#include "planner/Model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pc::planner {

struct Strategy {
  int64_t dp = 1, tp = 1, pp = 1;
  /// Model stages per pipeline device (interleaved schedule).
  int64_t virtualStages = 1;
  /// Sequences per micro-batch, and micro-batches per step on each
  /// data-parallel replica: the global batch is dp * microBatchSize *
  /// microBatches.
  int64_t microBatchSize = 1;
  int64_t microBatches = 1;
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::OneFOneB;
  int64_t zero = 0; // ZeRO stage over the data-parallel axis, 0..3
  Recompute recompute = Recompute::None;
  /// Megatron's sequence parallelism: the tensor-parallel ranks split the
  /// norms' and dropouts' tokens (all-gather and reduce-scatter in place of
  /// all-reduce).
  bool sequenceParallel = false;
  /// "bf16" (mixed precision over f32 master weights) or "f32".
  std::string dtype = "bf16";
  /// The optimizer state and step in host memory.
  bool offloadOptimizer = false;

  int64_t devices() const { return dp * tp * pp; }
  int64_t globalBatch() const { return dp * microBatchSize * microBatches; }
  int64_t modelStages() const { return pp * virtualStages; }

  /// "dp8 tp8 pp8 v3, 64x1 interleaved, zero1, selective, sp, bf16".
  std::string str() const;
  /// The options of pc-run (and pc-opt's pipeline) that run this strategy
  /// on a model whose mesh is dp x tp, one per line.
  std::vector<std::string> runOptions() const;
  /// The strategy family of the seed's guide: "single device", "offload"
  /// (one device), "data parallel", "zero", "tensor parallel", "pipeline
  /// parallel", "3d" (two or more of dp, tp, pp above 1); "+ offload"
  /// when a parallel strategy also offloads.
  std::string family() const;
};

} // namespace pc::planner

#endif // PC_PLANNER_STRATEGY_H

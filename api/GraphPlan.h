//===- GraphPlan.h - Planning a pc graph on a cluster -----------*- C++ -*-===//
//
// planGraph searches how to lay a logical graph out on a cluster's devices:
// every assignment of the devices to its mesh's axes, and pipeline stages
// with their micro-batch counts and schedules. Each candidate is compiled
// by the real pipeline (auto-parallel choosing every unannotated layout,
// on every pipeline stage's mesh), checked against
// the devices' memory, and simulated over the cluster spec's cost model
// (pc-simulate). pc-plan MODEL.mlir prints the result; docs/planning.md
// explains it.
//
//===----------------------------------------------------------------------===//

#ifndef PC_API_GRAPHPLAN_H
#define PC_API_GRAPHPLAN_H

#include "api/Program.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pc::api {

/// "NAME=AxBxC" (or "@NAME=...") as a mesh name and its axis sizes.
absl::StatusOr<std::pair<std::string, std::vector<int64_t>>>
parseMeshShape(const std::string &text);

struct GraphPlanOptions {
  /// The cluster spec (JSON file) every cost is figured with. Required.
  std::string cluster;
  /// Devices to lay the graph on (pc-plan: the spec's nodes x devices per
  /// node).
  int64_t devices = 1;
  /// Bytes per device a plan may use (0: none).
  int64_t deviceMemory = 0;
  /// Largest pipeline: stages up to this many (1: no pipelines).
  int64_t maxStages = 8;
  /// The graph to plan ("": the first).
  std::string graph;
  /// pc-run's --devices for the plan's run options, e.g. "cpu:4" ("":
  /// none).
  std::string runDevices;
  /// Whether auto-parallel chooses every layout the graph leaves
  /// unannotated (on every stage's mesh); else SBP propagation completes
  /// the graph's annotations.
  bool autoParallel = true;
  OptimizerOptions optimizer;
};

struct GraphPlan {
  /// The mesh and its axis sizes (each stage's, under a pipeline).
  std::string mesh;
  std::vector<std::string> axes;
  std::vector<int64_t> shape;
  int64_t stages = 1, virtualStages = 1, microbatches = 1;
  std::string schedule;
  /// The memory techniques a plan that does not fit the budget takes
  /// (CompileOptions): ZeRO's stage and axis, recompute ("full",
  /// "selective"), mixed precision ("bf16").
  int64_t zero = 0;
  std::string zeroAxis, recompute, precision;
  /// The prediction of one training step, and the most memory a device
  /// needs (pc-memory-plan).
  double stepSeconds = 0;
  int64_t peakMemory = 0;
  /// Why the plan could not be compiled or simulated; empty when it was.
  std::string rejected;

  /// "dp=2,tp=2" plus the pipeline, if any ("pp=2,m=4,1f1b"), and the
  /// memory techniques ("zero1(dp),recompute=full,bf16").
  std::string str() const;
  /// What compiles it (cluster and budget from `options`).
  CompileOptions compileOptions(const GraphPlanOptions &options) const;
  /// The pc-run options that train it.
  std::vector<std::string> runOptions(const GraphPlanOptions &options) const;
};

struct GraphPlanResult {
  /// Compiled plans, fastest first; then the rejected ones.
  std::vector<GraphPlan> plans, rejected;
  double seconds = 0;
};

/// Compiles and simulates every candidate plan of the graph in `source`
/// (named `bufferName` in errors). An error when the source does not parse,
/// has no single mesh to lay out, or no plan compiles.
absl::StatusOr<GraphPlanResult> planGraph(const std::string &source,
                                          const std::string &bufferName,
                                          const GraphPlanOptions &options);

} // namespace pc::api

#endif // PC_API_GRAPHPLAN_H

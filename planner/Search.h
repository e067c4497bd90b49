//===- Search.h - The best strategies for a model and cluster ---*- C++ -*-===//
//
// The search enumerates every strategy for a model, a cluster and a global
// batch: mesh shapes (dp x tp x pp, tensor-parallel ranks inside a node),
// micro-batch size and count, pipeline schedule and virtual stages, ZeRO
// stage, recompute, sequence parallelism, precision and optimizer offload.
// Each is checked for memory first (analytic, cheap), then ranked by an
// estimate of its step time from its action times and the schedules'
// bubble formulas; the best candidates are then simulated in full (the
// schedule run over the cost model), and ranked by that.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PLANNER_SEARCH_H
#define PC_PLANNER_SEARCH_H

#include "planner/Simulator.h"

#include <string>
#include <vector>

namespace pc::planner {

struct SearchOptions {
  int64_t globalBatch = 1;
  /// Precisions to try ("bf16", "f32").
  std::vector<std::string> dtypes = {"bf16", "f32"};
  /// Candidates simulated in full after the estimate.
  int64_t simulate = 48;
  /// Largest micro-batch size tried.
  int64_t maxMicroBatchSize = 32;
};

struct SearchResult {
  /// The simulated candidates, best first; those that fit come first.
  std::vector<Simulation> best;
  int64_t considered = 0; // strategies enumerated
  int64_t valid = 0;      // of them, those the model and cluster allow
  int64_t fitting = 0;    // of them, those that fit in memory
  double seconds = 0;     // the search's own time
};

/// Searches; fails when nothing is valid (a batch no mesh divides, say).
llvm::Expected<SearchResult> search(const TransformerSpec &model,
                                    Simulator &sim, const SearchOptions &opts);

} // namespace pc::planner

#endif // PC_PLANNER_SEARCH_H

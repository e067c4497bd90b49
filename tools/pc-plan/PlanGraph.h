//===- PlanGraph.h - pc-plan MODEL.mlir -------------------------*- C++ -*-===//
//
// pc-plan's second mode: a pc graph instead of a transformer's shape. Every
// candidate is compiled and simulated (api/GraphPlan.h); the plans are
// printed fastest first, with the rejected ones and why.
//
//===----------------------------------------------------------------------===//

#ifndef PC_TOOLS_PC_PLAN_PLANGRAPH_H
#define PC_TOOLS_PC_PLAN_PLANGRAPH_H

#include "planner/ClusterSpec.h"

#include <string>

namespace pc::tools {

struct PlanGraphArgs {
  std::string model, clusterPath, optionsPath, svgPath;
  planner::ClusterSpec spec;
  /// Bytes per device; 0: the spec's usable memory.
  double deviceMemory = 0;
  int top = 5;
  int maxStages = 8;
};

/// Plans the graph in `args.model`; the tool's exit status.
int planGraphMain(const PlanGraphArgs &args);

} // namespace pc::tools

#endif // PC_TOOLS_PC_PLAN_PLANGRAPH_H

//===- ProgramSimulator.h - Timing a module's per-device programs -*- C++
//-*-===//
//
// Predicts one step of a module's per-device programs over its cost model,
// the way the actor runtime runs them, all programs together:
//  - each program's ops in the order it fires them (a pipeline program's
//    by its pc.schedule, action by action; others in program order), on
//    two streams: compute, and communication (collectives, boxing steps,
//    sends and receives);
//  - an op starts when its stream is free and its operands are ready;
//  - a receive completes no earlier than its matching send (the k-th send
//    of a layout pair matches the k-th receive) plus the transfer, so a
//    pipeline stage waits for the stage before it.
// Compute takes its roofline time plus the per-op cost (kernel latency); a
// collective the alpha-beta time of a ring over its group
// (planner/CostModel.h). Used by --pc-simulate and pc-run --simulate.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PASSES_PLANNING_PROGRAMSIMULATOR_H
#define PC_PASSES_PLANNING_PROGRAMSIMULATOR_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace pc {

/// One program's simulated step.
struct ProgramTiming {
  std::string name;  // the function
  std::string ranks; // "ranks 0-3"
  double flops = 0;
  double compute = 0; // busy seconds of the compute stream
  double comm = 0;    // busy seconds of the communication stream
  double moved = 0;   // bytes one device moves
  int64_t collectives = 0;
  double end = 0; // when its last op ends
};

struct Simulation {
  std::vector<ProgramTiming> programs;
  /// The step: when the last program ends.
  double step = 0;
  /// Empty, or why the programs cannot be simulated (no programs; a
  /// receive that no send matches).
  std::string error;
};

/// Simulates the per-device programs of `graph` (all of them when empty).
Simulation simulatePrograms(mlir::ModuleOp module, llvm::StringRef graph = {});

/// The per-program lines and the predicted step, as --pc-simulate prints.
std::string formatSimulation(const Simulation &s);

} // namespace pc

#endif // PC_PASSES_PLANNING_PROGRAMSIMULATOR_H

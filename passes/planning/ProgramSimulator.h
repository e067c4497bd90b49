//===- ProgramSimulator.h - Simulating per-device programs -*- C++ -*-===//
//
// Predicts one step of a module's per-device programs over its cost model,
// the way the actor runtime runs them, all programs together, as a
// discrete-event simulation:
//  - each program's ops in the order it fires them (a pipeline program's
//    by its pc.schedule, action by action; others in program order), on
//    two streams: compute, and communication (collectives, boxing steps,
//    sends and receives; on shared cores, sends and receives stay in line
//    with the compute, as the hop latency was measured);
//  - an op starts when its stream is free and its operands are ready;
//  - a receive starts no earlier than its matching send ends (the k-th
//    send of a layout pair matches the k-th receive), so a pipeline stage
//    waits for the stage before it; on shared cores with a p2p_work, a
//    send is that work and its receive then waits out p2p_latency after
//    the send's end, holding no core;
//  - where the devices share the host's cores (pc.cost_model's
//    shared_cores: CPU virtual devices, whose communicator runs on their
//    own threads), the busy ops of every stream share them: with k busy
//    and K cores (concurrent_devices times efficiency.shared_cores, else
//    one per device), each runs at K/k of its rate (processor sharing),
//    and the step's work on them is reported; a pipeline's idle stages lend
//    their cores to the busy ones. A collective's latency (call_latency
//    plus its ring's steps) keeps its wall time, its woken members running
//    first, and holds latency_busy of the cores its members had when it
//    was measured; the compute shares what is left, so a backward's
//    compute fills the cores its gradients' all-reduces leave;
//  - a collective queued on its stream behind one it does not depend on
//    (the gradients' all-reduces, one after another) pays queued_share of
//    its latency: its members come from that one together and awake;
//  - on shared cores with more devices than cores, a collective whose
//    members come to it from their compute (its operands ready only after
//    the collective before it ended, queued behind it or not) first
//    waits, holding no core, straggler_lag times that compute (since
//    their previous collective ended) for its last member, descheduled
//    for another device's threads on the way;
//  - on shared cores with a wake_work, an op with an operand from the
//    device's other stream first does that work, once per producer and
//    stream: the runtime's sleeping threads are woken (the dispatcher,
//    then the stream's worker).
// Compute takes its measured time where an op profile has one (vTrain's
// method, dialect/OpProfile.h; times kernel_in_step, a kernel's slowdown
// in a step), else its roofline time plus the per-op
// cost (kernel latency); a collective the alpha-beta time of a ring over
// its group (planner/CostModel.h). Used by --pc-simulate and pc-run
// --simulate.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PASSES_PLANNING_PROGRAMSIMULATOR_H
#define PC_PASSES_PLANNING_PROGRAMSIMULATOR_H

#include "dialect/OpProfile.h"
#include "dialect/ProgramAttrs.h"

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
  /// Ops timed by a measured profile, and by the roofline.
  int64_t measured = 0, modelled = 0;
  double moved = 0; // bytes one device moves
  int64_t collectives = 0;
  double end = 0; // when its last op ends
};

/// Seconds of the host's cores, by what kept them busy.
struct CoreWork {
  /// All of it; the kernels' measured (scaled) or roofline time; each
  /// firing's runtime overhead (kernel_latency); the collectives'
  /// latencies (the share of the cores their members hold); the
  /// transfers' copies and hops, receives' firings included; the streams'
  /// wake-ups (wake_work per op with an operand from the device's other
  /// stream, once per producer and stream).
  double total = 0, kernels = 0, firings = 0, latency = 0, transfers = 0,
         wakes = 0;
};

struct Simulation {
  std::vector<ProgramTiming> programs;
  /// The step: when the last program ends.
  double step = 0;
  /// The share of the step the devices' compute streams are idle, averaged
  /// over the devices: a pipeline's bubble, op by op.
  double idle = 0;
  /// On shared cores (pc.cost_model's shared_cores): the seconds of the
  /// host's cores the step keeps busy, all devices together, and the cores
  /// there are. The runtime there is CPU-bound: its step is about this
  /// work over the cores it keeps busy.
  CoreWork work;
  double cores = 0;
  /// Empty, or why the programs cannot be simulated (no programs; a
  /// receive that no send matches).
  std::string error;
};

/// Simulates the per-device programs of `graph` (all of them when empty).
/// With `profile`, an op it has takes its measured time. With `rates`,
/// over those instead of the module's cost model.
Simulation simulatePrograms(mlir::ModuleOp module, llvm::StringRef graph = {},
                            const OpProfile *profile = nullptr,
                            const attrs::CostModel *rates = nullptr);

/// The per-program lines and the predicted step, as --pc-simulate prints.
std::string formatSimulation(const Simulation &s);

} // namespace pc

#endif // PC_PASSES_PLANNING_PROGRAMSIMULATOR_H

//===- OpProfiler.h - Timing a plan's kernels in sequence ----*- C++ -*-===//
//
// vTrain's profiling step for pc-simulate, on the CPU: every compute op of
// a module's per-device programs (dialect/OpProfile.h keys them) is bound
// to this machine's CPU kernel, as the runtime binds it, and fed small
// values of its operand types; each program's ops then fire in program
// order on one device's stream, pass after pass, and an op's time is the
// median of its key's firings (the faster of two rounds). Timed in its
// program's sequence, not over and over on its own, a kernel meets the
// caches and code the other kernels leave it, as in a step, where the
// oneDNN kernels took 8-36 us more than back to back (docs/decisions.md).
// Not all of it: the ops of one key share one set of inputs, where a
// step's ops read their producers' fresh outputs, and a pipeline's
// program fires here in program order, not by its schedule's actions.
// Nothing else runs meanwhile: the simulator shares the host's cores among
// the devices busy at once (pc.cost_model's concurrent_devices).
// Communication and host-device copies are not profiled: the cost model's
// link rates time them.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_OPPROFILER_H
#define PC_RUNTIME_EXEC_OPPROFILER_H

#include "dialect/OpProfile.h"

#include "absl/status/statusor.h"
#include "mlir/IR/BuiltinOps.h"

namespace pc::runtime {

struct OpProfilerOptions {
  /// Threads of each kernel (a CPU virtual device's).
  int threads = 1;
  /// Fire each program's ops, after one warm-up pass, in at least
  /// minPasses passes and until its kernels took minSeconds, in at most
  /// maxPasses ...
  int minPasses = 5, maxPasses = 200;
  double minSeconds = 0.05;
  /// ... in each of `rounds` rounds over all programs; an op's time is its
  /// fastest round's median.
  int rounds = 2;
  /// Only the programs of this graph (pc.graph); empty: all.
  std::string graph;
};

/// The profile of `module`'s per-device programs on a CPU device. Ops
/// without a compute kernel (parameters, views the executor handles), and
/// keys whose kernel fails on the sample inputs for any of their ops, are
/// left out: the simulator times those by its roofline. Every op is bound
/// at once, as a rank's session binds its program's, and profiling takes
/// at least minPasses one-device steps of each program per round.
absl::StatusOr<OpProfile> profileOps(mlir::ModuleOp module,
                                     const OpProfilerOptions &options);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_OPPROFILER_H

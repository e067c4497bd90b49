//===- OpProfiler.h - Timing a plan's kernels alone, by op ------*- C++ -*-===//
//
// vTrain's profiling step for pc-simulate: every distinct compute op of a
// module's per-device programs (dialect/OpProfile.h keys them) is bound to
// this machine's CPU kernel, fed zeros of its operand types, and fired on
// one device's stream until a few milliseconds have passed; the median
// firing is its time. Nothing else runs meanwhile, so the profile is each
// kernel's time alone, with `threads` threads: the simulator shares the
// host's cores among the devices busy at once (pc.cost_model's
// concurrent_devices). Communication and host-device copies are not
// profiled: the cost model's link rates time them.
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
  /// Fire each op at least this long (after one warm-up firing) ...
  double minSeconds = 2e-3;
  int minFirings = 5;
  /// ... and at most this many times.
  int maxFirings = 200;
  /// Inputs are copied until the copies hold this many bytes (at most
  /// maxInputCopies), and the firings take the copies in turn.
  int64_t evictBytes = int64_t(32) << 20;
  int64_t maxInputCopies = 16;
  /// Only the programs of this graph (pc.graph); empty: all.
  std::string graph;
};

/// The profile of `module`'s per-device programs on a CPU device. Ops
/// without a compute kernel (parameters, views the executor handles) or
/// whose kernel refuses zeros are left out: the simulator times those by
/// its roofline.
absl::StatusOr<OpProfile> profileOps(mlir::ModuleOp module,
                                     const OpProfilerOptions &options);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_OPPROFILER_H

//===- CpuExecutor.h - Per-device programs on CPU virtual devices -*- C++
//-*-===//
//
// Runs the per-device programs of a graph (after --pc-distribute) on CPU
// virtual devices, one thread per rank, with the CPU kernels and the ring
// collectives: the first real execution path. Ops run in program order on
// each device; the actor runtime (registers, credits, streams) will replace
// this loop and keep the op dispatch.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_CPUEXECUTOR_H
#define PC_RUNTIME_EXEC_CPUEXECUTOR_H

#include "runtime/comm/Communicator.h"
#include "runtime/device/HostTensor.h"

#include "absl/status/statusor.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <vector>

namespace pc::runtime {

struct CpuRun {
  /// The logical results, assembled from the devices' pieces.
  std::vector<HostTensor> results;
  /// What each global rank's communicator did.
  std::map<int64_t, CommStats> comm;
};

/// Runs the per-device programs of `graph` (functions with
/// pc.graph = graph) on their ranks, feeding each its pieces of the logical
/// `inputs`; parameters start from their initializers with `seed`.
absl::StatusOr<CpuRun> runOnCpu(mlir::ModuleOp module, llvm::StringRef graph,
                                const std::vector<HostTensor> &inputs,
                                uint64_t seed);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_CPUEXECUTOR_H

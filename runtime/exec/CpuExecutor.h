//===- CpuExecutor.h - Per-device programs on CPU devices -------*- C++ -*-===//
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
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pc::runtime {

/// One op as one device ran it, for traces.
struct OpEvent {
  std::string name;
  double startUs = 0;
  double durationUs = 0;
};

struct CpuRun {
  /// The logical results, assembled from the devices' pieces.
  std::vector<HostTensor> results;
  /// What each global rank's communicator did.
  std::map<int64_t, CommStats> comm;
  /// Per global rank: the most bytes of tensors alive at once (inputs,
  /// parameters and intermediates; a value dies after its last use).
  std::map<int64_t, int64_t> peakBytes;
  /// Per global rank: every op it ran, with times from the run's start.
  std::map<int64_t, std::vector<OpEvent>> events;
};

/// The state that lives across runs: each rank's pieces of the parameters,
/// initialized on first use from their initializers and `seed`.
class CpuSession {
public:
  CpuSession(mlir::ModuleOp module, uint64_t seed)
      : module(module), seed(seed) {}

  /// Starts the parameters from `values` (logical tensors by parameter
  /// name) instead of their initializers. Every parameter of the module must
  /// be there, with its logical shape and element type.
  absl::Status load(std::map<std::string, HostTensor> values);

  /// Runs the per-device programs of `graph` (functions with
  /// pc.graph = graph) on their ranks, feeding each its pieces of the
  /// logical `inputs`.
  absl::StatusOr<CpuRun> run(llvm::StringRef graph,
                             const std::vector<HostTensor> &inputs);

  /// Rank `rank`'s piece of parameter `name` in the layout `local` of the
  /// per-device program (created on first use).
  absl::StatusOr<std::shared_ptr<const HostTensor>>
  param(int64_t rank, llvm::StringRef name, mlir::Type local);

private:
  mlir::ModuleOp module;
  uint64_t seed;
  std::mutex mu;
  std::map<std::pair<int64_t, std::string>, std::shared_ptr<const HostTensor>>
      params;
  std::map<std::string, HostTensor> loaded;
};

/// One run in a fresh session.
absl::StatusOr<CpuRun> runOnCpu(mlir::ModuleOp module, llvm::StringRef graph,
                                const std::vector<HostTensor> &inputs,
                                uint64_t seed);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_CPUEXECUTOR_H

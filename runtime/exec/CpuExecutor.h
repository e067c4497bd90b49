//===- CpuExecutor.h - Per-device programs on CPU devices -------*- C++ -*-===//
//
// Runs the per-device programs of a graph (after --pc-distribute) on CPU
// virtual devices with the actor runtime (runtime/actor): every op instance
// of every rank is an actor bound to its kernel from the registry
// (runtime/exec/KernelRegistry.h), on the rank's compute or communication
// stream; the ranks talk through the ring collectives over shared memory.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_CPUEXECUTOR_H
#define PC_RUNTIME_EXEC_CPUEXECUTOR_H

#include "runtime/comm/Communicator.h"
#include "runtime/comm/World.h"
#include "runtime/device/HostTensor.h"
#include "runtime/exec/KernelRegistry.h"

#include "absl/status/statusor.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pc::runtime {

/// One firing of one op's actor, as a stream ran it, for traces.
struct OpEvent {
  std::string name;
  /// "compute" or "comm".
  std::string stream;
  int64_t iteration = 0;
  double startUs = 0;
  double durationUs = 0;
};

struct CpuRunOptions {
  /// Iterations of the program, overlapped as far as the registers allow;
  /// the results are the last iteration's.
  int64_t iterations = 1;
  /// Registers per actor: how many iterations a value may be ahead of its
  /// slowest consumer.
  int32_t registers = 2;
  /// Record every firing (CpuRun::events).
  bool trace = false;
  /// The step number of the first iteration, for messages.
  int64_t step = 0;
  /// Under MPI, send the assembled results to every process, not only to
  /// process 0 (a training loop's loss, which every process acts on).
  bool resultsOnEveryProcess = false;
};

/// What a run gives back. Under MPI the results and the per-rank figures
/// are assembled on process 0; other processes get no results (unless
/// CpuRunOptions::resultsOnEveryProcess) and only their own ranks' figures.
struct CpuRun {
  /// The logical results, assembled from the devices' pieces.
  std::vector<HostTensor> results;
  /// What each global rank's communicator did.
  std::map<int64_t, CommStats> comm;
  /// Per global rank: the most bytes of tensors alive at once (inputs,
  /// parameters and intermediates; a value dies after its last use).
  std::map<int64_t, int64_t> peakBytes;
  /// Per global rank: every firing, with times from the run's start.
  std::map<int64_t, std::vector<OpEvent>> events;
  /// Per iteration: when its last firing on any rank finished (µs from the
  /// run's start, which includes binding and parameter initialization).
  std::vector<double> iterationDoneUs;
};

/// The state that lives across runs: each hosted rank's pieces of the
/// parameters, initialized on first use from their initializers and `seed`.
/// The session runs the ranks of `world` that this process hosts (all of
/// them in-process, the default).
class CpuSession {
public:
  CpuSession(mlir::ModuleOp module, uint64_t seed, World *world = nullptr)
      : module(module), seed(seed), kernels(cpuKernels()),
        ownWorld(world ? nullptr : makeInProcessWorld()),
        world(world ? *world : *ownWorld) {}

  /// Starts the parameters from `values` (logical tensors by parameter
  /// name) instead of their initializers, resharding them for the programs'
  /// layouts. Each given tensor must have its parameter's logical shape and
  /// element type; with `requireAll` every parameter must be given (a
  /// checkpoint), else the missing ones keep their initializers (weights
  /// without optimizer state).
  absl::Status load(std::map<std::string, HostTensor> values,
                    bool requireAll = true);

  /// Runs the per-device programs of `graph` (functions with
  /// pc.graph = graph) on their ranks, feeding each its pieces of the
  /// logical `inputs`.
  absl::StatusOr<CpuRun> run(llvm::StringRef graph,
                             const std::vector<HostTensor> &inputs,
                             const CpuRunOptions &options = {});

  /// Rank `rank`'s piece of parameter `name` in the layout `local` of the
  /// per-device program (created on first use).
  absl::StatusOr<std::shared_ptr<const HostTensor>>
  param(int64_t rank, llvm::StringRef name, mlir::Type local);

  /// Every parameter's logical value now: assembled from the ranks' pieces
  /// where the parameter has been used (and perhaps trained), else its
  /// loaded or initial value. Every process calls it; under MPI the values
  /// are assembled on process 0 and other processes get an empty map.
  absl::StatusOr<std::map<std::string, HostTensor>> snapshot();

  /// The pieces this process's ranks hold now, by (rank, parameter name);
  /// parameters no program has read yet have none.
  std::map<std::pair<int64_t, std::string>, std::shared_ptr<const HostTensor>>
  pieces();

  mlir::ModuleOp getModule() const { return module; }
  World &getWorld() { return world; }

private:
  mlir::ModuleOp module;
  uint64_t seed;
  KernelRegistry kernels;
  std::unique_ptr<World> ownWorld;
  World &world;
  std::mutex mu;
  std::map<std::pair<int64_t, std::string>, std::shared_ptr<const HostTensor>>
      params;
  /// What the running step stored (pc.set_param), applied when it succeeds.
  std::map<std::pair<int64_t, std::string>, std::shared_ptr<const HostTensor>>
      pending;
  std::map<std::string, HostTensor> loaded;
};

/// One run in a fresh session.
absl::StatusOr<CpuRun> runOnCpu(mlir::ModuleOp module, llvm::StringRef graph,
                                const std::vector<HostTensor> &inputs,
                                uint64_t seed);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_CPUEXECUTOR_H

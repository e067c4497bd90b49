//===- CpuExecutor.h - Per-device programs on their devices -----*- C++ -*-===//
//
// Runs the per-device programs of a graph (after --pc-distribute) with the
// actor runtime (runtime/actor): every op instance of every rank is an actor
// bound to its kernel from the registry (runtime/exec/KernelRegistry.h), on
// the rank's compute or communication stream. Each hosted rank has one
// Device for the session's life, of the backend its mesh's device kind
// names (runtime/exec/Backend.h; CPU virtual devices by default): parameters,
// inputs, intermediates and results are tensors in its memory, and host
// tensors appear only where values enter and leave (inputs, results,
// snapshots, checkpoints).
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_CPUEXECUTOR_H
#define PC_RUNTIME_EXEC_CPUEXECUTOR_H

#include "runtime/comm/Communicator.h"
#include "runtime/comm/World.h"
#include "runtime/device/HostTensor.h"
#include "runtime/exec/Backend.h"
#include "runtime/exec/Input.h"
#include "runtime/exec/KernelRegistry.h"

#include "absl/status/statusor.h"
#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace pc::runtime {

/// One firing of one op's actor, as a stream ran it, for traces.
struct OpEvent {
  std::string name;
  /// "compute" or "comm".
  std::string stream;
  int64_t iteration = 0;
  double startUs = 0;
  double durationUs = 0;
  /// The CPU time of the stream's thread over the firing
  /// (actor::FiringEvent::cpuUs); 0 where it was not measured (the reading
  /// of a run's inputs).
  double cpuUs = 0;
  /// The pipeline action the op belongs to, as "F1.3" (F of model stage 1,
  /// micro-batch 3); empty when the program has no schedule.
  std::string action;
  /// The op's local types and location (RankProgram::detailOf).
  std::string detail;
};

struct CpuRunOptions {
  /// Iterations of the program, overlapped as far as the registers allow;
  /// the results are the last iteration's. A program that stores parameters
  /// (a training step) runs them as consecutive steps: each iteration reads
  /// what the one before stored, and step i+1's forward starts on each
  /// parameter as soon as step i has updated it.
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
  /// Called with the run's results (on every process) before what the run
  /// stored (pc.set_param) becomes the parameters: an error fails the run
  /// and nothing is stored. A training loop rejects a step whose loss or
  /// gradient norm is not finite this way. With everyIteration it is called
  /// once per iteration, in order, with that iteration's results: one bad
  /// step rejects the whole run, whose steps are applied all or none.
  std::function<absl::Status(const std::vector<HostTensor> &results)> accept;
  /// Per global rank: the order in which its communication ops fire, as
  /// (iteration, index of the op among the program's communication ops in
  /// program order). Every (iteration, op) once. A rank not listed fires
  /// iteration by iteration in program order. When any order is given, the
  /// ranks' orders are checked together before anything runs (every
  /// process takes part): each rank's alone against its own dependencies,
  /// then all of them against each other (OrderCheck.h); a mismatch or a
  /// cycle of waits is an error, never a hang.
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> order;
  /// Inputs that change from iteration to iteration, by input index: one
  /// per iteration (a training run's learning rates and batches). Each has
  /// the shape and type of the input it replaces, whose entry in the run's
  /// inputs is still given (and checked) but not read.
  std::map<int64_t, std::vector<Input>> varying;
  /// Keep every iteration's results (CpuRun::iterationResults): a training
  /// run's loss per step. Otherwise only the last iteration's are kept.
  bool everyIteration = false;
};

/// What a run gives back. Under MPI the results and the per-rank figures
/// are assembled on process 0; other processes get no results (unless
/// CpuRunOptions::resultsOnEveryProcess) and only their own ranks' figures.
struct CpuRun {
  /// The logical results, assembled from the devices' pieces.
  std::vector<HostTensor> results;
  /// With CpuRunOptions::everyIteration: every iteration's results, the
  /// last of which are `results`.
  std::vector<std::vector<HostTensor>> iterationResults;
  /// What each global rank's communicator did.
  std::map<int64_t, CommStats> comm;
  /// Per global rank: the device allocator's peak during the run, in bytes
  /// (parameters, inputs, intermediates, results; a value dies after its
  /// last use).
  std::map<int64_t, int64_t> peakBytes;
  /// Per global rank: the executor's own count of the same peak, from the
  /// tensors it made and dropped. It equals peakBytes unless device memory
  /// was taken behind the executor's back or outlived its tensor.
  std::map<int64_t, int64_t> tensorPeakBytes;
  /// Per global rank: every firing, with times from the run's start.
  std::map<int64_t, std::vector<OpEvent>> events;
  /// Per iteration: when its last firing on any rank finished (µs from the
  /// run's start, which includes the first run's binding and parameter
  /// initialization).
  std::vector<double> iterationDoneUs;
};

/// The state that lives across runs: each hosted rank's pieces of the
/// parameters, initialized on first use from their initializers and `seed`.
/// The session runs the ranks of `world` that this process hosts (all of
/// them in-process, the default).
///
/// A graph's programs are bound once, on its first run: kernels, constants,
/// library plans, communicators and streams are kept for the session's
/// life, so that a later run costs its firings only. A failed run drops
/// them; the next run binds afresh.
class CpuSession {
public:
  CpuSession(mlir::ModuleOp module, uint64_t seed, World *world = nullptr);
  ~CpuSession();

  /// What a load holds.
  enum class LoadKind {
    /// Every parameter, optimizer state included. Tensors that match no
    /// parameter (a training checkpoint read by a forward program) are
    /// skipped and named in the result.
    Checkpoint,
    /// Every model weight; optimizer state given or not (then it keeps its
    /// initializer). A tensor that matches no parameter is an error: a
    /// file of misnamed weights never trains from random values.
    Weights,
  };
  /// Starts the parameters from `values` (logical tensors by parameter
  /// name) instead of their initializers, resharding them for the programs'
  /// layouts. Each given tensor must have its parameter's logical shape and
  /// element type. Returns the names of the tensors it skipped.
  absl::StatusOr<std::vector<std::string>>
  load(std::map<std::string, Input> values,
       LoadKind kind = LoadKind::Checkpoint);
  /// The same, from tensors in memory.
  absl::StatusOr<std::vector<std::string>>
  load(std::map<std::string, HostTensor> values,
       LoadKind kind = LoadKind::Checkpoint);

  /// Runs the per-device programs of `graph` (functions with
  /// pc.graph = graph) on their ranks, feeding each its pieces of the
  /// logical `inputs` (this process reads only its ranks' pieces).
  absl::StatusOr<CpuRun> run(llvm::StringRef graph,
                             std::span<const Input> inputs,
                             const CpuRunOptions &options = {});
  /// The same, from host tensors.
  absl::StatusOr<CpuRun> run(llvm::StringRef graph,
                             const std::vector<HostTensor> &inputs,
                             const CpuRunOptions &options = {});

  /// Every parameter's logical value now: assembled from the ranks' pieces
  /// where the parameter has been used (and perhaps trained), else its
  /// loaded or initial value. Every process calls it; under MPI the values
  /// are assembled on process 0 and other processes get an empty map.
  absl::StatusOr<std::map<std::string, HostTensor>> snapshot();

  /// The pieces this process's ranks hold now, by (rank, parameter name),
  /// copied to the host; parameters no program has read yet have none.
  absl::StatusOr<std::map<std::pair<int64_t, std::string>, HostTensor>>
  pieces();

  mlir::ModuleOp getModule() const { return module; }
  World &getWorld() { return world; }

  /// Threads of each device's kernels (default 1). Set before the first
  /// run: a device keeps the setting it was made with.
  void setThreadsPerDevice(int threads) {
    deviceOptions.threads = std::max(1, threads);
  }
  int threadsPerDevice() const { return deviceOptions.threads; }
  /// Bytes each device may hold (0: no limit); as setThreadsPerDevice, for
  /// devices made after the call.
  void setDeviceCapacity(int64_t bytes) {
    deviceOptions.capacity = std::max<int64_t>(0, bytes);
  }
  /// In-place updates: each parameter's stored piece replaces the one the
  /// run began with as soon as every read of the old one is done, instead
  /// of when the run succeeds (a step is then no transaction: the old model
  /// state is not held to the step's end). A run that fails after it
  /// started storing leaves parameters half-updated: the session then
  /// refuses runs and snapshots (FailedPrecondition, with the run's error)
  /// until load() is called. Default: off.
  void setInPlaceUpdates(bool on) { inPlaceUpdates = on; }

  /// Whether CPU devices made after the call run the portable kernels
  /// (DeviceOptions::portableKernels).
  void setPortableKernels(bool on) { deviceOptions.portableKernels = on; }
  /// Emulated compute (EmulatedCompute.h): from the next run on, every
  /// compute op that `profile` times runs as a wait of that time, with
  /// zeros for results; null: kernels again. Communication, parameters and
  /// schedules run for real; the values computed are meaningless. CPU
  /// devices only.
  /// InvalidArgument, naming the op, when a time is past
  /// kMaxEmulatedWaitSeconds.
  absl::Status setEmulatedCompute(std::shared_ptr<const OpProfile> profile);
  /// Runs every rank on the backend of device kind `kind` ("cuda"),
  /// whatever its meshes declare (pc-run --devices cuda:N); empty: the
  /// meshes decide.
  void setDeviceKind(std::string kind) { deviceKind = std::move(kind); }

  /// The rows of input #`index` of `graph` (ranges of dim 0, [begin, end),
  /// sorted and merged) that this process's ranks read: what a loader needs
  /// to fetch ahead. Under mpirun a data-parallel batch's rows divide among
  /// the processes.
  absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>>
  rowsRead(llvm::StringRef graph, int64_t index);

private:
  /// Rank `rank`'s piece of parameter `name` in the layout `local` of the
  /// per-device program, on its device (created on first use). Private:
  /// a tensor must not outlive its rank's device, which the session owns.
  absl::StatusOr<std::shared_ptr<const Tensor>>
  param(int64_t rank, llvm::StringRef name, mlir::Type local);
  /// What iteration `iteration` of the running step reads: the piece
  /// iteration - 1 stored, else param().
  absl::StatusOr<std::shared_ptr<const Tensor>>
  read(int64_t rank, llvm::StringRef name, mlir::Type local, int64_t iteration);
  /// What iteration `iteration` stored.
  void store(int64_t rank, llvm::StringRef name, int64_t iteration,
             std::shared_ptr<const Tensor> piece);
  /// Iteration `iteration` read `name` for the last time
  /// (ParamStore::readsDone): the session lets go of the piece it read
  /// (in a transaction, not the piece the run began with).
  void readsDone(int64_t rank, llvm::StringRef name, int64_t iteration);
  /// ... and stored it (ParamStore::settled): in place, what it stored
  /// becomes the parameter.
  void settle(int64_t rank, llvm::StringRef name, int64_t iteration);
  /// OK unless a failed run left parameters half-updated (in-place).
  absl::Status usable() const;
  static bool
  storesParams(const std::map<int64_t, mlir::func::FuncOp> &programOf);

  /// One graph's programs on this process's ranks, bound (CpuExecutor.cpp).
  struct BoundGraph;
  bool isBound(llvm::StringRef graph, const CpuRunOptions &options) const;
  absl::StatusOr<BoundGraph *>
  bind(llvm::StringRef graph,
       const std::map<int64_t, mlir::func::FuncOp> &programOf,
       const CpuRunOptions &options);

  /// A hosted rank's device, made on first use by the backend of its mesh's
  /// device kind, with the allocator of its tensors and a stream for copies
  /// between it and the host.
  struct RankDevice {
    const Backend *backend = nullptr;
    std::unique_ptr<Device> device;
    std::unique_ptr<TensorAllocator> tensors;
    /// The host memory pool (CPU offload): parameters marked pc.host and
    /// what host ops make; not in the device's capacity or peak.
    std::unique_ptr<Device> host;
    std::unique_ptr<TensorAllocator> hostTensors;
    std::unique_ptr<Stream> transfer;
    /// Copies between the host and the device, through `transfer`.
    absl::StatusOr<std::shared_ptr<const Tensor>> upload(const HostTensor &t);
    /// A copy in the host pool.
    absl::StatusOr<std::shared_ptr<const Tensor>>
    uploadToHost(const HostTensor &t);
    absl::StatusOr<HostTensor> download(const Tensor &t);
    absl::Status synchronizeTransfer();
  };
  absl::StatusOr<RankDevice *> deviceOf(int64_t rank);
  /// The backend of the meshes that hold `rank` (or of setDeviceKind).
  absl::StatusOr<const Backend *> backendOf(int64_t rank);
  /// Registers the kernels of the backends of `ranks` not registered yet;
  /// before any rank binds, as the registry is read without a lock.
  absl::Status registerBackendsOf(std::span<const int64_t> ranks);

  using Pieces =
      std::map<std::pair<int64_t, std::string>, std::shared_ptr<const Tensor>>;

  mlir::ModuleOp module;
  uint64_t seed;
  std::vector<Backend> backends;
  KernelRegistry kernels;
  /// The kinds whose kernels are in `kernels`.
  std::set<std::string> registeredKinds;
  DeviceOptions deviceOptions;
  std::string deviceKind;
  std::unique_ptr<World> ownWorld;
  World &world;
  std::mutex mu;
  // Declared before the tensors in them, so that they die after them.
  std::map<int64_t, RankDevice> devices;
  Pieces params;
  /// What the running step stored (pc.set_param), by iteration; the last
  /// iteration's is applied when the run succeeds.
  std::map<std::pair<int64_t, std::string>,
           std::map<int64_t, std::shared_ptr<const Tensor>>>
      pending;
  bool inPlaceUpdates = false;
  std::shared_ptr<const OpProfile> emulated;
  /// The failure that left parameters half-updated (in-place updates).
  absl::Status lost;
  /// Each graph's bound programs (they hold tensors: declared after the
  /// devices, so that they die first).
  std::map<std::string, std::unique_ptr<BoundGraph>> bound;
  /// Where loaded parameters are read from (a file's mapping, or memory).
  std::map<std::string, Input> loaded;
  /// (graph, iterations) whose default orders passed the cross-rank check:
  /// they follow from the module alone, so each is checked once. Every
  /// process makes the same runs, so all skip the check together.
  std::set<std::pair<std::string, int64_t>> checkedDefaultOrders;
};

/// One run in a fresh session.
absl::StatusOr<CpuRun> runOnCpu(mlir::ModuleOp module, llvm::StringRef graph,
                                const std::vector<HostTensor> &inputs,
                                uint64_t seed);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_CPUEXECUTOR_H

//===- RankProgram.h - A rank's program as an actor graph -------*- C++ -*-===//
//-*-===//
//
// A rank's program (a function of --pc-distribute's output) bound once to
// its kernels and run as often as its session asks: an actor per argument,
// per op and one for the results. Registers hold shared device tensors,
// addressed by (actor, iteration % registers).
//
// Iterations of one run are steps of a loop: a training step's parameter
// reads (pc.get_param) carry a loop-carried edge from the step before's
// update of the same parameter (pc.set_param), so step i+1 starts as soon
// as what it reads exists, not when step i has finished. What an update
// stores goes through the session (ParamStore), by iteration.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_RANKPROGRAM_H
#define PC_RUNTIME_EXEC_RANKPROGRAM_H

#include "runtime/actor/ActorRuntime.h"
#include "runtime/device/HostTensor.h"
#include "runtime/exec/EmulatedCompute.h"
#include "runtime/exec/KernelRegistry.h"
#include "runtime/exec/OrderCheck.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace pc::runtime {

/// What a rank's program reads and writes of its session's parameters.
struct ParamStore {
  /// The piece of parameter `name` (in the program's local type) that
  /// iteration `iteration` of the run reads: what iteration - 1 stored, else
  /// the session's current piece (initialized on first use).
  std::function<absl::StatusOr<std::shared_ptr<const Tensor>>(
      llvm::StringRef name, mlir::Type local, int64_t iteration)>
      read;
  /// What iteration `iteration` stores for parameter `name` (pc.set_param);
  /// the session applies the last iteration's once the run succeeded.
  std::function<void(llvm::StringRef name, int64_t iteration,
                     std::shared_ptr<const Tensor> piece)>
      store;
  /// For a parameter the program stores: called once every read of `name`
  /// in iteration `iteration` is done (nothing reads the piece that
  /// iteration read any more, beyond the kernels that hold it), and, as
  /// `settled`, once the iteration has also stored it (the store may come
  /// before the last read or after it; the next iteration reads what it
  /// stored).
  std::function<void(llvm::StringRef name, int64_t iteration)> readsDone;
  std::function<void(llvm::StringRef name, int64_t iteration)> settled;
};

/// One argument's values for a run: the same tensor for every iteration, or
/// one host tensor per iteration, copied to the device as its iteration
/// needs it (on the program's input stream, beside the kernels).
struct ArgFeed {
  std::shared_ptr<const Tensor> fixed;
  std::vector<HostTensor> perIteration;
};

/// What changes from run to run.
struct ProgramRun {
  int64_t iterations = 1;
  /// The step number of the first iteration, for messages.
  int64_t step = 0;
  bool trace = false;
  /// Keep every iteration's results, not only the last's.
  bool everyIteration = false;
  std::chrono::steady_clock::time_point origin;
  std::function<void(const absl::Status &)> onError;
};

class RankProgram {
public:
  /// The streams a program runs on, by index.
  enum StreamIndex : uint32_t {
    kCompute = 0,
    kComm = 1,
    kInput = 2,
    kCopy = 3 // between host and device memory (CPU offload)
  };

  RankProgram(const KernelRegistry &kernels, BindContext &context,
              ParamStore params, int32_t registers)
      : kernels(kernels), context(context), params(std::move(params)),
        registers(registers) {}

  /// Binds `f`'s ops to their kernels (constants made, parameters
  /// initialized) and builds the actor graph.
  absl::Status build(mlir::func::FuncOp f);

  /// Sets the order of the communication ops' firings: (iteration, index
  /// among the communication ops); InvalidArgument when it names an op or
  /// iteration that does not exist, or would deadlock on this rank. Empty:
  /// the default order (or the pipeline schedule's).
  absl::Status setOrder(std::span<const std::pair<int64_t, int64_t>> order,
                        int64_t iterations);
  /// The communication this rank does in a run of `iterations`, in firing
  /// order.
  std::vector<CommEvent> exchanges(int64_t iterations) const;

  /// Runs `run.iterations` iterations on `streams` (compute, communication,
  /// input) with the arguments `args`, one per function argument.
  absl::StatusOr<actor::RunStats>
  run(std::span<Stream *const> streams, std::vector<ArgFeed> args,
      const ProgramRun &run,
      std::function<
          absl::StatusOr<std::shared_ptr<const Tensor>>(const HostTensor &)>
          upload);

  /// The results the last run kept (the last iteration's, or every
  /// iteration's), still on the device.
  std::vector<std::vector<std::shared_ptr<const Tensor>>> takeResults() {
    return std::move(results);
  }
  const std::string &nameOf(uint32_t actor) const {
    return graph.actors()[actor].name;
  }
  /// "F1.3" for an actor of action F(1, mb 3); empty when none.
  std::string actionOf(uint32_t actor) const;
  /// The op's local types and where the user wrote it, for traces:
  /// "16x128x256xf32, 256x768xf32 -> 16x128x768xf32 at m.mlir:12:8"; empty
  /// for actors that are not ops.
  const std::string &detailOf(uint32_t actor) const { return details[actor]; }
  int32_t registerCount() const { return registers; }

private:
  using Source = std::pair<uint32_t, unsigned>; // (actor, result)
  using Fire = std::function<absl::Status(KernelIO &, int64_t iteration)>;
  struct Actor {
    std::vector<Source> inputs;
    unsigned numResults = 0;
    uint32_t stream = 0;
    /// Runs on the host: its results are in host memory (pc.host).
    bool host = false;
    std::vector<std::vector<std::shared_ptr<const Tensor>>> registers;
    /// Per result, how many inputs of other actors read it; per (register,
    /// result), how many of those reads of the iteration it holds have not
    /// finished. The last reader drops the tensor when its kernel ends,
    /// rather than when the dispatcher hears of it (onFree): on a stream
    /// that runs ahead of the dispatcher, memory would otherwise lag.
    std::vector<uint32_t> readers;
    std::unique_ptr<std::atomic<uint32_t>[]> unread;
  };

  uint32_t addActor(std::string name, uint32_t stream,
                    std::vector<Source> inputs, unsigned numResults, Fire fire,
                    bool ordered = false);
  absl::Status addOp(mlir::Operation &op, bool hasSchedule);
  /// Under emulated compute, replaces `bound`'s kernel by a wait of `op`'s
  /// profiled time (a compute op's, when the profile has it).
  absl::Status emulate(mlir::Operation &op, KernelRegistry::Bound &bound);
  /// The loop-carried edges between each parameter's reads and its update.
  void linkParameters();
  /// A pipelined program's order: iteration by iteration, its schedule's
  /// actions in turn, each action's ops in program order.
  absl::Status orderBySchedule(int64_t iterations);

  const KernelRegistry &kernels;
  BindContext &context;
  /// Emulated ops' results (EmulatedCompute.h).
  ZeroTensors emulatedZeros;
  ParamStore params;
  int32_t registers;
  actor::ActorGraph graph;
  std::vector<Actor> actors;
  /// Per run.
  std::vector<KernelContext> contexts;
  std::vector<ArgFeed> feeds;
  const ProgramRun *current = nullptr;
  std::function<absl::StatusOr<std::shared_ptr<const Tensor>>(
      const HostTensor &)>
      upload;
  /// The communication ops' actors, in program order, with what each
  /// exchanges; the order they fire in (empty: the default).
  std::vector<uint32_t> commActors;
  std::vector<CommEvent> commExchanges;
  std::vector<actor::OrderedFiring> order;
  /// The pipeline schedule's actions, in order (empty: none).
  std::vector<mlir::Attribute> schedule;
  /// Per actor of a pipelined program, its action (null: none).
  std::vector<mlir::Attribute> actions;
  /// Per actor, detailOf's text.
  std::vector<std::string> details;
  llvm::DenseMap<mlir::Value, Source> sources;
  /// Per parameter name: the actors that read it and the one that stores it.
  struct ParamActors {
    std::vector<uint32_t> reads;
    std::optional<uint32_t> store;
  };
  std::map<std::string, ParamActors> paramActors;
  /// Counts a read (or the store) of a stored parameter in `iteration`,
  /// and tells the session when the last read is done and when both the
  /// reads and the store are (ParamStore::readsDone, settled).
  void noteParamDone(const std::string &name, const ParamActors &p,
                     int64_t iteration, bool isStore);
  /// Per (parameter, iteration) of the running run: its reads done so far,
  /// and whether it was stored.
  struct Settling {
    size_t reads = 0;
    bool stored = false;
  };
  std::mutex settlingMu;
  std::map<std::pair<std::string, int64_t>, Settling> settling;
  std::vector<std::vector<std::shared_ptr<const Tensor>>> results;
};

/// `s` with "rank R: 'op' at LOC: " in front, payloads kept: the per-device
/// program keeps the logical op's location, so this is where the user wrote
/// it.
absl::Status named(const absl::Status &s, int64_t rank, mlir::Operation *op);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_RANKPROGRAM_H

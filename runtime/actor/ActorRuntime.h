//===- ActorRuntime.h - Actors, registers and credits -----------*- C++ -*-===//
//
// The execution core, after OneFlow's actor model. Every op instance of a
// device's program is an actor. An actor's outputs live in its registers: a
// bounded ring of `registers` slots, one per iteration in flight (iteration
// i uses slot i % registers). An actor fires iteration i when
//  - each producer's register holds iteration i (the producer sent `Req`),
//  - it has a free register (every consumer sent `Ack` for iteration
//    i - registers), and
//  - for an ordered actor (collectives, sends, receives), it is its turn in
//    the rank's order of ordered firings (RunOptions::order): a list of
//    (iteration, actor) that the dispatcher walks with a cursor. Ranks that
//    talk to each other must list their communication in matching orders
//    (the caller sees to that), or they deadlock. The default list is iteration
//    by iteration, the ordered actors in graph order (defaultOrder); a pipeline
//    schedule (1F1B) lists micro-batch 1's forward sends before micro-batch 0's
//    backward. verifyOrder rejects a list that would deadlock on this rank
//    before anything fires.
// A ready firing waits in its stream's ready set, ordered by (iteration,
// actor), until the stream has room (RunOptions::streamDepth); starting it
// enqueues the actor's work on the stream and a callback that posts `Done`
// to the device's message bus; the dispatcher (the thread that called
// run()) then sends `Req` to the consumers and `Ack` to the producers.
// Consumers on the producer's own stream get their `Req` (and loop-carried
// successors their credit) when the firing starts instead: the stream runs
// its tasks in order, so theirs runs after it, and a chain of kernels on one
// stream is enqueued ahead rather than one dispatcher round trip per kernel
// (as CUDA streams are used). The
// credits are the only synchronization: no barrier between iterations, so
// iteration i+1 overlaps iteration i as far as the register counts allow.
// Loop-carried edges (ActorSpec::carried) add what one iteration needs of
// the one before: a training step's reads of a parameter wait only for the
// previous step's update of that parameter, not for the whole step.
//
// The core knows nothing of tensors, MLIR or the backend: it sees actors,
// streams (runtime/device/Device.h) and callbacks. The data lives with the
// caller, which addresses it by (actor, iteration % registers) and drops it
// in `onFree`.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_ACTOR_ACTORRUNTIME_H
#define PC_RUNTIME_ACTOR_ACTORRUNTIME_H

#include "runtime/device/Device.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace pc::runtime::actor {

struct ActorSpec {
  /// For errors and traces.
  std::string name;
  /// The stream it runs on: an index into the streams given to run().
  uint32_t stream = 0;
  /// The actors whose registers it reads, all earlier in the graph (the
  /// graph is built in a topological order, which makes it acyclic).
  /// Repeats are allowed and count once.
  std::vector<uint32_t> inputs;
  /// How many iterations its output may be ahead of its slowest consumer.
  int32_t registers = 1;
  /// Fires only when it is its turn in RunOptions::order.
  bool ordered = false;
  /// The work of one firing, run on the stream.
  std::function<absl::Status(int64_t iteration)> fire;
  /// Loop-carried dependencies: iteration i waits until iteration i - 1 of
  /// each of these actors is done (iteration 0 waits for nothing). They may
  /// be anywhere in the graph, itself included. No register travels on
  /// them: the caller passes what they carry (a training step's updated
  /// parameters, read by the next step).
  std::vector<uint32_t> carried;
};

/// One firing, as its stream ran it (times from RunOptions::origin).
struct FiringEvent {
  uint32_t actor;
  uint32_t stream;
  int64_t iteration;
  double startUs;
  double durationUs;
  /// The CPU time of the stream's thread over the firing: below the
  /// duration where the thread slept (a collective waiting for its
  /// members) or shared its core with other threads.
  double cpuUs;
};

/// One entry of a rank's order of ordered firings: `actor`, an ordered
/// actor, fires iteration `iteration`.
struct OrderedFiring {
  int64_t iteration;
  uint32_t actor;
  bool operator==(const OrderedFiring &) const = default;
};

struct RunOptions {
  int64_t iterations = 1;
  /// Firings enqueued on a stream and not done, at most. Ready firings
  /// beyond it wait in the dispatcher, which starts the earliest iteration
  /// first; a deeper queue hides more dispatch latency (accelerators want
  /// more), a shallower one keeps the order tighter.
  int32_t streamDepth = 32;
  /// The order in which this rank's ordered actors fire, for the whole run:
  /// every (iteration, ordered actor) once, each actor's iterations in
  /// increasing order. Empty means defaultOrder(graph, iterations). Ranks
  /// that share a collective or a send/recv pair must list it at matching
  /// points; run() can only check that this rank's list cannot deadlock on
  /// its own (verifyOrder), the caller checks the ranks against each other.
  std::vector<OrderedFiring> order;
  /// Records a FiringEvent per firing.
  bool trace = false;
  std::chrono::steady_clock::time_point origin =
      std::chrono::steady_clock::now();
  /// Called once, on the dispatcher, when the first firing fails, before
  /// the runtime waits for the firings still in flight: a caller whose
  /// streams may block on other devices (collectives) releases them here.
  std::function<void(const absl::Status &)> onError;
  /// Called on the dispatcher when every consumer is done with iteration
  /// `iteration` of `actor`'s register (at once for actors without
  /// consumers): the caller may drop that data.
  std::function<void(uint32_t actor, int64_t iteration)> onFree;
};

struct RunStats {
  int64_t firings = 0;
  int64_t messages = 0;
  /// Per iteration: when its last firing finished (µs from the origin).
  std::vector<double> iterationDoneUs;
  /// Per stream, in order, when RunOptions::trace.
  std::vector<std::vector<FiringEvent>> events;
};

class ActorGraph {
public:
  /// Appends an actor; returns its id.
  uint32_t add(ActorSpec spec);
  /// Adds a loop-carried edge: iteration i of `to` waits for iteration
  /// i - 1 of `from` (ActorSpec::carried).
  void carry(uint32_t from, uint32_t to) {
    specs.at(to).carried.push_back(from);
  }
  const std::vector<ActorSpec> &actors() const { return specs; }
  /// InvalidArgument naming the actor when an input is not earlier, a
  /// register count is below 1, a stream is out of range or there is no
  /// work.
  absl::Status verify(size_t numStreams) const;

private:
  std::vector<ActorSpec> specs;
};

/// The order run() follows when RunOptions::order is empty: iteration by
/// iteration, the ordered actors in graph order. It never deadlocks on its
/// own, since the graph order is topological.
std::vector<OrderedFiring> defaultOrder(const ActorGraph &graph,
                                        int64_t iterations);

/// Checks one rank's `order` for a run of `iterations` iterations of
/// `graph` (whose inputs it checks first, as verify() does): every (iteration,
/// ordered actor) with iteration in [0, iterations) is listed exactly once,
/// nothing else is, and the rank can follow the list to the end. That last part
/// means each actor's iterations come in increasing order, an ordered
/// actor comes after the ordered actors it depends on (through any actors)
/// in the same iteration, and after the ordered firings that must free a
/// register for it (a consumer of iteration i - registers), directly or
/// through actors in between. InvalidArgument naming the entry, the actor
/// (name and id), the iteration and the rule ("would deadlock: ..."). A
/// mismatch between ranks (two ranks that pair their sends and receives in
/// crossed orders) cannot be seen from one rank's graph: the caller checks
/// that across the ranks' lists.
absl::Status verifyOrder(const ActorGraph &graph, int64_t iterations,
                         std::span<const OrderedFiring> order);

/// Runs `graph` for `options.iterations` iterations on `streams`; returns
/// after every firing finished, or, on failure, with the first error once
/// nothing is in flight any more. An explicit RunOptions::order is checked
/// with verifyOrder before anything fires.
absl::StatusOr<RunStats> run(const ActorGraph &graph,
                             std::span<Stream *const> streams,
                             const RunOptions &options);

} // namespace pc::runtime::actor

#endif // PC_RUNTIME_ACTOR_ACTORRUNTIME_H

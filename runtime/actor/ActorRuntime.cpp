//===- ActorRuntime.cpp - Actors, registers and credits -------------------===//

#include "runtime/actor/ActorRuntime.h"

#include "runtime/actor/MessageBus.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <set>

namespace pc::runtime::actor {

uint32_t ActorGraph::add(ActorSpec spec) {
  specs.push_back(std::move(spec));
  return static_cast<uint32_t>(specs.size() - 1);
}

absl::Status ActorGraph::verify(size_t numStreams) const {
  for (size_t id = 0; id < specs.size(); ++id) {
    const ActorSpec *a = &specs[id];
    auto bad = [&](auto... what) {
      return absl::InvalidArgumentError(
          absl::StrCat("actor #", id, " '", a->name, "': ", what...));
    };
    for (uint32_t in : a->inputs)
      if (in >= id)
        return bad("reads actor #", in,
                   ", which is not earlier in the graph (the graph must be "
                   "built in a topological order)");
    if (a->registers < 1)
      return bad("has ", a->registers, " registers; it needs at least 1");
    if (a->stream >= numStreams)
      return bad("runs on stream ", a->stream, ", but there are ", numStreams);
    if (!a->fire)
      return bad("has no work");
  }
  return absl::OkStatus();
}

namespace {

/// What the dispatcher knows of one actor. Only the dispatcher touches it.
struct ActorState {
  std::vector<uint32_t> producers; // distinct, in input order
  std::vector<uint32_t> consumers; // distinct
  std::vector<int64_t> readable;   // per producer: iterations it sent Req for
  std::vector<int32_t> acks;       // per register slot
  int64_t fired = 0, freed = 0;
  int32_t orderPosition = -1;
  bool queued = false; // its next firing waits in its stream's ready set
};

/// The first failure of any firing, with the actor that had it; the Done
/// message only says that it failed.
struct FirstError {
  std::mutex mu;
  absl::Status status;
  void note(const absl::Status &s) {
    std::lock_guard<std::mutex> lock(mu);
    if (status.ok())
      status = s;
  }
  absl::Status get() {
    std::lock_guard<std::mutex> lock(mu);
    return status;
  }
};

class Dispatcher {
public:
  Dispatcher(const ActorGraph &graph, std::span<Stream *const> streams,
             const RunOptions &options)
      : specs(graph.actors()), streams(streams), options(options),
        states(specs.size()), error(std::make_shared<FirstError>()),
        bus(std::make_shared<MessageBus>()) {
    for (uint32_t id = 0; id < specs.size(); ++id) {
      ActorState &s = states[id];
      for (uint32_t in : specs[id].inputs)
        if (std::find(s.producers.begin(), s.producers.end(), in) ==
            s.producers.end()) {
          s.producers.push_back(in);
          states[in].consumers.push_back(id);
        }
      s.readable.assign(s.producers.size(), 0);
      s.acks.assign(specs[id].registers, 0);
      if (specs[id].ordered) {
        s.orderPosition = static_cast<int32_t>(ordered.size());
        ordered.push_back(id);
      }
    }
    ready.resize(streams.size());
    onStream.assign(streams.size(), 0);
    stats.iterationDoneUs.assign(options.iterations, 0);
    doneInIteration.assign(options.iterations, 0);
    if (options.trace)
      stats.events.resize(streams.size());
  }

  absl::StatusOr<RunStats> run() {
    int64_t total = static_cast<int64_t>(specs.size()) * options.iterations;
    if (total == 0)
      return std::move(stats);
    for (uint32_t id = 0; id < specs.size(); ++id)
      tryFire(id);
    pumpAll();
    std::vector<Message> batch;
    while (true) {
      while (!local.empty()) {
        Message m = local.front();
        local.pop_front();
        handle(m);
        pumpAll();
      }
      if (stopping ? inFlight == 0 : completedFirings == total)
        break;
      bus->drain(batch);
      for (const Message &m : batch) {
        handle(m);
        pumpAll();
      }
    }
    if (stopping)
      return error->get();
    return std::move(stats);
  }

private:
  double nowUs() const {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now() - options.origin)
        .count();
  }

  void handle(const Message &m) {
    ++stats.messages;
    ActorState &s = states[m.dst];
    switch (m.kind) {
    case MessageKind::Done:
      --inFlight;
      --onStream[specs[m.dst].stream];
      toPump.push_back(specs[m.dst].stream);
      if (m.failed) {
        if (!stopping) {
          stopping = true;
          if (options.onError)
            options.onError(error->get());
        }
        return;
      }
      ++completedFirings;
      if (++doneInIteration[m.iteration] == static_cast<int64_t>(specs.size()))
        stats.iterationDoneUs[m.iteration] = nowUs();
      for (uint32_t c : s.consumers)
        local.push_back({m.iteration, c, m.dst, MessageKind::Req, false});
      for (uint32_t p : s.producers)
        local.push_back({m.iteration, p, m.dst, MessageKind::Ack, false});
      if (s.consumers.empty())
        release(m.dst);
      tryFire(m.dst);
      return;
    case MessageKind::Req: {
      auto it = std::find(s.producers.begin(), s.producers.end(), m.src);
      ++s.readable[it - s.producers.begin()];
      tryFire(m.dst);
      return;
    }
    case MessageKind::Ack:
      if (++s.acks[m.iteration % specs[m.dst].registers] ==
          static_cast<int32_t>(s.consumers.size())) {
        // Slots free in order: a later iteration's acks wait for the
        // earlier one's, which a slow consumer may still hold.
        while (s.freed < s.fired &&
               s.acks[s.freed % specs[m.dst].registers] ==
                   static_cast<int32_t>(s.consumers.size()))
          release(m.dst);
        tryFire(m.dst);
      }
      return;
    }
  }

  void release(uint32_t id) {
    ActorState &s = states[id];
    s.acks[s.freed % specs[id].registers] = 0;
    if (options.onFree)
      options.onFree(id, s.freed);
    ++s.freed;
  }

  bool canFire(uint32_t id) const {
    const ActorState &s = states[id];
    if (stopping || s.queued || s.fired == options.iterations ||
        s.fired - s.freed >= specs[id].registers)
      return false;
    for (int64_t r : s.readable)
      if (r <= s.fired)
        return false;
    return s.orderPosition < 0 ||
           (cursorIteration == s.fired && cursorPosition == s.orderPosition);
  }

  /// Queues the actor's next firing on its stream's ready set when it can
  /// fire; pumpAll() starts it when the stream has room. Nothing a queued
  /// firing waits for can be taken away before it starts, so readiness
  /// holds.
  void tryFire(uint32_t id) {
    if (!canFire(id))
      return;
    states[id].queued = true;
    uint32_t stream = specs[id].stream;
    ready[stream].insert({states[id].fired, id});
    toPump.push_back(stream);
  }

  /// Pumps every stream that may have work and room, until none has: a
  /// worklist, not recursion, since one firing (of an ordered actor) may
  /// enable the next on another stream, and so on down a long graph.
  void pumpAll() {
    while (!toPump.empty()) {
      uint32_t stream = toPump.back();
      toPump.pop_back();
      pump(stream);
    }
  }

  /// Starts ready firings on `stream`, earliest iteration first, then
  /// earliest in the graph, while it has fewer than streamDepth in flight:
  /// a later iteration never jumps the queue of an earlier one that is
  /// ready, which keeps iterations finishing in order and memory low.
  void pump(uint32_t stream) {
    while (!stopping && !ready[stream].empty() &&
           onStream[stream] < options.streamDepth) {
      auto [iteration, id] = *ready[stream].begin();
      ready[stream].erase(ready[stream].begin());
      states[id].queued = false;
      fire(id);
      if (states[id].orderPosition >= 0) {
        if (++cursorPosition == static_cast<int32_t>(ordered.size())) {
          cursorPosition = 0;
          ++cursorIteration;
        }
        // The next ordered actor may have been waiting for its turn only.
        tryFire(ordered[cursorPosition]);
      }
      tryFire(id);
    }
  }

  void fire(uint32_t id) {
    const ActorSpec &spec = specs[id];
    int64_t iteration = states[id].fired++;
    ++inFlight;
    ++onStream[spec.stream];
    ++stats.firings;
    Stream &stream = *streams[spec.stream];
    // The failure is noted by the task itself, as the kernel returned it
    // (payloads included); the callback only says that the firing is over,
    // and how, since on a poisoned stream later tasks are skipped.
    std::vector<FiringEvent> *events =
        options.trace ? &stats.events[spec.stream] : nullptr;
    stream.enqueue([&spec, id, iteration, events, error = error, this] {
      double start = events ? nowUs() : 0;
      absl::Status s = spec.fire(iteration);
      // Only this stream's tasks append to its list, one at a time.
      if (events)
        events->push_back({id, spec.stream, iteration, start, nowUs() - start});
      if (!s.ok())
        error->note(s);
      return s;
    });
    stream.enqueueCallback(
        [bus = bus, error = error, id, iteration](const absl::Status &s) {
          if (!s.ok())
            error->note(s);
          bus->post({iteration, id, id, MessageKind::Done, !s.ok()});
        });
  }

  const std::vector<ActorSpec> &specs;
  std::span<Stream *const> streams;
  const RunOptions &options;
  std::vector<ActorState> states;
  std::vector<uint32_t> ordered;
  int64_t cursorIteration = 0;
  int32_t cursorPosition = 0;
  // Shared with the stream callbacks; run() returns only once every one of
  // them has posted, but the stream may still be unwinding the callback.
  std::shared_ptr<FirstError> error;
  std::shared_ptr<MessageBus> bus;
  std::deque<Message> local;
  int64_t inFlight = 0, completedFirings = 0;
  // Per stream: firings ready to start, by (iteration, actor), and how many
  // are enqueued and not done.
  std::vector<std::set<std::pair<int64_t, uint32_t>>> ready;
  std::vector<int32_t> onStream;
  std::vector<uint32_t> toPump; // streams to pump (repeats are harmless)
  bool stopping = false;
  std::vector<int64_t> doneInIteration;
  RunStats stats;
};

} // namespace

absl::StatusOr<RunStats> run(const ActorGraph &graph,
                             std::span<Stream *const> streams,
                             const RunOptions &options) {
  if (absl::Status s = graph.verify(streams.size()); !s.ok())
    return s;
  if (options.iterations < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot run ", options.iterations, " iterations of an actor graph"));
  if (options.streamDepth < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("a stream depth of ", options.streamDepth,
                     " starts nothing; it must be at least 1"));
  Dispatcher dispatcher(graph, streams, options);
  return dispatcher.run();
}

} // namespace pc::runtime::actor

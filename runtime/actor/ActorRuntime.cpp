//===- ActorRuntime.cpp - Actors, registers and credits -------------------===//

#include "runtime/actor/ActorRuntime.h"

#include "runtime/actor/MessageBus.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <set>

#include <time.h>

namespace pc::runtime::actor {

uint32_t ActorGraph::add(ActorSpec spec) {
  specs.push_back(std::move(spec));
  return static_cast<uint32_t>(specs.size() - 1);
}

namespace {

absl::Status badActor(size_t id, const ActorSpec &a, auto... what) {
  return absl::InvalidArgumentError(
      absl::StrCat("actor #", id, " '", a.name, "': ", what...));
}

/// The rules of a graph that do not depend on the streams, which
/// verifyOrder relies on too: inputs that are earlier make the graph
/// acyclic.
absl::Status verifyLinks(const std::vector<ActorSpec> &specs) {
  for (size_t id = 0; id < specs.size(); ++id) {
    const ActorSpec &a = specs[id];
    for (uint32_t in : a.inputs)
      if (in >= id)
        return badActor(id, a, "reads actor #", in,
                        ", which is not earlier in the graph (the graph must "
                        "be built in a topological order)");
    for (uint32_t in : a.carried)
      if (in >= specs.size())
        return badActor(id, a, "carries from actor #", in,
                        ", but the graph has ", specs.size(), " actors");
    if (a.registers < 1)
      return badActor(id, a, "has ", a.registers,
                      " registers; it needs at least 1");
  }
  return absl::OkStatus();
}

/// Per actor, its distinct producers (in input order) and its distinct
/// consumers: the edges that Req and Ack travel on.
struct Links {
  std::vector<std::vector<uint32_t>> producers, consumers;
  /// Loop-carried edges, both ways, distinct.
  std::vector<std::vector<uint32_t>> carriedFrom, carriedTo;
};

Links linkActors(const std::vector<ActorSpec> &specs) {
  Links links;
  links.producers.resize(specs.size());
  links.consumers.resize(specs.size());
  links.carriedFrom.resize(specs.size());
  links.carriedTo.resize(specs.size());
  for (uint32_t id = 0; id < specs.size(); ++id) {
    std::vector<uint32_t> &from = links.carriedFrom[id];
    for (uint32_t in : specs[id].carried)
      if (std::find(from.begin(), from.end(), in) == from.end()) {
        from.push_back(in);
        links.carriedTo[in].push_back(id);
      }
    std::vector<uint32_t> &producers = links.producers[id];
    for (uint32_t in : specs[id].inputs)
      if (std::find(producers.begin(), producers.end(), in) ==
          producers.end()) {
        producers.push_back(in);
        links.consumers[in].push_back(id);
      }
  }
  return links;
}

} // namespace

absl::Status ActorGraph::verify(size_t numStreams) const {
  if (absl::Status s = verifyLinks(specs); !s.ok())
    return s;
  for (size_t id = 0; id < specs.size(); ++id) {
    const ActorSpec &a = specs[id];
    if (a.stream >= numStreams)
      return badActor(id, a, "runs on stream ", a.stream, ", but there are ",
                      numStreams);
    if (!a.fire)
      return badActor(id, a, "has no work");
  }
  return absl::OkStatus();
}

std::vector<OrderedFiring> defaultOrder(const ActorGraph &graph,
                                        int64_t iterations) {
  std::vector<uint32_t> ordered;
  for (uint32_t id = 0; id < graph.actors().size(); ++id)
    if (graph.actors()[id].ordered)
      ordered.push_back(id);
  std::vector<OrderedFiring> order;
  order.reserve(ordered.size() * std::max<int64_t>(iterations, 0));
  for (int64_t it = 0; it < iterations; ++it)
    for (uint32_t id : ordered)
      order.push_back({it, id});
  return order;
}

namespace {

/// Why the rank, having followed `order` up to entry `cursor`, cannot fire
/// that entry: the credits it waits for lead, through actors that are not
/// ordered, to an ordered firing that comes later in the list. `fired` is
/// where every actor stopped.
absl::Status explainDeadlock(const std::vector<ActorSpec> &specs,
                             const Links &links,
                             std::span<const OrderedFiring> order,
                             size_t cursor, const std::vector<int64_t> &fired) {
  auto actor = [&](uint32_t id) {
    return absl::StrCat("actor #", id, " '", specs[id].name, "'");
  };
  // Follow one blocker of each stuck firing. Each step goes to an unfired
  // firing that is earlier by (iteration, actor): a producer of the same
  // iteration, a loop-carried producer or a consumer of an earlier one, so
  // the walk ends, and it
  // ends at an ordered actor, since an actor that is not ordered waits
  // only for credits. (Each actor's entries so far are its iterations in
  // order, which verifyOrder checked first, so a blocker always exists.)
  OrderedFiring stuck = order[cursor];
  uint32_t at = stuck.actor;
  std::vector<uint32_t> through;   // the actors in between
  std::vector<uint32_t> registers; // the actors whose register was full
  do {
    if (at != stuck.actor)
      through.push_back(at);
    int64_t it = fired[at];
    auto producer =
        std::find_if(links.producers[at].begin(), links.producers[at].end(),
                     [&](uint32_t p) { return fired[p] <= it; });
    if (producer != links.producers[at].end()) {
      at = *producer;
      continue;
    }
    // A loop-carried producer that has not done the iteration before.
    auto carried =
        std::find_if(links.carriedFrom[at].begin(), links.carriedFrom[at].end(),
                     [&](uint32_t p) { return fired[p] < it; });
    if (carried != links.carriedFrom[at].end()) {
      at = *carried;
      continue;
    }
    registers.push_back(at);
    at = *std::find_if(
        links.consumers[at].begin(), links.consumers[at].end(),
        [&](uint32_t c) { return it - fired[c] >= specs[at].registers; });
  } while (!specs[at].ordered);
  OrderedFiring blocker{fired[at], at};
  size_t later =
      std::find(order.begin() + cursor, order.end(), blocker) - order.begin();

  std::string via;
  if (!through.empty()) {
    via = " (through ";
    for (size_t k = 0; k < through.size(); ++k)
      absl::StrAppend(&via, k ? ", " : "", actor(through[k]));
    via += ")";
  }
  std::string head =
      absl::StrCat("order entry ", cursor, ": iteration ", stuck.iteration,
                   " of ", actor(stuck.actor), " would deadlock: ");
  if (registers.empty())
    return absl::InvalidArgumentError(
        absl::StrCat(head, "it depends on ordered ", actor(blocker.actor), via,
                     ", whose iteration ", blocker.iteration,
                     " comes later (entry ", later, ")"));
  std::string full;
  for (size_t k = 0; k < registers.size(); ++k)
    absl::StrAppend(
        &full, k ? (k + 1 == registers.size() ? " and " : ", ") : "",
        actor(registers[k]), " (", specs[registers[k]].registers, ")");
  return absl::InvalidArgumentError(
      absl::StrCat(head, "it waits for a free register until iteration ",
                   blocker.iteration, " of ordered ", actor(blocker.actor), via,
                   " fires, which comes later (entry ", later,
                   "); the registers of ", full, " are full until then"));
}

} // namespace

absl::Status verifyOrder(const ActorGraph &graph, int64_t iterations,
                         std::span<const OrderedFiring> order) {
  const std::vector<ActorSpec> &specs = graph.actors();
  if (absl::Status s = verifyLinks(specs); !s.ok())
    return s;
  auto actor = [&](uint32_t id) {
    return absl::StrCat("actor #", id, " '", specs[id].name, "'");
  };
  auto entryOf = [&](OrderedFiring f, size_t from, size_t to) {
    return std::find(order.begin() + from, order.begin() + to, f) -
           order.begin();
  };

  // The list, entry by entry: since each actor's iterations must come in
  // increasing order, its entries so far are exactly 0, 1, ..., next - 1,
  // which tells a duplicate from a regression without a table of the whole
  // run.
  std::vector<int64_t> next(specs.size(), 0);
  for (size_t p = 0; p < order.size(); ++p) {
    auto [it, id] = order[p];
    std::string entry = absl::StrCat("order entry ", p, ": ");
    if (id >= specs.size())
      return absl::InvalidArgumentError(absl::StrCat(entry, "names actor #", id,
                                                     ", but the graph has ",
                                                     specs.size(), " actors"));
    if (!specs[id].ordered)
      return absl::InvalidArgumentError(absl::StrCat(
          entry, actor(id), " is not ordered; only ordered actors are listed"));
    if (it < 0 || it >= iterations)
      return absl::InvalidArgumentError(absl::StrCat(
          entry, "iteration ", it, " of ", actor(id),
          " is out of range; the run has ", iterations, " iterations"));
    if (it < next[id])
      return absl::InvalidArgumentError(absl::StrCat(
          entry, "iteration ", it, " of ", actor(id),
          " is listed twice (also at entry ", entryOf({it, id}, 0, p), ")"));
    if (it > next[id]) {
      size_t q = entryOf({next[id], id}, p + 1, order.size());
      if (q == order.size())
        return absl::InvalidArgumentError(absl::StrCat(
            "the order lacks iteration ", next[id], " of ", actor(id)));
      return absl::InvalidArgumentError(absl::StrCat(
          entry, "iteration ", it, " of ", actor(id),
          " would deadlock: it comes before iteration ", next[id],
          " of the same actor (entry ", q,
          "), but an actor fires its iterations in increasing order"));
    }
    ++next[id];
  }
  for (uint32_t id = 0; id < specs.size(); ++id)
    if (specs[id].ordered && next[id] < iterations)
      return absl::InvalidArgumentError(absl::StrCat(
          "the order lacks iteration ", next[id], " of ", actor(id)));

  // Then the credits: follow the list on this rank as if every firing
  // finished at once, firing whatever can fire. No firing disables
  // another, so if this gets stuck at an entry, so does every real run,
  // whatever the timing; and once the last ordered firing fired, the rest
  // of the graph finishes (the earliest unfired firing by (iteration,
  // actor) always can).
  Links links = linkActors(specs);
  std::vector<int64_t> fired(specs.size(), 0);
  size_t cursor = 0;
  auto canFire = [&](uint32_t id) {
    int64_t it = fired[id];
    if (it == iterations)
      return false;
    for (uint32_t p : links.producers[id])
      if (fired[p] <= it)
        return false;
    for (uint32_t p : links.carriedFrom[id])
      if (fired[p] < it)
        return false;
    for (uint32_t c : links.consumers[id])
      if (it - fired[c] >= specs[id].registers)
        return false;
    return !specs[id].ordered ||
           (order[cursor].actor == id && order[cursor].iteration == it);
  };
  std::vector<uint32_t> work;
  std::vector<bool> queued(specs.size(), true);
  for (uint32_t id = specs.size(); id-- > 0;)
    work.push_back(id);
  auto push = [&](uint32_t id) {
    if (!queued[id]) {
      queued[id] = true;
      work.push_back(id);
    }
  };
  while (cursor < order.size() && !work.empty()) {
    uint32_t id = work.back();
    work.pop_back();
    queued[id] = false;
    if (!canFire(id))
      continue;
    ++fired[id];
    if (specs[id].ordered && ++cursor < order.size())
      push(order[cursor].actor);
    push(id);
    for (uint32_t c : links.consumers[id])
      push(c);
    for (uint32_t c : links.carriedTo[id])
      push(c);
    for (uint32_t p : links.producers[id])
      push(p);
  }
  if (cursor < order.size())
    return explainDeadlock(specs, links, order, cursor, fired);
  return absl::OkStatus();
}

namespace {

/// What the dispatcher knows of one actor. Only the dispatcher touches it.
struct ActorState {
  std::vector<uint32_t> producers; // distinct, in input order
  std::vector<uint32_t> consumers; // distinct
  std::vector<int64_t> readable;   // per producer: iterations it sent Req for
  std::vector<int32_t> acks;       // per register slot
  std::vector<uint32_t> carriedFrom, carriedTo; // loop-carried edges
  std::vector<int64_t> carriedDone; // per carriedFrom: iterations done
  int64_t fired = 0, freed = 0;
  bool queued = false; // its next firing waits in its stream's ready set
  /// Whether an actor on another stream waits for its Done (a Req, a
  /// freed register or a loop-carried iteration): that Done wakes the
  /// dispatcher at once.
  bool crossStream = false;
};

/// The CPU time this thread has used, in microseconds.
double threadCpuUs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e6 + double(t.tv_nsec) * 1e-3;
}

/// Microseconds from `origin` to now.
double microsSince(std::chrono::steady_clock::time_point origin) {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now() - origin)
      .count();
}

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
             const RunOptions &options, std::span<const OrderedFiring> order)
      : specs(graph.actors()), streams(streams), options(options), order(order),
        states(specs.size()), error(std::make_shared<FirstError>()),
        bus(std::make_shared<MessageBus>()) {
    Links links = linkActors(specs);
    for (uint32_t id = 0; id < specs.size(); ++id) {
      ActorState &s = states[id];
      s.producers = std::move(links.producers[id]);
      s.consumers = std::move(links.consumers[id]);
      s.readable.assign(s.producers.size(), 0);
      s.carriedFrom = std::move(links.carriedFrom[id]);
      s.carriedTo = std::move(links.carriedTo[id]);
      s.carriedDone.assign(s.carriedFrom.size(), 0);
      s.acks.assign(specs[id].registers, 0);
      for (const auto *peers :
           {&s.producers, &s.consumers, &s.carriedFrom, &s.carriedTo})
        for (uint32_t p : *peers)
          s.crossStream |= !sameStream(id, p);
    }
    ready.resize(streams.size());
    onStream.assign(streams.size(), 0);
    unreported =
        std::make_shared<std::vector<std::atomic<int32_t>>>(streams.size());
    stats.iterationDoneUs.assign(options.iterations, 0);
    lastEndUs.assign(options.iterations, 0);
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
      handleLocal();
      if (stopping ? inFlight == 0 : completedFirings == total)
        break;
      bus->drain(batch);
      // What each message releases is handled before the next message, so
      // that the firings come in the same order however many messages a
      // wake-up brings (a stream's Done messages arrive in its order).
      for (const Message &m : batch) {
        handle(m);
        pumpAll();
        handleLocal();
      }
    }
    if (stopping)
      return error->get();
    return std::move(stats);
  }

private:
  /// Handles the messages the dispatcher sent itself, and what they send.
  void handleLocal() {
    while (!local.empty()) {
      Message m = local.front();
      local.pop_front();
      handle(m);
      pumpAll();
    }
  }

  /// When a Done's firing ended (µs from the origin): its stamp keeps the
  /// low 32 bits, and it was posted less than 71 minutes ago.
  double endOf(const Message &m) const {
    double now = nowUs();
    uint32_t age = static_cast<uint32_t>(static_cast<int64_t>(now)) - m.endUs;
    return now - double(age);
  }

  double nowUs() const { return microsSince(options.origin); }

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
      lastEndUs[m.iteration] = std::max(lastEndUs[m.iteration], endOf(m));
      if (++doneInIteration[m.iteration] == static_cast<int64_t>(specs.size()))
        stats.iterationDoneUs[m.iteration] = lastEndUs[m.iteration];
      for (uint32_t c : s.consumers)
        if (!sameStream(m.dst, c))
          local.push_back({m.iteration, c, m.dst, MessageKind::Req, false});
      for (uint32_t p : s.producers)
        local.push_back({m.iteration, p, m.dst, MessageKind::Ack, false});
      if (s.consumers.empty())
        release(m.dst);
      // A stream finishes its firings in order, so this is iteration
      // m.iteration of the producer, and every one before it is done.
      for (uint32_t c : s.carriedTo)
        if (!sameStream(m.dst, c))
          carry(m.dst, c, m.iteration);
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

  /// Whether `consumer` may treat `producer`'s firings as done once they
  /// are enqueued: a stream runs its tasks in order, so a task enqueued
  /// after the producer's sees its results. This spares a chain of kernels
  /// on one stream a round trip through the dispatcher per kernel (a
  /// callback, a message, a wake-up), which left the stream idle between
  /// them.
  bool sameStream(uint32_t producer, uint32_t consumer) const {
    return specs[producer].stream == specs[consumer].stream;
  }

  /// Iteration `iteration` of `from` counts as done for the loop-carried
  /// edge to `to`.
  void carry(uint32_t from, uint32_t to, int64_t iteration) {
    ActorState &s = states[to];
    auto at = std::find(s.carriedFrom.begin(), s.carriedFrom.end(), from);
    s.carriedDone[at - s.carriedFrom.begin()] = iteration + 1;
    tryFire(to);
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
    for (int64_t done : s.carriedDone)
      if (done < s.fired)
        return false;
    return !specs[id].ordered || isTurn(id, s.fired);
  }

  /// Whether the cursor is at (iteration, id): the one ordered firing that
  /// may be queued or start now.
  bool isTurn(uint32_t id, int64_t iteration) const {
    return cursor < order.size() && order[cursor].actor == id &&
           order[cursor].iteration == iteration;
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
      // The next ordered actor may have been waiting for its turn only.
      if (specs[id].ordered && ++cursor < order.size())
        tryFire(order[cursor].actor);
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
      double cpu = events ? threadCpuUs() : 0;
      absl::Status s = spec.fire(iteration);
      // Only this stream's tasks append to its list, one at a time.
      if (events) {
        // The CPU interval lies inside the wall one; the two clocks'
        // sources differ (a guest's CPU clock can jump), so clamp.
        cpu = threadCpuUs() - cpu;
        double wall = nowUs() - start;
        events->push_back({id, spec.stream, iteration, start, wall,
                           std::clamp(cpu, 0.0, wall)});
      }
      if (!s.ok())
        error->note(s);
      return s;
    });
    // A Done that only later firings of the same stream would act on does
    // not wake a sleeping dispatcher while kLazyDoneDepth more of this
    // run's firings are queued behind it: their callbacks run (on a
    // poisoned stream too; no queued task waits for work the dispatcher
    // has yet to start), and the first of the last few wakes it, so it
    // refills the stream before the stream runs dry. A chain of kernels
    // costs a wake-up per refill, not one per kernel.
    std::atomic<int32_t> &behind = (*unreported)[spec.stream];
    behind.fetch_add(1, std::memory_order_relaxed);
    stream.enqueueCallback([bus = bus, error = error, unreported = unreported,
                            &behind, id, iteration,
                            urgent = states[id].crossStream,
                            origin = options.origin](const absl::Status &s) {
      if (!s.ok())
        error->note(s);
      auto endUs =
          static_cast<uint32_t>(static_cast<int64_t>(microsSince(origin)));
      int32_t left = behind.fetch_sub(1, std::memory_order_acq_rel) - 1;
      bool wake = urgent || !s.ok() || left < kLazyDoneDepth;
      bus->post({iteration, id, id, MessageKind::Done, !s.ok(), endUs}, wake);
    });
    // Consumers on the same stream may start now (sameStream). Their Req
    // goes through `local`, after the pump that called this returns; their
    // Acks still wait for their own Done, so registers free as before.
    for (uint32_t c : states[id].consumers)
      if (sameStream(id, c))
        local.push_back({iteration, c, id, MessageKind::Req, false});
    for (uint32_t c : states[id].carriedTo)
      if (sameStream(id, c))
        carry(id, c, iteration);
  }

  const std::vector<ActorSpec> &specs;
  std::span<Stream *const> streams;
  const RunOptions &options;
  // The rank's ordered firings, and the next one to start.
  std::span<const OrderedFiring> order;
  size_t cursor = 0;
  std::vector<ActorState> states;
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
  // Per stream: this run's firings enqueued on it whose callbacks have not
  // run yet, counted down by the callbacks themselves (shared: a callback
  // may outlive the run).
  std::shared_ptr<std::vector<std::atomic<int32_t>>> unreported;
  static constexpr int32_t kLazyDoneDepth = 8;
  std::vector<uint32_t> toPump; // streams to pump (repeats are harmless)
  bool stopping = false;
  std::vector<int64_t> doneInIteration;
  std::vector<double> lastEndUs; // per iteration: its latest Done's end
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
  // The default list needs no check: following the graph's topological
  // order iteration by iteration is how a sequential run goes.
  std::vector<OrderedFiring> defaults;
  std::span<const OrderedFiring> order = options.order;
  if (order.empty()) {
    defaults = defaultOrder(graph, options.iterations);
    order = defaults;
  } else if (absl::Status s = verifyOrder(graph, options.iterations, order);
             !s.ok()) {
    return s;
  }
  Dispatcher dispatcher(graph, streams, options, order);
  return dispatcher.run();
}

} // namespace pc::runtime::actor

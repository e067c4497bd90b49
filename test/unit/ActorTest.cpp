//===- ActorTest.cpp - The actor core on random graphs
//---------------------===//
//
// Random DAGs with random register counts, stream counts and kernel delays
// always finish, and every actor sees exactly the values a sequential
// evaluation gives, on one device and on three devices whose ordered actors
// all-reduce across devices. Also: the register bound and the overlap it
// allows, failures (with peers released), and malformed graphs. And the
// per-rank order of ordered actors: the default list, explicit lists that
// run ahead (pipeline schedules) and lists that would deadlock, which are
// rejected before anything fires.
//
//===----------------------------------------------------------------------===//

#include "runtime/actor/ActorRuntime.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/SharedMemoryComm.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

using namespace pc::runtime;
using namespace pc::runtime::actor;
using ::testing::HasSubstr;

namespace pc::runtime::actor {
// So that a mismatched order prints as (iteration, actor) pairs.
void PrintTo(const OrderedFiring &f, std::ostream *os) {
  *os << "(" << f.iteration << ", #" << f.actor << ")";
}
} // namespace pc::runtime::actor

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

/// A random DAG: per actor, its inputs (earlier actors) and whether it is a
/// collective (ordered, on the communication stream).
struct Topology {
  std::vector<std::vector<uint32_t>> inputs;
  std::vector<bool> collective;
  /// Loop-carried inputs: any actors, read at the previous iteration.
  std::vector<std::vector<uint32_t>> carried;
};

Topology randomTopology(std::mt19937 &rng, bool collectives,
                        bool carried = false) {
  Topology t;
  int n = std::uniform_int_distribution<int>(1, 40)(rng);
  for (int i = 0; i < n; ++i) {
    std::vector<uint32_t> in;
    int fanIn = i ? std::uniform_int_distribution<int>(0, 3)(rng) : 0;
    for (int k = 0; k < fanIn; ++k)
      in.push_back(std::uniform_int_distribution<uint32_t>(0, i - 1)(rng));
    t.inputs.push_back(in);
    t.collective.push_back(collectives &&
                           std::bernoulli_distribution(0.3)(rng));
  }
  t.carried.resize(n);
  if (carried)
    for (int i = 0; i < n; ++i)
      for (int k = std::uniform_int_distribution<int>(0, 2)(rng); k > 0; --k)
        t.carried[i].push_back(
            std::uniform_int_distribution<uint32_t>(0, n - 1)(rng));
  return t;
}

/// The value of each actor at each iteration on `rank`, evaluated in order:
/// a hash of its id, rank, iteration and inputs; a collective's value is the
/// sum over the ranks of what it would have computed.
std::vector<std::vector<uint64_t>> sequential(const Topology &t, int ranks,
                                              int64_t iterations, int rank) {
  size_t n = t.inputs.size();
  // [rank][actor][iteration]
  std::vector<std::vector<std::vector<uint64_t>>> v(
      ranks,
      std::vector<std::vector<uint64_t>>(n, std::vector<uint64_t>(iterations)));
  for (int64_t it = 0; it < iterations; ++it)
    for (size_t a = 0; a < n; ++a) {
      for (int r = 0; r < ranks; ++r) {
        uint64_t h = mix(mix(mix(a, r), it), 17);
        for (uint32_t in : t.inputs[a])
          h = mix(h, v[r][in][it]);
        if (it > 0)
          for (uint32_t c : t.carried[a])
            h = mix(h, v[r][c][it - 1]);
        v[r][a][it] = h;
      }
      if (t.collective[a]) {
        uint64_t sum = 0;
        for (int r = 0; r < ranks; ++r)
          v[r][a][it] >>= 8; // so that the int64 sum cannot overflow
        for (int r = 0; r < ranks; ++r)
          sum += v[r][a][it];
        for (int r = 0; r < ranks; ++r)
          v[r][a][it] = sum;
      }
    }
  return v[rank];
}

constexpr uint64_t kPoison = 0xdeadbeefdeadbeefULL;

/// One device's run of `t`: registers hold uint64 values, freed slots are
/// poisoned so that a read after the free shows as a wrong value.
struct DeviceRun {
  DeviceRun(const Topology &t, int rank, int64_t iterations, int streams,
            std::mt19937 &rng, Communicator *comm)
      : values(t.inputs.size(), std::vector<uint64_t>(iterations, kPoison)) {
    for (int s = 0; s < streams + 1; ++s)
      ownedStreams.push_back(std::make_unique<CpuStream>(
          s ? "compute" + std::to_string(s) : "comm"));
    for (auto &s : ownedStreams)
      streamPtrs.push_back(s.get());
    size_t n = t.inputs.size();
    regs.resize(n);
    for (size_t a = 0; a < n; ++a) {
      int32_t registers = std::uniform_int_distribution<int32_t>(1, 4)(rng);
      regs[a].assign(registers, kPoison);
      int delayUs = std::bernoulli_distribution(0.2)(rng)
                        ? std::uniform_int_distribution<int>(1, 300)(rng)
                        : 0;
      ActorSpec spec;
      spec.name = "a" + std::to_string(a);
      spec.inputs = t.inputs[a];
      spec.carried = t.carried[a];
      spec.registers = registers;
      spec.ordered = t.collective[a];
      spec.stream =
          t.collective[a]
              ? 0
              : std::uniform_int_distribution<uint32_t>(1, streams)(rng);
      spec.fire = [this, &t, a, rank, delayUs, comm](int64_t it) {
        if (delayUs)
          std::this_thread::sleep_for(std::chrono::microseconds(delayUs));
        uint64_t h = mix(mix(mix(a, rank), it), 17);
        for (uint32_t in : t.inputs[a])
          h = mix(h, regs[in][it % regs[in].size()]);
        // What a loop-carried edge carries is the caller's to keep.
        if (it > 0)
          for (uint32_t c : t.carried[a])
            h = mix(h, values[c][it - 1]);
        if (t.collective[a]) {
          h >>= 8;
          int64_t group[3] = {0, 1, 2};
          // Without a communicator the run is one rank's: the sum is h.
          if (comm)
            if (absl::Status s =
                    comm->allReduce(&h, 1, CommType::I64, pc::ReduceKind::Sum,
                                    std::span<const int64_t>(group, 3));
                !s.ok())
              return s;
          // Ordered actors share stream 0, so one thread appends.
          orderedFired.push_back({it, static_cast<uint32_t>(a)});
        }
        regs[a][it % regs[a].size()] = h;
        values[a][it] = h;
        return absl::OkStatus();
      };
      graph.add(std::move(spec));
    }
  }

  absl::StatusOr<RunStats>
  run(int64_t iterations,
      std::function<void(const absl::Status &)> onError = nullptr,
      std::vector<OrderedFiring> order = {}) {
    RunOptions options;
    options.iterations = iterations;
    options.order = std::move(order);
    options.trace = true;
    options.onError = std::move(onError);
    options.onFree = [this](uint32_t a, int64_t it) {
      regs[a][it % regs[a].size()] = kPoison;
    };
    return actor::run(graph, streamPtrs, options);
  }

  ActorGraph graph;
  std::vector<std::unique_ptr<CpuStream>> ownedStreams;
  std::vector<Stream *> streamPtrs;
  std::vector<std::vector<uint64_t>> regs;
  std::vector<std::vector<uint64_t>> values;
  /// The ordered firings, as stream 0 ran them.
  std::vector<OrderedFiring> orderedFired;
};

TEST(ActorTest, RandomDagsOnOneDeviceMatchSequentialEvaluation) {
  for (int seed = 0; seed < 60; ++seed) {
    std::mt19937 rng(seed);
    Topology t = randomTopology(rng, /*collectives=*/false);
    int64_t iterations = std::uniform_int_distribution<int>(1, 12)(rng);
    auto expected = sequential(t, 1, iterations, 0);
    // The same graph under different register counts and stream counts.
    for (int streams : {1, 2, 3}) {
      DeviceRun run(t, 0, iterations, streams, rng, nullptr);
      absl::StatusOr<RunStats> stats = run.run(iterations);
      ASSERT_TRUE(stats.ok()) << stats.status();
      EXPECT_EQ(stats->firings, int64_t(t.inputs.size()) * iterations);
      ASSERT_EQ(run.values, expected) << "seed " << seed;
      int64_t traced = 0;
      for (auto &events : stats->events)
        traced += events.size();
      EXPECT_EQ(traced, stats->firings);
      for (double done : stats->iterationDoneUs)
        EXPECT_GT(done, 0);
    }
  }
}

TEST(ActorTest, RandomDagsWithLoopCarriedEdgesMatch) {
  // Each iteration also reads what random actors (anywhere in the graph)
  // made in the iteration before, as a training step reads the parameters
  // the step before updated.
  for (int seed = 0; seed < 60; ++seed) {
    std::mt19937 rng(500 + seed);
    Topology t = randomTopology(rng, /*collectives=*/false, /*carried=*/true);
    int64_t iterations = std::uniform_int_distribution<int>(1, 12)(rng);
    auto expected = sequential(t, 1, iterations, 0);
    for (int streams : {1, 3}) {
      DeviceRun run(t, 0, iterations, streams, rng, nullptr);
      absl::StatusOr<RunStats> stats = run.run(iterations);
      ASSERT_TRUE(stats.ok()) << stats.status();
      ASSERT_EQ(run.values, expected) << "seed " << seed;
    }
  }
}

TEST(ActorTest, RandomDagsWithCollectivesOnThreeDevicesMatch) {
  for (int seed = 0; seed < 40; ++seed) {
    std::mt19937 rng(1000 + seed);
    Topology t = randomTopology(rng, /*collectives=*/true,
                                /*carried=*/seed % 2 == 1);
    int64_t iterations = std::uniform_int_distribution<int>(1, 8)(rng);
    SharedMemoryWorld world(3);
    std::vector<std::unique_ptr<Communicator>> comms;
    std::vector<std::unique_ptr<DeviceRun>> runs;
    for (int r = 0; r < 3; ++r) {
      comms.push_back(world.endpoint(r));
      // Each device gets its own register counts, streams and delays.
      runs.push_back(std::make_unique<DeviceRun>(t, r, iterations, 1 + r % 2,
                                                 rng, comms.back().get()));
    }
    std::vector<absl::StatusOr<RunStats>> results(3, RunStats{});
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r)
      threads.emplace_back([&, r] { results[r] = runs[r]->run(iterations); });
    for (auto &th : threads)
      th.join();
    for (int r = 0; r < 3; ++r) {
      ASSERT_TRUE(results[r].ok()) << results[r].status();
      ASSERT_EQ(runs[r]->values, sequential(t, 3, iterations, r))
          << "seed " << seed << " rank " << r;
    }
  }
}

/// A producer on one stream and a consumer on another that holds each
/// register until it sees whether the producer started the next iteration.
/// Returns how many of the consumer's firings saw that happen.
int overlapsSeen(int32_t registers) {
  CpuStream s0("producer"), s1("consumer");
  Stream *streams[] = {&s0, &s1};
  std::atomic<int64_t> producerStarted{0};
  std::atomic<int> seen{0};
  ActorGraph g;
  g.add({"producer", 0, {}, registers, false, [&](int64_t it) {
           producerStarted = it + 1;
           return absl::OkStatus();
         }});
  g.add({"consumer", 1, {0}, 1, false, [&](int64_t it) {
           if (it == 5)
             return absl::OkStatus(); // There is no next iteration.
           auto deadline = std::chrono::steady_clock::now() +
                           std::chrono::milliseconds(registers > 1 ? 5000 : 20);
           while (producerStarted < it + 2 &&
                  std::chrono::steady_clock::now() < deadline)
             std::this_thread::yield();
           seen += producerStarted >= it + 2;
           return absl::OkStatus();
         }});
  RunOptions options;
  options.iterations = 6;
  absl::StatusOr<RunStats> stats = run(g, streams, options);
  EXPECT_TRUE(stats.ok()) << stats.status();
  return seen;
}

TEST(ActorTest, RegistersBoundAndAllowOverlap) {
  // One register: the producer cannot start iteration i+1 while its
  // consumer holds iteration i.
  EXPECT_EQ(overlapsSeen(1), 0);
  // Two: it does, in every iteration but the last.
  EXPECT_EQ(overlapsSeen(2), 5);
}

/// A CpuStream that counts the tasks enqueued on it.
class CountingStream final : public Stream {
public:
  explicit CountingStream(std::string name) : inner(std::move(name)) {}
  void enqueue(Task task) override {
    ++enqueued;
    inner.enqueue(std::move(task));
  }
  void waitFor(const Event &event) override { inner.waitFor(event); }
  void enqueueCallback(std::function<void(const absl::Status &)> fn) override {
    inner.enqueueCallback(std::move(fn));
  }
  absl::Status synchronize() override { return inner.synchronize(); }
  const std::string &name() const override { return inner.name(); }
  std::atomic<int> enqueued{0};

private:
  CpuStream inner;
};

TEST(ActorTest, AConsumerOnItsProducersStreamIsEnqueuedBeforeItFinishes) {
  // The stream runs its tasks in order, so the consumer (and the producer's
  // next iteration, through the loop-carried edge) need not wait for the
  // producer's Done: while the producer runs, both are already queued
  // behind it. The consumer on another stream still waits for Done.
  CountingStream s0("compute");
  CpuStream s1("other");
  Stream *streams[] = {&s0, &s1};
  std::atomic<bool> queuedBehind{false}, otherEarly{false};
  std::atomic<bool> producerDone{false};
  ActorGraph g;
  g.add({"producer",
         0,
         {},
         2,
         false,
         [&](int64_t it) {
           if (it == 0) {
             auto deadline =
                 std::chrono::steady_clock::now() + std::chrono::seconds(5);
             // Its own task, the consumer's and its next iteration's.
             while (s0.enqueued < 3 &&
                    std::chrono::steady_clock::now() < deadline)
               std::this_thread::yield();
             queuedBehind = s0.enqueued >= 3;
             producerDone = true;
           }
           return absl::OkStatus();
         },
         {0}});
  g.add({"consumer", 0, {0}, 1, false, [&](int64_t) {
           return absl::OkStatus();
         }});
  g.add({"elsewhere", 1, {0}, 1, false, [&](int64_t it) {
           if (it == 0 && !producerDone)
             otherEarly = true;
           return absl::OkStatus();
         }});
  RunOptions options;
  options.iterations = 2;
  absl::StatusOr<RunStats> stats = run(g, streams, options);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(queuedBehind);
  EXPECT_FALSE(otherEarly);
}

TEST(ActorTest, AStepEndsWhenItsLastFiringDoesNotWhenItIsHeard) {
  // A chain of 12 firings of 5 ms on one stream, two iterations: the
  // second's 12 firings are queued behind the first's last, whose Done
  // does not wake the dispatcher (it is heard 5 firings later, with 7
  // left). The iteration still ends when that firing did.
  CpuStream s0("compute");
  Stream *streams[] = {&s0};
  ActorGraph g;
  for (uint32_t i = 0; i < 12; ++i)
    g.add({"link", 0,
           i ? std::vector<uint32_t>{i - 1} : std::vector<uint32_t>{}, 2, false,
           [](int64_t) {
             std::this_thread::sleep_for(std::chrono::milliseconds(5));
             return absl::OkStatus();
           },
           // The second iteration starts after the first's last link.
           i ? std::vector<uint32_t>{} : std::vector<uint32_t>{11}});
  RunOptions options;
  options.iterations = 2;
  options.trace = true;
  absl::StatusOr<RunStats> stats = run(g, streams, options);
  ASSERT_TRUE(stats.ok()) << stats.status();
  double lastEnd = 0;
  for (const FiringEvent &e : stats->events[0])
    if (e.iteration == 0)
      lastEnd = std::max(lastEnd, e.startUs + e.durationUs);
  // Heard late, it would be at least 4 firings (20 ms) later.
  EXPECT_GE(stats->iterationDoneUs[0], lastEnd - 1);
  EXPECT_LT(stats->iterationDoneUs[0], lastEnd + 12000);
}

TEST(ActorTest, OrderedActorsFireInGraphOrder) {
  // The second ordered actor is ready first, but must wait for its turn.
  CpuStream compute("compute"), comm("comm");
  Stream *streams[] = {&compute, &comm};
  std::vector<std::string> order;
  std::atomic<bool> slowDone{false};
  ActorGraph g;
  g.add({"slow", 0, {}, 1, false, [&](int64_t) {
           std::this_thread::sleep_for(std::chrono::milliseconds(20));
           return absl::OkStatus();
         }});
  g.add({"first", 1, {0}, 1, true, [&](int64_t it) {
           order.push_back("first" + std::to_string(it));
           return absl::OkStatus();
         }});
  g.add({"second", 1, {}, 1, true, [&](int64_t it) {
           order.push_back("second" + std::to_string(it));
           return absl::OkStatus();
         }});
  RunOptions options;
  options.iterations = 2;
  ASSERT_TRUE(run(g, streams, options).ok());
  EXPECT_EQ(order, (std::vector<std::string>{"first0", "second0", "first1",
                                             "second1"}));
}

TEST(ActorTest, AFailureStopsTheRunAndReleasesPeers) {
  // Rank 0's actor fails at iteration 2; rank 1 waits in its next
  // all-reduce until rank 0's onError aborts the world.
  SharedMemoryWorld world(2);
  std::vector<absl::StatusOr<RunStats>> results(2, RunStats{});
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      auto comm = world.endpoint(r);
      CpuStream compute("compute"), commStream("comm");
      Stream *streams[] = {&compute, &commStream};
      ActorGraph g;
      g.add({"work", 0, {}, 2, false, [r](int64_t it) {
               if (r == 0 && it == 2)
                 return absl::InternalError("work failed at iteration 2");
               return absl::OkStatus();
             }});
      g.add({"reduce", 1, {0}, 1, true, [&](int64_t) {
               int64_t v = 1, group[] = {0, 1};
               return comm->allReduce(&v, 1, CommType::I64, pc::ReduceKind::Sum,
                                      group);
             }});
      RunOptions options;
      options.iterations = 10;
      options.onError = [&](const absl::Status &s) { world.abort(s); };
      results[r] = run(g, streams, options);
    });
  for (auto &th : threads)
    th.join();
  ASSERT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].status().message(), "work failed at iteration 2");
  ASSERT_FALSE(results[1].ok());
  EXPECT_TRUE(isReleasedByAbort(results[1].status())) << results[1].status();
}

TEST(ActorTest, MalformedGraphsAreErrors) {
  CpuStream s("s");
  Stream *streams[] = {&s};
  auto ok = [](int64_t) { return absl::OkStatus(); };
  {
    ActorGraph g;
    g.add({"a", 0, {0}, 1, false, ok});
    EXPECT_EQ(run(g, streams, {}).status().message(),
              "actor #0 'a': reads actor #0, which is not earlier in the "
              "graph (the graph must be built in a topological order)");
  }
  {
    ActorGraph g;
    g.add({"a", 0, {}, 0, false, ok});
    EXPECT_EQ(run(g, streams, {}).status().message(),
              "actor #0 'a': has 0 registers; it needs at least 1");
  }
  {
    ActorGraph g;
    g.add({"a", 3, {}, 1, false, ok});
    EXPECT_EQ(run(g, streams, {}).status().message(),
              "actor #0 'a': runs on stream 3, but there are 1");
  }
  {
    ActorGraph g;
    g.add({"a", 0, {}, 1, false, nullptr});
    EXPECT_EQ(run(g, streams, {}).status().message(),
              "actor #0 'a': has no work");
  }
}

//===----------------------------------------------------------------------===//
// The per-rank order of ordered actors
//===----------------------------------------------------------------------===//

TEST(ActorTest, DefaultOrderIsIterationByIterationInGraphOrder) {
  auto ok = [](int64_t) { return absl::OkStatus(); };
  ActorGraph g;
  g.add({"load", 0, {}, 1, false, ok});
  g.add({"reduce", 0, {0}, 1, true, ok});
  g.add({"compute", 0, {1}, 1, false, ok});
  g.add({"send", 0, {2}, 1, true, ok});
  EXPECT_EQ(defaultOrder(g, 3),
            (std::vector<OrderedFiring>{
                {0, 1}, {0, 3}, {1, 1}, {1, 3}, {2, 1}, {2, 3}}));
  EXPECT_TRUE(defaultOrder(g, 0).empty());
  EXPECT_TRUE(verifyOrder(g, 3, defaultOrder(g, 3)).ok());
}

TEST(ActorTest, TheDefaultOrderSpelledOutRunsLikeNoOrder) {
  // Three ranks whose ordered actors all-reduce, once with no order and
  // once with the default list given explicitly: the same values, and in
  // both the ordered actors fire exactly as the default list says.
  for (int seed = 0; seed < 25; ++seed) {
    for (bool spelledOut : {false, true}) {
      std::mt19937 rng(2000 + seed);
      Topology t = randomTopology(rng, /*collectives=*/true);
      int64_t iterations = std::uniform_int_distribution<int>(1, 6)(rng);
      SharedMemoryWorld world(3);
      std::vector<std::unique_ptr<Communicator>> comms;
      std::vector<std::unique_ptr<DeviceRun>> runs;
      for (int r = 0; r < 3; ++r) {
        comms.push_back(world.endpoint(r));
        runs.push_back(std::make_unique<DeviceRun>(t, r, iterations, 1 + r % 2,
                                                   rng, comms.back().get()));
      }
      std::vector<OrderedFiring> order =
          defaultOrder(runs[0]->graph, iterations);
      ASSERT_TRUE(verifyOrder(runs[0]->graph, iterations, order).ok());
      std::vector<absl::StatusOr<RunStats>> results(3, RunStats{});
      std::vector<std::thread> threads;
      for (int r = 0; r < 3; ++r)
        threads.emplace_back([&, r] {
          results[r] =
              runs[r]->run(iterations, nullptr,
                           spelledOut ? order : std::vector<OrderedFiring>{});
        });
      for (auto &th : threads)
        th.join();
      for (int r = 0; r < 3; ++r) {
        ASSERT_TRUE(results[r].ok()) << results[r].status();
        ASSERT_EQ(runs[r]->values, sequential(t, 3, iterations, r))
            << "seed " << seed << " rank " << r;
        ASSERT_EQ(runs[r]->orderedFired, order)
            << "seed " << seed << " rank " << r;
      }
    }
  }
}

/// A random order of `graph`'s ordered firings: each ordered actor runs
/// 0-2 iterations ahead of the default (so some orders break dependencies
/// or overrun registers), and now and then two neighbours swap.
std::vector<OrderedFiring> randomOrder(const ActorGraph &graph,
                                       int64_t iterations, std::mt19937 &rng) {
  std::vector<int64_t> ahead(graph.actors().size());
  for (int64_t &a : ahead)
    a = std::uniform_int_distribution<int64_t>(0, 2)(rng);
  std::vector<OrderedFiring> order = defaultOrder(graph, iterations);
  std::stable_sort(order.begin(), order.end(),
                   [&](const OrderedFiring &x, const OrderedFiring &y) {
                     return x.iteration - ahead[x.actor] <
                            y.iteration - ahead[y.actor];
                   });
  if (order.size() > 1 && std::bernoulli_distribution(0.2)(rng)) {
    size_t k = std::uniform_int_distribution<size_t>(0, order.size() - 2)(rng);
    std::swap(order[k], order[k + 1]);
  }
  return order;
}

TEST(ActorTest, RandomOrdersThatVerifyRunAndFollowTheList) {
  // Whatever verifyOrder accepts runs to the end on one rank, gives the
  // sequential values, and fires the ordered actors exactly in the list's
  // order. (What it rejects would hang, so it is not run.)
  int accepted = 0, rejected = 0;
  for (int seed = 0; seed < 200; ++seed) {
    std::mt19937 rng(3000 + seed);
    Topology t = randomTopology(rng, /*collectives=*/true);
    int64_t iterations = std::uniform_int_distribution<int>(1, 6)(rng);
    DeviceRun run(t, 0, iterations, 1 + seed % 3, rng, nullptr);
    std::vector<OrderedFiring> order = randomOrder(run.graph, iterations, rng);
    if (absl::Status s = verifyOrder(run.graph, iterations, order); !s.ok()) {
      ++rejected;
      // Every entry is valid and listed once, so only a deadlock is left.
      EXPECT_THAT(std::string(s.message()), HasSubstr("would deadlock"));
      continue;
    }
    ++accepted;
    absl::StatusOr<RunStats> stats = run.run(iterations, nullptr, order);
    ASSERT_TRUE(stats.ok()) << stats.status();
    ASSERT_EQ(run.values, sequential(t, 1, iterations, 0)) << "seed " << seed;
    ASSERT_EQ(run.orderedFired, order) << "seed " << seed;
  }
  // Both kinds were seen, often enough to mean something.
  EXPECT_GT(accepted, 50);
  EXPECT_GT(rejected, 20);
}

struct Node {
  std::string name;
  std::vector<uint32_t> inputs;
  int32_t registers;
  bool ordered;
  int delayUs = 0;
  std::vector<uint32_t> carried = {};
};

/// A small graph whose ordered actors share a communication stream and the
/// others a compute stream. Each firing's value hashes its actor, iteration
/// and inputs; the ordered firings are recorded as the stream runs them.
struct SmallRun {
  explicit SmallRun(const std::vector<Node> &nodes, int64_t iterations)
      : values(nodes.size(), std::vector<uint64_t>(iterations, kPoison)) {
    for (uint32_t a = 0; a < nodes.size(); ++a) {
      const Node &n = nodes[a];
      graph.add({n.name, n.ordered ? 0u : 1u, n.inputs, n.registers, n.ordered,
                 [this, n, a](int64_t it) {
                   ++firings;
                   if (n.delayUs)
                     std::this_thread::sleep_for(
                         std::chrono::microseconds(n.delayUs));
                   uint64_t h = mix(a, it);
                   for (uint32_t in : n.inputs)
                     h = mix(h, values[in][it]);
                   values[a][it] = h;
                   if (n.ordered)
                     orderedFired.push_back({it, a});
                   return absl::OkStatus();
                 },
                 n.carried});
    }
  }

  absl::StatusOr<RunStats> run(int64_t iterations,
                               std::vector<OrderedFiring> order) {
    Stream *streams[] = {&comm, &compute};
    RunOptions options;
    options.iterations = iterations;
    options.order = std::move(order);
    return actor::run(graph, streams, options);
  }

  ActorGraph graph;
  CpuStream comm{"comm"}, compute{"compute"};
  std::vector<std::vector<uint64_t>> values; // [actor][iteration]
  std::vector<OrderedFiring> orderedFired;   // appended on `comm` only
  std::atomic<int64_t> firings{0};
};

/// One pipeline stage: F receives a micro-batch's activations, compute
/// works on them (slowly, so that F could run ahead of B), B sends the
/// result on.
std::vector<Node> pipelineStage(int32_t registers) {
  return {{"F", {}, registers, true},
          {"compute", {0}, registers, false, 2000},
          {"B", {1}, registers, true}};
}
constexpr uint32_t kF = 0, kB = 2;

TEST(ActorTest, APipelineStageFollowsEitherOrder) {
  for (int64_t iterations : {2, 4}) {
    std::vector<OrderedFiring> byIteration, oneFOneB, forwardsFirst;
    for (int64_t it = 0; it < iterations; ++it) {
      byIteration.insert(byIteration.end(), {{it, kF}, {it, kB}});
      forwardsFirst.push_back({it, kF});
      // Two forwards ahead, then one backward for each further forward.
      if (it + 2 < iterations)
        oneFOneB.push_back({it + 2, kF});
      oneFOneB.push_back({it, kB});
    }
    oneFOneB.insert(oneFOneB.begin(), {{0, kF}, {1, kF}});
    for (int64_t it = 0; it < iterations; ++it)
      forwardsFirst.push_back({it, kB});
    EXPECT_EQ(
        byIteration,
        defaultOrder(SmallRun(pipelineStage(2), iterations).graph, iterations));
    if (iterations == 2)
      EXPECT_EQ(forwardsFirst, (std::vector<OrderedFiring>{
                                   {0, kF}, {1, kF}, {0, kB}, {1, kB}}));

    std::vector<std::vector<uint64_t>> expected;
    for (const auto &order : {byIteration, oneFOneB, forwardsFirst}) {
      SmallRun run(pipelineStage(2), iterations);
      ASSERT_TRUE(verifyOrder(run.graph, iterations, order).ok());
      absl::StatusOr<RunStats> stats = run.run(iterations, order);
      ASSERT_TRUE(stats.ok()) << stats.status();
      EXPECT_EQ(run.orderedFired, order);
      EXPECT_EQ(stats->firings, 3 * iterations);
      if (expected.empty())
        expected = run.values;
      EXPECT_EQ(run.values, expected);
      for (const auto &perIteration : run.values)
        for (uint64_t v : perIteration)
          EXPECT_NE(v, kPoison);
    }
  }
}

TEST(ActorTest, IndependentChainsFollowAnyInterleaving) {
  // Two chains of ordered actors with no link between them: each chain
  // keeps its own order, but the list may put chain b ahead of chain a
  // (against the graph order) or run both ahead of their sends.
  std::vector<Node> nodes = {
      {"recvA", {}, 2, true},        {"workA", {0}, 2, false, 500},
      {"sendA", {1}, 2, true},       {"recvB", {}, 2, true},
      {"workB", {3}, 2, false, 500}, {"sendB", {4}, 2, true}};
  const int64_t iterations = 3;
  std::vector<OrderedFiring> bFirst, lookahead;
  for (int64_t it = 0; it < iterations; ++it)
    bFirst.insert(bFirst.end(), {{it, 3}, {it, 5}, {it, 0}, {it, 2}});
  lookahead = {{0, 0}, {0, 3}, {1, 0}, {1, 3}, {0, 2}, {0, 5},
               {2, 0}, {2, 3}, {1, 2}, {1, 5}, {2, 2}, {2, 5}};
  std::vector<std::vector<uint64_t>> expected;
  for (const auto &order : {std::vector<OrderedFiring>{}, bFirst, lookahead}) {
    SmallRun run(nodes, iterations);
    absl::StatusOr<RunStats> stats = run.run(iterations, order);
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_EQ(run.orderedFired,
              order.empty() ? defaultOrder(run.graph, iterations) : order);
    if (expected.empty())
      expected = run.values;
    EXPECT_EQ(run.values, expected);
  }
}

TEST(ActorTest, InvalidOrdersAreRejectedBeforeAnythingFires) {
  struct Case {
    std::vector<Node> nodes;
    int64_t iterations;
    std::vector<OrderedFiring> order;
    std::string error;
  };
  const uint32_t kCompute = 1;
  std::vector<Node> direct = {{"F", {}, 1, true}, {"B", {0}, 1, true}};
  std::vector<Case> cases = {
      {pipelineStage(2),
       2,
       {{0, kF}, {0, kB}, {1, kF}},
       "the order lacks iteration 1 of actor #2 'B'"},
      {pipelineStage(2),
       2,
       {{0, kF}, {0, kB}, {0, kF}, {1, kF}, {1, kB}},
       "order entry 2: iteration 0 of actor #0 'F' is listed twice (also at "
       "entry 0)"},
      {pipelineStage(2),
       2,
       {{0, kF}, {0, kCompute}, {0, kB}, {1, kF}, {1, kB}},
       "order entry 1: actor #1 'compute' is not ordered"},
      {pipelineStage(2),
       2,
       {{0, kF}, {0, 7}, {0, kB}, {1, kF}, {1, kB}},
       "order entry 1: names actor #7, but the graph has 3 actors"},
      {pipelineStage(2),
       2,
       {{0, kF}, {0, kB}, {1, kF}, {1, kB}, {2, kF}},
       "order entry 4: iteration 2 of actor #0 'F' is out of range; the run "
       "has 2 iterations"},
      {pipelineStage(2),
       2,
       {{-1, kF}, {0, kB}, {1, kF}, {1, kB}},
       "order entry 0: iteration -1 of actor #0 'F' is out of range"},
      {pipelineStage(2),
       2,
       {{0, kB}, {0, kF}, {1, kF}, {1, kB}},
       "order entry 0: iteration 0 of actor #2 'B' would deadlock: it "
       "depends on ordered actor #0 'F' (through actor #1 'compute'), whose "
       "iteration 0 comes later (entry 1)"},
      {pipelineStage(2),
       2,
       {{1, kF}, {0, kF}, {0, kB}, {1, kB}},
       "order entry 0: iteration 1 of actor #0 'F' would deadlock: it comes "
       "before iteration 0 of the same actor (entry 1)"},
      // F's one register holds iteration 0 until B reads it.
      {direct,
       2,
       {{0, 0}, {1, 0}, {0, 1}, {1, 1}},
       "order entry 1: iteration 1 of actor #0 'F' would deadlock: it waits "
       "for a free register until iteration 0 of ordered actor #1 'B' fires, "
       "which comes later (entry 2); the registers of actor #0 'F' (1) are "
       "full until then"},
      // The same through compute: F and compute hold one iteration each.
      {pipelineStage(1),
       3,
       {{0, kF}, {1, kF}, {2, kF}, {0, kB}, {1, kB}, {2, kB}},
       "order entry 2: iteration 2 of actor #0 'F' would deadlock: it waits "
       "for a free register until iteration 0 of ordered actor #2 'B' "
       "(through actor #1 'compute') fires, which comes later (entry 3); the "
       "registers of actor #0 'F' (1) and actor #1 'compute' (1) are full "
       "until then"},
  };
  // A's iteration 1 needs B's iteration 0 (a loop-carried edge).
  cases.push_back({{{"A", {}, 2, true, 0, {1}}, {"B", {}, 2, true}},
                   2,
                   {{0, 0}, {1, 0}, {0, 1}, {1, 1}},
                   "order entry 1: iteration 1 of actor #0 'A' would "
                   "deadlock: it depends on ordered actor #1 'B', whose "
                   "iteration 0 comes later (entry 2)"});
  for (const Case &c : cases) {
    SmallRun run(c.nodes, c.iterations);
    absl::Status verified = verifyOrder(run.graph, c.iterations, c.order);
    ASSERT_TRUE(absl::IsInvalidArgument(verified)) << verified;
    EXPECT_THAT(std::string(verified.message()), HasSubstr(c.error));
    absl::StatusOr<RunStats> stats = run.run(c.iterations, c.order);
    ASSERT_FALSE(stats.ok()) << c.error;
    EXPECT_EQ(stats.status(), verified);
    EXPECT_EQ(run.firings.load(), 0) << c.error;
  }
  // The shortest orders that free the registers in time are fine.
  {
    SmallRun run(direct, 2);
    EXPECT_TRUE(
        verifyOrder(run.graph, 2,
                    std::vector<OrderedFiring>{{0, 0}, {0, 1}, {1, 0}, {1, 1}})
            .ok());
  }
  {
    SmallRun run(pipelineStage(1), 3);
    EXPECT_TRUE(
        verifyOrder(run.graph, 3,
                    std::vector<OrderedFiring>{
                        {0, kF}, {1, kF}, {0, kB}, {2, kF}, {1, kB}, {2, kB}})
            .ok());
  }
}

} // namespace

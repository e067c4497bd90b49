//===- ActorTest.cpp - The actor core on random graphs
//---------------------===//
//
// Random DAGs with random register counts, stream counts and kernel delays
// always finish, and every actor sees exactly the values a sequential
// evaluation gives, on one device and on three devices whose ordered actors
// all-reduce across devices. Also: the register bound and the overlap it
// allows, failures (with peers released), and malformed graphs.
//
//===----------------------------------------------------------------------===//

#include "runtime/actor/ActorRuntime.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/SharedMemoryComm.h"

#include "gtest/gtest.h"

#include <atomic>
#include <memory>
#include <random>
#include <thread>

using namespace pc::runtime;
using namespace pc::runtime::actor;

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
};

Topology randomTopology(std::mt19937 &rng, bool collectives) {
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
        if (t.collective[a]) {
          h >>= 8;
          int64_t group[3] = {0, 1, 2};
          if (absl::Status s =
                  comm->allReduce(&h, 1, CommType::I64, pc::ReduceKind::Sum,
                                  std::span<const int64_t>(group, 3));
              !s.ok())
            return s;
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
      std::function<void(const absl::Status &)> onError = nullptr) {
    RunOptions options;
    options.iterations = iterations;
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

TEST(ActorTest, RandomDagsWithCollectivesOnThreeDevicesMatch) {
  for (int seed = 0; seed < 40; ++seed) {
    std::mt19937 rng(1000 + seed);
    Topology t = randomTopology(rng, /*collectives=*/true);
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

} // namespace

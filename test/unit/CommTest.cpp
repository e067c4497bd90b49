//===- CommTest.cpp - Collectives between CPU virtual devices -------------===//
//
// Every collective on random data, for groups of 1 to 5 members taken out
// of order from a world of 6, with uneven pieces: results against a direct
// computation, and bytes against the ring algorithms' counts, which the cost
// model's exact bytes also give (boxing/CostModel.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/SharedMemoryComm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <thread>

using namespace pc;
using namespace pc::runtime;

namespace {

/// Runs `fn(member index, endpoint)` on one thread per member of `group`.
/// A member whose checks fail aborts the world, so that the others do not
/// wait for it.
void onGroup(SharedMemoryWorld &world, const std::vector<int64_t> &group,
             const std::function<void(int64_t, Communicator &)> &fn) {
  std::vector<std::unique_ptr<Communicator>> ends;
  for (int64_t r : group)
    ends.push_back(world.endpoint(r));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < group.size(); ++i)
    threads.emplace_back([&, i] {
      fn(i, *ends[i]);
      if (testing::Test::HasFailure())
        world.abort(absl::AbortedError("a member's check failed"));
    });
  for (auto &t : threads)
    t.join();
}

std::vector<std::vector<int64_t>> groups() {
  return {{2}, {0, 1}, {5, 2, 4}, {3, 0, 1, 2}, {4, 1, 3, 0, 5}};
}

TEST(SharedMemoryComm, AllReduceEveryKind) {
  std::mt19937 rng(1);
  for (const auto &group : groups())
    for (ReduceKind kind :
         {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::Avg})
      for (int64_t count : {1, 7, 64}) {
        int64_t n = group.size();
        std::vector<std::vector<double>> data(n, std::vector<double>(count));
        for (auto &d : data)
          for (double &x : d)
            x = std::uniform_int_distribution<int>(-100, 100)(rng);
        std::vector<double> expected(count);
        for (int64_t e = 0; e < count; ++e) {
          double acc = data[0][e];
          for (int64_t m = 1; m < n; ++m) {
            double x = data[m][e];
            acc = kind == ReduceKind::Max   ? std::max(acc, x)
                  : kind == ReduceKind::Min ? std::min(acc, x)
                                            : acc + x;
          }
          expected[e] = kind == ReduceKind::Avg ? acc / n : acc;
        }
        SharedMemoryWorld world(6);
        std::vector<CommStats> stats(n);
        onGroup(world, group, [&](int64_t i, Communicator &c) {
          ASSERT_TRUE(
              c.allReduce(data[i].data(), count, CommType::F64, kind, group)
                  .ok());
          stats[i] = c.stats();
        });
        for (int64_t i = 0; i < n; ++i) {
          EXPECT_EQ(data[i], expected) << "member " << i;
          // Ring: a reduce-scatter and an all-gather over even chunks.
          int64_t mine = splitRange(count, n, i).size;
          int64_t prev = splitRange(count, n, (i + n - 1) % n).size;
          EXPECT_EQ(stats[i].bytesReceived, (2 * count - mine - prev) * 8);
        }
      }
}

TEST(SharedMemoryComm, AllGatherAndReduceScatterUneven) {
  std::mt19937 rng(2);
  for (const auto &group : groups()) {
    int64_t n = group.size();
    std::vector<int64_t> counts;
    for (int64_t i = 0; i < n; ++i)
      counts.push_back(std::uniform_int_distribution<int>(0, 9)(rng));
    int64_t total = 0;
    for (int64_t c : counts)
      total += c;
    std::vector<std::vector<int64_t>> pieces(n), full(n);
    std::vector<int64_t> concat;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t e = 0; e < counts[i]; ++e)
        pieces[i].push_back(i * 100 + e);
      concat.insert(concat.end(), pieces[i].begin(), pieces[i].end());
      full[i].resize(total);
      for (int64_t &x : full[i])
        x = std::uniform_int_distribution<int>(-9, 9)(rng);
    }
    SharedMemoryWorld world(6);
    std::vector<std::vector<int64_t>> gathered(n, std::vector<int64_t>(total));
    std::vector<std::vector<int64_t>> scattered(n);
    std::vector<CommStats> agStats(n), rsStats(n);
    onGroup(world, group, [&](int64_t i, Communicator &c) {
      ASSERT_TRUE(c.allGather(pieces[i].data(), gathered[i].data(), counts,
                              CommType::I64, group)
                      .ok());
      agStats[i] = c.stats();
      scattered[i].resize(counts[i]);
      ASSERT_TRUE(c.reduceScatter(full[i].data(), scattered[i].data(), counts,
                                  CommType::I64, ReduceKind::Sum, group)
                      .ok());
      rsStats[i] = c.stats();
    });
    int64_t offset = 0;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(gathered[i], concat);
      EXPECT_EQ(agStats[i].bytesReceived, (total - counts[i]) * 8);
      for (int64_t e = 0; e < counts[i]; ++e) {
        int64_t sum = 0;
        for (int64_t m = 0; m < n; ++m)
          sum += full[m][offset + e];
        EXPECT_EQ(scattered[i][e], sum);
      }
      offset += counts[i];
      // The ring brings every piece but the predecessor's.
      int64_t prev = counts[(i + n - 1) % n];
      EXPECT_EQ(rsStats[i].bytesReceived - agStats[i].bytesReceived,
                (n > 1 ? total - prev : 0) * 8);
    }
  }
}

/// Piece [off, off + len) of every member's `terms`, reduced in the order of
/// NCCL's ring for piece k: member k+1's term first, around to member k's.
std::vector<float> ringSum(const std::vector<std::vector<float>> &terms,
                           int64_t k, int64_t off, int64_t len) {
  int64_t n = terms.size();
  std::vector<float> acc(terms[(k + 1) % n].begin() + off,
                         terms[(k + 1) % n].begin() + off + len);
  for (int64_t t = 2; t <= n; ++t)
    for (int64_t e = 0; e < len; ++e)
      acc[e] += terms[(k + t) % n][off + e];
  return acc;
}

TEST(SharedMemoryComm, SumsKeepTheRingsOrderToTheBit) {
  // Terms of very different magnitudes, so that another order of the same
  // sums gives other bits.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-12, 12);
  for (const auto &group : groups()) {
    int64_t n = group.size(), count = 37;
    std::vector<std::vector<float>> data(n, std::vector<float>(count));
    for (auto &d : data)
      for (float &x : d)
        x = std::ldexp(mantissa(rng), exponent(rng));
    // Uneven pieces for the reduce-scatter, each reduced in place (its
    // output inside its input) and out of place.
    std::vector<int64_t> counts;
    for (int64_t i = 0; i < n; ++i)
      counts.push_back(i + 3 == n ? 0 : splitRange(count, n, i).size + i % 2);
    counts.back() +=
        count - std::accumulate(counts.begin(), counts.end(), int64_t(0));
    std::vector<int64_t> off(n + 1, 0);
    for (int64_t i = 0; i < n; ++i)
      off[i + 1] = off[i] + counts[i];
    std::vector<std::vector<float>> reduced = data, inPlace = data,
                                    scattered(n);
    SharedMemoryWorld world(6);
    onGroup(world, group, [&](int64_t i, Communicator &c) {
      ASSERT_TRUE(c.allReduce(reduced[i].data(), count, CommType::F32,
                              ReduceKind::Sum, group)
                      .ok());
      scattered[i].resize(counts[i]);
      ASSERT_TRUE(c.reduceScatter(data[i].data(), scattered[i].data(), counts,
                                  CommType::F32, ReduceKind::Sum, group)
                      .ok());
      ASSERT_TRUE(c.reduceScatter(inPlace[i].data(), inPlace[i].data() + off[i],
                                  counts, CommType::F32, ReduceKind::Sum, group)
                      .ok());
    });
    std::vector<float> expected;
    for (int64_t k = 0; k < n; ++k) {
      int64_t at = splitRange(count, n, k).offset;
      std::vector<float> chunk =
          ringSum(data, k, at, splitRange(count, n, k).size);
      expected.insert(expected.end(), chunk.begin(), chunk.end());
    }
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(reduced[i], expected) << "all-reduce, member " << i;
      std::vector<float> piece = ringSum(data, i, off[i], counts[i]);
      EXPECT_EQ(scattered[i], piece) << "reduce-scatter, member " << i;
      EXPECT_EQ(std::vector<float>(inPlace[i].begin() + off[i],
                                   inPlace[i].begin() + off[i + 1]),
                piece)
          << "in-place reduce-scatter, member " << i;
    }
  }
}

TEST(SharedMemoryComm, AllToAllBroadcastAndPointToPoint) {
  std::vector<int64_t> group = {3, 0, 1};
  int64_t n = group.size();
  // Member i sends (i + 1) * (j + 1) elements to member j, valued 10i + j.
  SharedMemoryWorld world(4);
  std::vector<std::vector<int32_t>> received(n);
  std::vector<CommStats> stats(n);
  onGroup(world, group, [&](int64_t i, Communicator &c) {
    std::vector<int64_t> sendCounts, recvCounts;
    std::vector<int32_t> in;
    for (int64_t j = 0; j < n; ++j) {
      sendCounts.push_back((i + 1) * (j + 1));
      recvCounts.push_back((j + 1) * (i + 1));
      in.insert(in.end(), (i + 1) * (j + 1), int32_t(10 * i + j));
    }
    received[i].resize((i + 1) * (n * (n + 1) / 2));
    ASSERT_TRUE(c.allToAll(in.data(), sendCounts, received[i].data(),
                           recvCounts, CommType::I32, group)
                    .ok());
    float value = i == 2 ? 7.5f : 0.0f;
    ASSERT_TRUE(c.broadcast(&value, 1, CommType::F32, 2, group).ok());
    EXPECT_EQ(value, 7.5f);
    // A ring of sends: each to the next member, then receive from the
    // previous; sends do not wait.
    int64_t mine = group[i] * 11, got = -1;
    ASSERT_TRUE(
        c.send(&mine, 1, CommType::I64, group[(i + 1) % n], /*tag=*/5).ok());
    ASSERT_TRUE(c.recv(&got, 1, CommType::I64, group[(i + n - 1) % n], 5).ok());
    EXPECT_EQ(got, group[(i + n - 1) % n] * 11);
    stats[i] = c.stats();
  });
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> expected;
    for (int64_t q = 0; q < n; ++q)
      expected.insert(expected.end(), (q + 1) * (i + 1), int32_t(10 * q + i));
    EXPECT_EQ(received[i], expected) << "member " << i;
    EXPECT_EQ(stats[i].calls["all_to_all"], 1);
  }
  // Member 0 received 2 + 3 elements of 4 bytes by all-to-all, the
  // broadcast value (4 bytes) and one int64.
  EXPECT_EQ(stats[0].bytesReceived, (2 + 3) * 4 + 4 + 8);
  EXPECT_EQ(stats[2].bytesReceived, (3 + 6) * 4 + 0 + 8);
  // The same bytes, by kind: {sent, received}.
  using Bytes = std::pair<int64_t, int64_t>;
  EXPECT_EQ(stats[0].bytes["all_to_all"], Bytes(5 * 4, 5 * 4));
  EXPECT_EQ(stats[0].bytes["broadcast"].second, 4);
  EXPECT_EQ(stats[0].bytes["recv"], Bytes(0, 8));
  EXPECT_EQ(stats[0].bytes["send"], Bytes(8, 0));
  EXPECT_EQ(stats[2].bytes["all_to_all"].second, 9 * 4);
}

TEST(SharedMemoryComm, DisagreementIsAnErrorForEveryone) {
  std::vector<int64_t> group = {0, 1, 2};
  SharedMemoryWorld world(3);
  std::vector<absl::Status> results(3);
  onGroup(world, group, [&](int64_t i, Communicator &c) {
    std::vector<double> data(i == 1 ? 5 : 4, 1.0);
    results[i] = c.allReduce(data.data(), data.size(), CommType::F64,
                             ReduceKind::Sum, group);
  });
  for (const absl::Status &s : results) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("different counts"), std::string::npos) << s;
  }
}

TEST(SharedMemoryComm, NotInTheGroupIsAnError) {
  SharedMemoryWorld world(3);
  auto c = world.endpoint(2);
  std::vector<int64_t> group = {0, 1};
  double x = 1;
  absl::Status s = c->allReduce(&x, 1, CommType::F64, ReduceKind::Sum, group);
  EXPECT_EQ(s.message(),
            "rank 2 calls all_reduce for the group [0, 1], which it is not in "
            "once");
}

TEST(SharedMemoryComm, AbortReleasesWaiters) {
  // Member 1 fails before its collective; member 0 must not wait forever.
  SharedMemoryWorld world(2);
  std::vector<int64_t> group = {0, 1};
  absl::Status waiter;
  std::thread t([&] {
    auto c = world.endpoint(0);
    double x = 1;
    waiter = c->allReduce(&x, 1, CommType::F64, ReduceKind::Sum, group);
  });
  std::thread u([&] {
    auto c = world.endpoint(1);
    int64_t got;
    absl::Status r = c->recv(&got, 1, CommType::I64, 0, 1);
    EXPECT_EQ(r.code(), absl::StatusCode::kDataLoss);
  });
  world.abort(absl::DataLossError("device 1 lost its input"));
  t.join();
  u.join();
  EXPECT_EQ(waiter.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(waiter.message().find("device 1 lost its input"),
            std::string::npos);
  // Released, so a runner can tell it from the cause and report the cause.
  EXPECT_TRUE(isReleasedByAbort(waiter));
  EXPECT_FALSE(isReleasedByAbort(absl::DataLossError("device 1 lost")));
}

} // namespace

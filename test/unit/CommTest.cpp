//===- CommTest.cpp - Collectives between CPU virtual devices -------------===//
//
// Every collective on random data, for groups of 1 to 5 members taken out
// of order from a world of 6, with uneven pieces: results against a direct
// computation, and bytes against the ring algorithms' counts, which the cost
// model's exact bytes also give (boxing/CostModel.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Reduce.h"
#include "runtime/cpu/SharedMemoryComm.h"
#include "runtime/device/HalfFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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

/// Bytes of `n` elements of `type` per member.
using Buffers = std::vector<std::vector<char>>;

/// What NCCL's ring makes of `bufs` (in place) over pieces at `off`, as
/// pc's ring did it step by step before the shared-memory collectives read
/// each other's buffers: in round s, member i combines its own piece
/// (i - s - 2) with its predecessor's partial, its own term first. Member i
/// ends with piece i reduced (an Avg divided).
void referenceRing(Buffers &bufs, const std::vector<int64_t> &off,
                   CommType type, ReduceKind kind) {
  int64_t n = bufs.size(), size = sizeOf(type);
  for (int64_t s = 0; s + 1 < n; ++s)
    for (int64_t i = 0; i < n; ++i) {
      int64_t k = ((i - s - 2) % n + n) % n;
      reduceInto(bufs[i].data() + off[k] * size,
                 bufs[(i - 1 + n) % n].data() + off[k] * size,
                 off[k + 1] - off[k], type, kind);
    }
  if (kind == ReduceKind::Avg)
    for (int64_t i = 0; i < n; ++i)
      divide(bufs[i].data() + off[i] * size, off[i + 1] - off[i], type, n);
}

/// Random terms of mixed magnitudes, so that another order of the same
/// sums gives other bits; with NaNs and zeros of both signs, which max and
/// min tell apart by the order of their operands.
Buffers randomTerms(int64_t n, int64_t count, CommType type,
                    std::mt19937 &rng) {
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-8, 8), special(0, 9);
  Buffers out(n, std::vector<char>(count * sizeOf(type)));
  for (auto &b : out)
    for (int64_t e = 0; e < count; ++e) {
      int which = special(rng);
      float x = which == 0   ? std::nanf("")
                : which == 1 ? 0.0f
                : which == 2 ? -0.0f
                             : std::ldexp(mantissa(rng), exponent(rng));
      if (type == CommType::F32) {
        std::memcpy(b.data() + 4 * e, &x, 4);
      } else {
        uint16_t h = floatToF16(x);
        std::memcpy(b.data() + 2 * e, &h, 2);
      }
    }
  return out;
}

TEST(SharedMemoryComm, ReductionsKeepTheRingsOrderToTheBit) {
  std::mt19937 rng(3);
  for (const auto &group : groups())
    for (CommType type : {CommType::F32, CommType::F16})
      for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min,
                              ReduceKind::Avg}) {
        int64_t n = group.size(), count = 37, size = sizeOf(type);
        Buffers data = randomTerms(n, count, type, rng);
        // Uneven pieces for the reduce-scatter, one of them empty.
        std::vector<int64_t> counts;
        for (int64_t i = 0; i < n; ++i)
          counts.push_back(
              n > 2 && i == 1 ? 0 : splitRange(count, n, i).size + i % 2);
        counts.back() +=
            count - std::accumulate(counts.begin(), counts.end(), int64_t(0));
        std::vector<int64_t> off(n + 1, 0), even(n + 1, 0);
        for (int64_t i = 0; i < n; ++i) {
          off[i + 1] = off[i] + counts[i];
          even[i + 1] = even[i] + splitRange(count, n, i).size;
        }
        Buffers reduced = data, inPlace = data, scattered(n);
        SharedMemoryWorld world(6);
        onGroup(world, group, [&](int64_t i, Communicator &c) {
          ASSERT_TRUE(
              c.allReduce(reduced[i].data(), count, type, kind, group).ok());
          scattered[i].resize(counts[i] * size);
          ASSERT_TRUE(c.reduceScatter(data[i].data(), scattered[i].data(),
                                      counts, type, kind, group)
                          .ok());
          // Its output inside its input.
          ASSERT_TRUE(c.reduceScatter(inPlace[i].data(),
                                      inPlace[i].data() + off[i] * size, counts,
                                      type, kind, group)
                          .ok());
        });
        // The all-reduce: the ring's reduce-scatter over even chunks, then
        // every member holds every reduced chunk.
        Buffers ring = data;
        referenceRing(ring, even, type, kind);
        std::vector<char> expected(count * size);
        for (int64_t k = 0; k < n; ++k)
          std::memcpy(expected.data() + even[k] * size,
                      ring[k].data() + even[k] * size,
                      (even[k + 1] - even[k]) * size);
        Buffers pieces = data;
        referenceRing(pieces, off, type, kind);
        for (int64_t i = 0; i < n; ++i) {
          EXPECT_EQ(reduced[i], expected) << "all-reduce, member " << i;
          std::vector<char> piece(pieces[i].begin() + off[i] * size,
                                  pieces[i].begin() + off[i + 1] * size);
          EXPECT_EQ(scattered[i], piece) << "reduce-scatter, member " << i;
          EXPECT_EQ(std::vector<char>(inPlace[i].begin() + off[i] * size,
                                      inPlace[i].begin() + off[i + 1] * size),
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

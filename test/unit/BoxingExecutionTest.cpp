//===- BoxingExecutionTest.cpp - Boxing plans on real collectives ---------===//
//
// Every boxing transition, executed with the ring collectives between CPU
// virtual devices (one thread per device) on random data: each device must
// end with exactly its piece of the target layout (partials reducing to the
// logical tensor), and the bytes each device sent and received must equal
// the planner's figures.
//
//===----------------------------------------------------------------------===//

#include "boxing/BoxingPlanner.h"
#include "runtime/comm/BoxingSteps.h"
#include "runtime/cpu/SharedMemoryComm.h"

#include "test/unit/SbpNotation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

using namespace pc;
using namespace pc::runtime;

namespace {

using namespace pc::sbp_notation;

std::vector<double> values(const HostTensor &t) {
  std::vector<double> v(t.numel());
  if (!v.empty())
    copyBytes(v.data(), t.data(), t.byteSize());
  return v;
}

/// The piece of `logical` a device at `coords` holds in `sbp`; partial
/// entries keep the value on the first member of sums and on all others.
HostTensor pieceOf(const HostTensor &logical, const Shape &mesh,
                   const NdSbp &sbp, const Shape &coords) {
  Box box = localBox(logical.shape, mesh, sbp, coords);
  HostTensor t = HostTensor::zeros(box.sizes, CommType::F64);
  copyBox(logical.bytes.data(), logical.shape, box.offsets, t.bytes.data(),
          t.shape, Shape(t.shape.size(), 0), t.shape, 8);
  for (size_t a = 0; a < sbp.size(); ++a)
    if (sbp[a].isPartial() && sbp[a].reduce == ReduceKind::Sum && coords[a])
      std::fill(t.bytes.begin(), t.bytes.end(), 0);
  return t;
}

void check(const Shape &shape, const Shape &mesh, const NdSbp &src,
           const NdSbp &dst, std::mt19937 &rng, boxing::Planner &planner) {
  SCOPED_TRACE(formatNdSbp(src) + " -> " + formatNdSbp(dst));
  const boxing::Plan &plan = planner.plan(shape, 8, mesh, src, dst);
  int64_t n = product(mesh);
  HostTensor logical = HostTensor::zeros(shape, CommType::F64);
  std::vector<double> data(logical.numel());
  for (double &x : data)
    x = std::uniform_int_distribution<int>(-50, 50)(rng);
  copyBytes(logical.data(), data.data(), logical.byteSize());

  MeshView view{mesh, {}};
  for (int64_t p = 0; p < n; ++p)
    view.ranks.push_back(n - 1 - p); // Positions need not be ranks.
  SharedMemoryWorld world(n);
  std::vector<HostTensor> finals(n);
  std::vector<CommStats> stats(n);
  std::vector<absl::Status> errors(n);
  std::vector<std::thread> threads;
  for (int64_t p = 0; p < n; ++p)
    threads.emplace_back([&, p] {
      Shape c = delinearize(mesh, p);
      auto comm = world.endpoint(view.ranks[p]);
      HostTensor t = pieceOf(logical, mesh, src, c);
      for (const boxing::Step &step : plan.steps) {
        absl::StatusOr<HostTensor> next =
            runStep(*comm, step, shape, view, c, t);
        if (!next.ok()) {
          errors[p] = next.status();
          world.abort(next.status());
          return;
        }
        t = std::move(*next);
      }
      finals[p] = std::move(t);
      stats[p] = comm->stats();
    });
  for (auto &t : threads)
    t.join();
  for (const absl::Status &s : errors)
    ASSERT_TRUE(s.ok()) << s;

  // Reduce the partials from the last axis inward, then compare.
  std::vector<std::vector<double>> at(n);
  for (int64_t p = 0; p < n; ++p)
    at[p] = values(finals[p]);
  for (size_t a = mesh.size(); a-- > 0;) {
    if (!dst[a].isPartial())
      continue;
    std::vector<std::vector<double>> next = at;
    for (int64_t p = 0; p < n; ++p) {
      Shape members =
          groupMembers(mesh, delinearize(mesh, p), Shape{int64_t(a)});
      for (size_t i = 0; i < at[p].size(); ++i) {
        double acc = at[members[0]][i];
        for (size_t m = 1; m < members.size(); ++m) {
          double x = at[members[m]][i];
          acc = dst[a].reduce == ReduceKind::Max ? std::max(acc, x) : acc + x;
        }
        next[p][i] = acc;
      }
    }
    at = std::move(next);
  }
  for (int64_t p = 0; p < n; ++p) {
    Shape c = delinearize(mesh, p);
    Box box = localBox(shape, mesh, dst, c);
    ASSERT_EQ(finals[p].shape, box.sizes) << "position " << p;
    HostTensor want = HostTensor::zeros(box.sizes, CommType::F64);
    copyBox(logical.bytes.data(), shape, box.offsets, want.bytes.data(),
            box.sizes, Shape(box.sizes.size(), 0), box.sizes, 8);
    ASSERT_EQ(at[p], values(want)) << "position " << p;
    boxing::RankBytes bytes = boxing::planBytes(plan, shape, 8, mesh, c);
    EXPECT_EQ(stats[p].bytesReceived, bytes.received) << "position " << p;
    EXPECT_EQ(stats[p].bytesSent, bytes.sent) << "position " << p;
    // Attributed to the kinds, the bytes add up to the totals.
    int64_t sent = 0, received = 0;
    for (auto &[kind, b] : stats[p].bytes) {
      sent += b.first;
      received += b.second;
    }
    EXPECT_EQ(sent, stats[p].bytesSent);
    EXPECT_EQ(received, stats[p].bytesReceived);
  }
}

TEST(BoxingExecution, EveryPairOnTwoByTwo) {
  std::mt19937 rng(5);
  boxing::Planner planner;
  std::vector<SbpEntry> entries = {B, P(), P(ReduceKind::Max), S(0), S(1)};
  for (Shape shape : {Shape{4, 6}, Shape{5, 3}})
    for (SbpEntry a : entries)
      for (SbpEntry b : entries)
        for (SbpEntry c : entries)
          for (SbpEntry d : entries) {
            check(shape, {2, 2}, {a, b}, {c, d}, rng, planner);
            if (testing::Test::HasFailure())
              return;
          }
}

TEST(BoxingExecution, Redistributions) {
  // Axis swaps, a move out of replicas (each receiver served by one of two
  // holders) and a three-axis permutation, uneven pieces included.
  std::mt19937 rng(8);
  boxing::Planner planner;
  auto expectRedistribution = [&](Shape shape, Shape mesh, NdSbp src,
                                  NdSbp dst) {
    const boxing::Plan &plan = planner.plan(shape, 8, mesh, src, dst);
    ASSERT_TRUE(std::any_of(plan.steps.begin(), plan.steps.end(),
                            [](const boxing::Step &s) {
                              return s.kind == TransitionKind::Redistribute;
                            }))
        << formatNdSbp(src) << " -> " << formatNdSbp(dst);
    check(shape, mesh, src, dst, rng, planner);
  };
  expectRedistribution({64, 64}, {2, 2}, {S(0), S(1)}, {S(1), S(0)});
  expectRedistribution({70, 50}, {2, 2}, {S(0), S(1)}, {S(1), S(0)});
  expectRedistribution({64, 64}, {2, 2}, {B, S(0)}, {S(0), S(0)});
  expectRedistribution({16, 16, 16}, {2, 2, 2}, {S(2), S(2), S(2)},
                       {S(0), S(1), S(0)});
  expectRedistribution({256, 512}, {2, 2, 2}, {B, S(0), P()},
                       {S(0), S(0), S(1)});
}

TEST(BoxingExecution, OneDimensionalAndThreeAxisMeshes) {
  std::mt19937 rng(6);
  boxing::Planner planner;
  std::vector<SbpEntry> entries = {B, P(), S(0), S(1)};
  for (Shape mesh : {Shape{3}, Shape{4}})
    for (SbpEntry a : entries)
      for (SbpEntry b : entries)
        check({10, 7}, mesh, {a}, {b}, rng, planner);
  for (int i = 0; i < 60 && !testing::Test::HasFailure(); ++i) {
    NdSbp src, dst;
    for (int a = 0; a < 3; ++a) {
      src.push_back(entries[rng() % entries.size()]);
      dst.push_back(entries[rng() % entries.size()]);
    }
    check({6, 5}, {2, 2, 2}, src, dst, rng, planner);
  }
}

} // namespace

//===- BoxingPlannerTest.cpp - The plans and costs of the boxing table ----===//

#include "boxing/BoxingPlanner.h"

#include "test/unit/SbpNotation.h"

#include <gtest/gtest.h>

using namespace pc;
using namespace pc::boxing;

namespace {

using namespace pc::sbp_notation;

/// "all-reduce(sum) over axes [0]; ..." without the layouts.
std::string kinds(const Plan &plan) {
  std::string s;
  for (const Step &step : plan.steps) {
    std::string full = step.str();
    s += (s.empty() ? "" : "; ") + full.substr(0, full.find(':'));
  }
  return s;
}

class PlannerTest : public ::testing::Test {
protected:
  const Plan &plan(Shape shape, Shape mesh, NdSbp src, NdSbp dst) {
    return planner.plan(shape, 4, mesh, src, dst);
  }
  Planner planner;
  const double L = CostParams().latencyBytes;
};

TEST_F(PlannerTest, OneDimensionalTable) {
  // |T| = 1024 floats = 4096 bytes on 4 devices.
  Shape t = {32, 32}, m = {4};
  const double T = 4096;
  const Plan &ar = plan(t, m, {P()}, {B});
  EXPECT_EQ(kinds(ar), "all-reduce(sum) over axes [0]");
  EXPECT_DOUBLE_EQ(ar.cost, 2.0 * 3 / 4 * T + L);

  const Plan &rs = plan(t, m, {P()}, {S(1)});
  EXPECT_EQ(kinds(rs), "reduce-scatter(sum, dim 1) over axes [0]");
  EXPECT_DOUBLE_EQ(rs.cost, 3.0 / 4 * T + L);

  const Plan &ag = plan(t, m, {S(0)}, {B});
  EXPECT_EQ(kinds(ag), "all-gather(dim 0) over axes [0]");
  EXPECT_DOUBLE_EQ(ag.cost, 3.0 / 4 * T + L);

  const Plan &a2a = plan(t, m, {S(0)}, {S(1)});
  EXPECT_EQ(kinds(a2a), "all-to-all(dim 0 -> dim 1) over axes [0]");
  EXPECT_DOUBLE_EQ(a2a.cost, 3.0 / 16 * T + L);

  const Plan &slice = plan(t, m, {B}, {S(0)});
  EXPECT_EQ(kinds(slice), "local-slice(dim 0) over axes [0]");
  EXPECT_EQ(slice.numCollectives(), 0);

  const Plan &bp = plan(t, m, {B}, {P()});
  EXPECT_EQ(kinds(bp), "local-partial(sum) over axes [0]");
  EXPECT_EQ(bp.numCollectives(), 0);

  const Plan &arMax = plan(t, m, {P(ReduceKind::Max)}, {B});
  EXPECT_EQ(kinds(arMax), "all-reduce(max) over axes [0]");

  EXPECT_TRUE(plan(t, m, {S(1)}, {S(1)}).steps.empty());
  EXPECT_TRUE(plan(t, m, {P()}, {P()}).steps.empty());
}

TEST_F(PlannerTest, PartialToSplitIsNeverAllReducePlusSlice) {
  // On one axis a reduce-scatter always beats an all-reduce and a slice; on
  // several axes it does once bandwidth dominates latency.
  for (Shape m : {Shape{2}, Shape{8}, Shape{2, 2}, Shape{2, 2, 2}})
    for (Shape t : {Shape{1024, 1024}, Shape{1000, 3}}) {
      if (m.size() > 1 && t[1] == 3)
        continue;
      NdSbp src(m.size(), P()), dst(m.size(), B);
      dst[0] = S(0);
      for (const Step &s : plan(t, m, src, dst).steps)
        EXPECT_NE(s.kind, StepKind::LocalSlice) << kinds(plan(t, m, src, dst));
    }
  for (int64_t p : {2, 3, 4, 8})
    for (Shape t : {Shape{4}, Shape{10, 3}})
      EXPECT_EQ(plan(t, {p}, {P()}, {S(0)}).steps[0].kind,
                StepKind::ReduceScatter);
}

TEST_F(PlannerTest, LatencyFavorsFewerCollectivesForTinyTensors) {
  // For 1 KiB the fixed cost of a collective outweighs the bytes: one
  // all-reduce over both axes and a free slice beat a reduce-scatter and an
  // all-gather.
  const Plan &p = plan({16, 16}, {2, 2}, {P(), P()}, {S(0), B});
  EXPECT_EQ(p.numCollectives(), 1);
  EXPECT_DOUBLE_EQ(p.cost, 2.0 * 3 / 4 * 1024 + L + 1);
}

TEST_F(PlannerTest, NestedSplitGathersAsOneGroup) {
  // [S(0), S(0)] -> [B, B]: the two axes split one dim hierarchically, which
  // is one split over the flattened group, so one all-gather over both.
  const Plan &p = plan({8, 4}, {2, 2}, {S(0), S(0)}, {B, B});
  EXPECT_EQ(kinds(p), "all-gather(dim 0) over axes [0, 1]");
  // Never an all-gather over the outer axis first: that would mix pieces.
  for (const Step &s : plan({10, 4}, {2, 3}, {S(0), S(0)}, {B, B}).steps)
    EXPECT_FALSE(s.axes == std::vector<int64_t>{0} &&
                 s.kind == StepKind::AllGather);
}

TEST_F(PlannerTest, AxisSwapIsOneRedistribution) {
  // [S(0), S(1)] -> [S(1), S(0)] on 2x4, 16x32: position (i, j) holds rows
  // 8i.. and columns 8j.. and wants rows 4j.. and columns 16i.., 64
  // elements, of which it holds 32 when j / 2 == i and none otherwise. One
  // all-to-all-v of boxes moves exactly the 64 the busiest lacks.
  const Plan &p = plan({16, 32}, {2, 4}, {S(0), S(1)}, {S(1), S(0)});
  EXPECT_EQ(kinds(p), "redistribute over axes [0, 1]");
  EXPECT_DOUBLE_EQ(p.cost, 64 * 4 + L);
  EXPECT_EQ(planBytes(p, Shape{16, 32}, 4, Shape{2, 4}, Shape{0, 0}).received,
            32 * 4);
  EXPECT_EQ(planBytes(p, Shape{16, 32}, 4, Shape{2, 4}, Shape{0, 2}).received,
            64 * 4);
  // Chains of 1-D collectives move more, with more latencies.
  CostParams collectivesOnly;
  collectivesOnly.redistribute = false;
  Planner chains(collectivesOnly);
  const Plan &c = chains.plan(Shape{16, 32}, 4, Shape{2, 4}, NdSbp{S(0), S(1)},
                              NdSbp{S(1), S(0)});
  EXPECT_GT(c.numCollectives(), 1) << kinds(c);
  EXPECT_GT(c.cost, p.cost + L);
  for (const Step &s : c.steps)
    EXPECT_NE(s.kind, StepKind::Redistribute);
}

TEST_F(PlannerTest, RedistributionFollowsTheReductionOfPartials) {
  // [P, S(0)] -> [S(1), S(0)]: the partial entry goes first (a collective;
  // nothing moves partial values point to point), and no step after it
  // sees a partial.
  const Plan &p = plan({64, 64}, {2, 2}, {P(), S(0)}, {S(1), S(0)});
  bool reduced = false;
  for (const Step &s : p.steps) {
    if (s.kind == StepKind::Redistribute) {
      EXPECT_TRUE(reduced) << kinds(p);
      for (SbpEntry e : s.before)
        EXPECT_FALSE(e.isPartial()) << kinds(p);
    }
    reduced |=
        s.kind == StepKind::ReduceScatter || s.kind == StepKind::AllReduce;
  }
  EXPECT_TRUE(reduced) << kinds(p);
}

TEST_F(PlannerTest, TiesKeepTheCollective) {
  // An all-gather and an all-to-all receive exactly what each rank lacks:
  // the redistribution would cost the same, and the collective stays.
  EXPECT_EQ(kinds(plan({32, 32}, {2, 2}, {S(0), S(1)}, {S(0), B})),
            "all-gather(dim 1) over axes [1]");
  EXPECT_EQ(kinds(plan({32, 32}, {2, 2}, {S(0), S(1)}, {S(0), S(0)})),
            "all-to-all(dim 1 -> dim 0) over axes [1]");
  // A move in which no rank receives anything stays local slicing.
  EXPECT_EQ(plan({32, 32}, {2, 2}, {B, B}, {S(1), S(0)}).numCollectives(), 0);
}

TEST_F(PlannerTest, PartialThenSplitToBroadcast) {
  // [P, S(0)] -> [B, B] on 2x2 with T = 4 MiB: all-reduce the half over
  // axis 0 (2·(1/2)·T/2) and all-gather over axis 1 ((1/2)·T). Gathering
  // first would double what the all-reduce moves.
  const double T = 4 << 20;
  const Plan &p = plan({1024, 1024}, {2, 2}, {P(), S(0)}, {B, B});
  EXPECT_EQ(kinds(p),
            "all-reduce(sum) over axes [0]; all-gather(dim 0) over axes [1]");
  EXPECT_DOUBLE_EQ(p.cost, T / 2 + T / 2 + 2 * L);
}

TEST_F(PlannerTest, TwoPartialsToSplitBroadcast) {
  // [P, P] -> [S(0), B] on 2x2: a reduce-scatter over all four devices, then
  // an all-gather of the quarters over axis 1, beats an all-reduce followed
  // by a reduce-scatter, and an all-reduce followed by a slice.
  const double T = 4 << 20;
  // (A reduce-scatter over axis 0 and an all-reduce of the halves over
  // axis 1 costs the same: T/2 + T/2.)
  const Plan &p = plan({1024, 1024}, {2, 2}, {P(), P()}, {S(0), B});
  EXPECT_EQ(p.numCollectives(), 2) << kinds(p);
  EXPECT_EQ(p.steps[0].kind, StepKind::ReduceScatter) << kinds(p);
  EXPECT_DOUBLE_EQ(p.cost, 3.0 / 4 * T + 1.0 / 2 * T / 2 + 2 * L);
}

TEST_F(PlannerTest, NonCommutingPartialsReduceInnermostFirst) {
  // The value of [P(max), P] is max over axis 0 of sums over axis 1, so the
  // sum must be reduced before the max.
  const Plan &p = plan({8}, {2, 2}, {P(ReduceKind::Max), P()}, {B, B});
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].axes, (std::vector<int64_t>{1}));
  EXPECT_EQ(p.steps[0].from(), P());
}

TEST_F(PlannerTest, UnevenPlansAreValid) {
  // 10 rows over 4: an all-gather still; the exact bytes differ per rank.
  const Plan &p = plan({10, 2}, {4}, {S(0)}, {B});
  EXPECT_EQ(kinds(p), "all-gather(dim 0) over axes [0]");
  // Ranks 0 and 1 hold 3 rows (6 floats), ranks 2 and 3 hold 2 rows.
  EXPECT_EQ(planBytes(p, Shape{10, 2}, 4, Shape{4}, Shape{0}).received,
            (20 - 6) * 4);
  EXPECT_EQ(planBytes(p, Shape{10, 2}, 4, Shape{4}, Shape{3}).received,
            (20 - 4) * 4);
}

TEST_F(PlannerTest, PlansAreCached) {
  const Plan &a = plan({64, 64}, {2, 2}, {P(), P()}, {B, B});
  const Plan &b = plan({64, 64}, {2, 2}, {P(), P()}, {B, B});
  EXPECT_EQ(&a, &b);
}

TEST_F(PlannerTest, TransferBetweenMeshesSendsOnlyNeededBytes) {
  // Stage 0 on ranks 0-3 as [S(0)] to stage 1 on ranks 4-5 as [S(0)]: each
  // destination gets its half from the two sources that hold it.
  MeshInfo src{{4}, {0, 1, 2, 3}}, dst{{2}, {4, 5}};
  TransferPlan t =
      planner.planTransfer(Shape{8, 4}, 4, src, NdSbp{S(0)}, dst, NdSbp{S(0)});
  EXPECT_TRUE(t.pre.steps.empty());
  EXPECT_TRUE(t.post.steps.empty());
  int64_t bytesTo0 = 0;
  for (const Transfer &x : t.transfers) {
    EXPECT_FALSE(x.local);
    if (x.dstPosition == 0)
      bytesTo0 += product(x.box.sizes) * 4;
  }
  EXPECT_EQ(bytesTo0, 4 * 4 * 4);
  EXPECT_EQ(t.transfers.size(), 4u);
}

TEST_F(PlannerTest, TransferOfPartialsReducesFirst) {
  // [P] on 2 ranks to [B] on 2 other ranks: reduce-scatter on the source,
  // then each destination fetches both halves.
  MeshInfo src{{2}, {0, 1}}, dst{{2}, {2, 3}};
  TransferPlan t =
      planner.planTransfer(Shape{8, 8}, 4, src, NdSbp{P()}, dst, NdSbp{B});
  EXPECT_FALSE(t.sent[0].isPartial());
  EXPECT_EQ(t.pre.steps.size(), 1u);
  EXPECT_EQ(t.pre.steps[0].kind, StepKind::ReduceScatter);
}

TEST_F(PlannerTest, TransferWithinSharedDevicesIsLocal) {
  // The same four ranks seen as 2x2 and as 4: S(0) over the flat mesh and
  // [S(0), S(0)] hold the same rows on the same ranks for an even shape.
  MeshInfo flat{{4}, {0, 1, 2, 3}}, square{{2, 2}, {0, 1, 2, 3}};
  TransferPlan t = planner.planTransfer(Shape{8, 4}, 4, flat, NdSbp{S(0)},
                                        square, NdSbp{S(0), S(0)});
  for (const Transfer &x : t.transfers)
    EXPECT_TRUE(x.local);
}

} // namespace

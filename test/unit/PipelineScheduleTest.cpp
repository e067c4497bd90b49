//===- PipelineScheduleTest.cpp - Schedules for every small p, m, v -------===//

#include "pipeline/Schedule.h"

#include <gtest/gtest.h>

using namespace pc::pipeline;

namespace {

Prediction checked(const ScheduleSpec &spec) {
  Schedule s = buildSchedule(spec);
  Prediction out;
  std::string error = checkSchedule(s, chainDependencies(spec), {}, out);
  EXPECT_EQ(error, "") << scheduleName(spec.kind) << " p=" << spec.devices
                       << " m=" << spec.microBatches
                       << " v=" << spec.virtualStages;
  return out;
}

Action F(int64_t c, int64_t mb) { return {ActionKind::F, c, mb}; }
Action B(int64_t c, int64_t mb) { return {ActionKind::B, c, mb}; }

} // namespace

// Every schedule with p <= 8, m <= 32 and v <= 4 (m < p and m % p != 0
// included) is built, passes the independent check, and predicts what the
// formulas say.
TEST(PipelineSchedule, EverySmallScheduleChecksAndMatchesTheFormulas) {
  for (int64_t p = 1; p <= 8; ++p)
    for (int64_t m = 1; m <= 32; ++m) {
      Prediction gpipe = checked({ScheduleKind::GPipe, p, m, 1});
      Prediction ofob = checked({ScheduleKind::OneFOneB, p, m, 1});
      Prediction zb = checked({ScheduleKind::ZeroBubbleH1, p, m, 1});
      // GPipe and 1F1B: (p - 1) / (m + p - 1), exactly, with B = 2F.
      EXPECT_NEAR(gpipe.bubble, classicBubble(p, m), 1e-12);
      EXPECT_NEAR(ofob.bubble, classicBubble(p, m), 1e-12)
          << "p=" << p << " m=" << m;
      // Stage 0 holds every micro-batch under GPipe, p of them under 1F1B,
      // and ZB-H1 keeps 1F1B's memory.
      EXPECT_EQ(gpipe.peakInFlight[0], m);
      EXPECT_EQ(ofob.peakInFlight[0], std::min(p, m));
      // ZB-H1 holds 1F1B's activations until B, and defers up to p - 1
      // weight gradients, whose inputs it keeps until W.
      for (int64_t d = 0; d < p; ++d)
        EXPECT_LE(zb.peakInFlight[d], std::min(p - d, m) + (p - 1));
      // ZB-H1 fills 1F1B's bubble with W.
      if (p > 1)
        EXPECT_LT(zb.bubble, ofob.bubble) << "p=" << p << " m=" << m;
      else
        EXPECT_EQ(zb.bubble, 0);
      for (int64_t v = 1; v <= 4; ++v) {
        Prediction inter = checked({ScheduleKind::Interleaved, p, m, v});
        if (p > 1 && m % p == 0)
          EXPECT_LE(inter.bubble, ofob.bubble + 1e-12)
              << "p=" << p << " m=" << m << " v=" << v;
      }
    }
}

// A forward-only pipeline (evaluation, inference) runs its forwards alone,
// for every schedule and every small p, m and v; a backward in its lists
// is an error, and so is a forward it never runs.
TEST(PipelineSchedule, ForwardOnlySchedulesRunEveryForwardOnce) {
  for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                         ScheduleKind::Interleaved, ScheduleKind::ZeroBubbleH1})
    for (int64_t p = 1; p <= 8; ++p)
      for (int64_t m = 1; m <= 32; ++m)
        for (int64_t v = 1; v <= (k == ScheduleKind::Interleaved ? 4 : 1);
             ++v) {
          ScheduleSpec spec{k, p, m, v, /*backward=*/false};
          Prediction out = checked(spec);
          Schedule s = buildSchedule(spec);
          for (int64_t d = 0; d < p; ++d) {
            EXPECT_EQ(int64_t(s.perDevice[d].size()), m * v);
            EXPECT_EQ(out.peakInFlight[d], 1);
          }
          // Without a backward, device d starts d steps late, and then
          // runs without a gap: the bubble of a forward-only pipeline.
          if (v == 1)
            EXPECT_NEAR(out.makespan, double(m + p - 1), 1e-12);
        }
  ScheduleSpec spec{ScheduleKind::OneFOneB, 2, 2, 1, /*backward=*/false};
  Schedule s = buildSchedule(spec);
  Prediction out;
  s.perDevice[1].push_back(B(1, 0));
  EXPECT_NE(
      checkSchedule(s, chainDependencies(spec), {}, out).find("forward-only"),
      std::string::npos);
  s = buildSchedule(spec);
  s.perDevice[0].pop_back();
  EXPECT_NE(checkSchedule(s, chainDependencies(spec), {}, out)
                .find("never runs F(0, mb 1)"),
            std::string::npos);
}

TEST(PipelineSchedule, OneFOneBHasItsClassicOrder) {
  Schedule s = buildSchedule({ScheduleKind::OneFOneB, 2, 4, 1});
  EXPECT_EQ(s.perDevice[0],
            (std::vector<Action>{F(0, 0), F(0, 1), B(0, 0), F(0, 2), B(0, 1),
                                 F(0, 3), B(0, 2), B(0, 3)}));
  EXPECT_EQ(s.perDevice[1],
            (std::vector<Action>{F(1, 0), B(1, 0), F(1, 1), B(1, 1), F(1, 2),
                                 B(1, 2), F(1, 3), B(1, 3)}));
}

TEST(PipelineSchedule, GPipeRunsEveryForwardFirst) {
  Schedule s = buildSchedule({ScheduleKind::GPipe, 2, 3, 1});
  EXPECT_EQ(s.perDevice[0], (std::vector<Action>{F(0, 0), F(0, 1), F(0, 2),
                                                 B(0, 0), B(0, 1), B(0, 2)}));
}

TEST(PipelineSchedule, BackwardsComeInMicroBatchOrder) {
  for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                         ScheduleKind::Interleaved, ScheduleKind::ZeroBubbleH1})
    for (int64_t p : {2, 3, 4})
      for (int64_t m : {1, 3, 5, 8}) {
        int64_t v = k == ScheduleKind::Interleaved ? 2 : 1;
        Schedule s = buildSchedule({k, p, m, v});
        for (const auto &list : s.perDevice) {
          std::map<std::pair<ActionKind, int64_t>, int64_t> last;
          for (const Action &a : list) {
            auto [it, fresh] = last.try_emplace({a.kind, a.stage}, -1);
            EXPECT_EQ(a.microBatch, it->second + 1) << describe(a);
            it->second = a.microBatch;
          }
        }
      }
}

TEST(PipelineSchedule, ACrossedOrderIsADeadlockNamingBothStages) {
  ScheduleSpec spec{ScheduleKind::OneFOneB, 2, 2, 1};
  Schedule s{spec,
             {{F(0, 0), B(0, 0), F(0, 1), B(0, 1)},
              {F(1, 0), F(1, 1), B(1, 0), B(1, 1)}}};
  Prediction out;
  std::string error = checkSchedule(s, chainDependencies(spec), {}, out);
  EXPECT_EQ(error,
            "the schedule deadlocks: device stage 0 waits in B(0, mb 0) for "
            "B(1, mb 0) on device stage 1, which it runs after F(1, mb 1); "
            "device stage 1 waits in F(1, mb 1) for F(0, mb 1) on device "
            "stage 0, which it runs after B(0, mb 0)");
}

TEST(PipelineSchedule, BrokenListsAreNamed) {
  ScheduleSpec spec{ScheduleKind::OneFOneB, 2, 2, 1};
  Prediction out;
  auto check = [&](std::vector<std::vector<Action>> lists) {
    return checkSchedule({spec, std::move(lists)}, chainDependencies(spec), {},
                         out);
  };
  EXPECT_EQ(check({{F(0, 0), F(0, 1), B(0, 0), B(0, 1)},
                   {F(1, 0), B(1, 1), F(1, 1), B(1, 0)}}),
            "device stage 1, entry 1 B(1, mb 1): it comes before F(1, mb 1)");
  EXPECT_EQ(check({{F(0, 0), F(0, 1), B(0, 0), B(0, 1), F(0, 1)},
                   {F(1, 0), B(1, 0), F(1, 1), B(1, 1)}}),
            "device stage 0, entry 4 F(0, mb 1): the action appears twice "
            "(first at entry 1)");
  EXPECT_EQ(check({{F(0, 0), F(0, 1), B(0, 0)},
                   {F(1, 0), B(1, 0), F(1, 1), B(1, 1)}}),
            "device stage 0 never runs B(0, mb 1)");
  EXPECT_EQ(check({{F(0, 0), F(0, 1), B(0, 0), B(0, 1)},
                   {F(1, 0), B(1, 0), F(0, 1), B(1, 1)}}),
            "device stage 1, entry 2 F(0, mb 1): model stage 0 runs on device "
            "stage 0");
  EXPECT_EQ(check({{F(0, 0), F(0, 1), B(0, 0), B(0, 1)},
                   {F(1, 0), B(1, 0), F(1, 2), B(1, 1)}}),
            "device stage 1, entry 2 F(1, mb 2): there is no micro-batch 2 "
            "(the step has 2)");
}

TEST(PipelineSchedule, ZeroBubbleDefersWeightGradients) {
  Schedule s = buildSchedule({ScheduleKind::ZeroBubbleH1, 4, 8, 1});
  Prediction zb;
  ASSERT_EQ(checkSchedule(s, chainDependencies(s.spec), {}, zb), "");
  // Stage 0 waits longest for its first B; it runs W in what would be the
  // bubble, so some W comes after a later micro-batch's B.
  const auto &list = s.perDevice[0];
  auto at = [&](Action a) {
    return std::find(list.begin(), list.end(), a) - list.begin();
  };
  EXPECT_GT(at({ActionKind::W, 0, 0}), at(B(0, 1)));
  Prediction ofob;
  Schedule one = buildSchedule({ScheduleKind::OneFOneB, 4, 8, 1});
  ASSERT_EQ(checkSchedule(one, chainDependencies(one.spec), {}, ofob), "");
  EXPECT_LT(zb.bubble, ofob.bubble);
  // The paper's ZB-H1 bubble with equal F, B and W: (p - 1)(F + B - W)
  // over a makespan of m (F + B + W) plus that: 3 / 27.
  EXPECT_NEAR(zb.bubble, 3.0 / 27.0, 1e-12);
}

TEST(PipelineSchedule, SvgHasARowPerStage) {
  Schedule s = buildSchedule({ScheduleKind::OneFOneB, 3, 4, 1});
  Prediction out;
  ASSERT_EQ(checkSchedule(s, chainDependencies(s.spec), {}, out), "");
  std::string svg = renderSvg(out.timeline, "1F1B <p=3>", 1);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("stage 2"), std::string::npos);
  EXPECT_NE(svg.find("1F1B &lt;p=3>"), std::string::npos);
  EXPECT_EQ(svg.find("stage 3"), std::string::npos);
}

TEST(PipelineSchedule, ShortNamesRoundTrip) {
  Action a{ActionKind::W, 12, 3};
  EXPECT_EQ(shortName(a), "W12.3");
  EXPECT_EQ(parseShortName("W12.3"), a);
  for (const char *bad : {"", "X1.2", "F1", "F.3", "F1.", "Fa.b", "F1.2x3"})
    EXPECT_FALSE(parseShortName(bad).has_value()) << bad;
}

// The measured bubble counts each rank's compute-stream idle time over the
// step, from the first action to the last; communication is not busy.
TEST(PipelineSchedule, MeasuredScheduleFromATrace) {
  std::vector<MeasuredOp> ops = {
      {0, "F0.0", true, 0, 10},   {0, "F0.1", true, 10, 10},
      {0, "F0.1", false, 20, 10}, {0, "B0.0", true, 30, 20},
      {1, "F1.0", true, 12, 8},   {1, "B1.0", true, 20, 10},
      {1, "", true, 0, 100}, // not an action: outside the step
  };
  Measured m = measureSchedule(ops);
  EXPECT_NEAR(m.bubble, ((1 - 40.0 / 50) + (1 - 18.0 / 50)) / 2, 1e-12);
  ASSERT_EQ(m.timeline.size(), 2u);
  ASSERT_EQ(m.timeline[0].size(), 3u);
  EXPECT_EQ(m.timeline[0][2].action, B(0, 0));
  EXPECT_EQ(m.timeline[0][2].start, 30);
  EXPECT_EQ(m.timeline[1][0].start, 12);
  EXPECT_EQ(m.computeUs[F(0, 1)], 10);
}

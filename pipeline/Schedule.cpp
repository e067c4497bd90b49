//===- Schedule.cpp - Building pipeline schedules -------------------------===//
//
// Every schedule is built the same way: a list scheduler steps through unit
// time, and each idle device picks its next action by the schedule's
// priorities among the actions whose inputs are ready. Only ready actions
// are ever picked, so the result cannot deadlock; the priorities and the
// in-flight limits make it GPipe, 1F1B, interleaved 1F1B or ZB-H1. Should
// a limit ever leave every device waiting (it does not for the limits
// below; the test sweeps p <= 8, m <= 32, v <= 4), the limits grow by one
// and the build starts over, so a schedule exists for every m, p and v.
//
//===----------------------------------------------------------------------===//

#include "pipeline/Schedule.h"

#include <algorithm>
#include <cassert>
#include <map>

namespace pc::pipeline {

char kindLetter(ActionKind k) {
  switch (k) {
  case ActionKind::F:
    return 'F';
  case ActionKind::B:
    return 'B';
  case ActionKind::W:
    return 'W';
  }
  return '?';
}

std::string describe(const Action &a) {
  return std::string(1, kindLetter(a.kind)) + "(" + std::to_string(a.stage) +
         ", mb " + std::to_string(a.microBatch) + ")";
}

std::string_view scheduleName(ScheduleKind k) {
  switch (k) {
  case ScheduleKind::GPipe:
    return "gpipe";
  case ScheduleKind::OneFOneB:
    return "1f1b";
  case ScheduleKind::Interleaved:
    return "interleaved";
  case ScheduleKind::ZeroBubbleH1:
    return "zb-h1";
  }
  return "?";
}

std::optional<ScheduleKind> parseScheduleKind(std::string_view name) {
  for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                         ScheduleKind::Interleaved, ScheduleKind::ZeroBubbleH1})
    if (scheduleName(k) == name)
      return k;
  return std::nullopt;
}

bool splitsBackward(ScheduleKind k) { return k == ScheduleKind::ZeroBubbleH1; }

std::string validate(const ScheduleSpec &spec) {
  if (spec.devices < 1)
    return "a pipeline needs at least 1 stage, not " +
           std::to_string(spec.devices);
  if (spec.microBatches < 1)
    return "a pipeline needs at least 1 micro-batch, not " +
           std::to_string(spec.microBatches);
  if (spec.virtualStages < 1)
    return "virtual stages must be at least 1, not " +
           std::to_string(spec.virtualStages);
  if (spec.virtualStages != 1 && spec.kind != ScheduleKind::Interleaved)
    return "only the interleaved schedule has virtual stages; " +
           std::string(scheduleName(spec.kind)) + " has 1, not " +
           std::to_string(spec.virtualStages);
  return {};
}

double classicBubble(int64_t devices, int64_t microBatches) {
  return double(devices - 1) / double(microBatches + devices - 1);
}

Dependencies chainDependencies(const ScheduleSpec &spec) {
  int64_t last = spec.modelStages() - 1;
  return [last](const Action &a) -> std::vector<Action> {
    switch (a.kind) {
    case ActionKind::F:
      if (a.stage == 0)
        return {};
      return {{ActionKind::F, a.stage - 1, a.microBatch}};
    case ActionKind::B:
      if (a.stage == last)
        return {{ActionKind::F, a.stage, a.microBatch}};
      return {{ActionKind::B, a.stage + 1, a.microBatch},
              {ActionKind::F, a.stage, a.microBatch}};
    case ActionKind::W:
      return {{ActionKind::B, a.stage, a.microBatch}};
    }
    return {};
  };
}

namespace {

using Slot = std::pair<int64_t, int64_t>; // (model stage, micro-batch)

/// One device's plan: the orders of its forwards and backwards, and how many
/// micro-batches may be in flight (forward done, backward not finished).
struct DevicePlan {
  std::vector<Slot> forwards, backwards;
  int64_t limit = 0;
  /// Zero-bubble: how many W may wait (p - 1, enough to fill the
  /// cool-down's bubble); a W beyond that runs first.
  int64_t maxPendingW = 0;
};

/// Megatron's interleaved order for device d: groups of p micro-batches,
/// each run through the device's model stages in turn (reversed for the
/// backwards). The last group holds what is left when p does not divide m.
std::vector<Slot> interleavedOrder(const ScheduleSpec &s, int64_t d,
                                   bool backward) {
  std::vector<Slot> order;
  int64_t p = s.devices, v = s.virtualStages;
  for (int64_t first = 0; first < s.microBatches; first += p) {
    int64_t end = std::min(first + p, s.microBatches);
    for (int64_t j = 0; j < v; ++j) {
      int64_t local = backward ? v - 1 - j : j;
      for (int64_t mb = first; mb < end; ++mb)
        order.push_back({local * p + d, mb});
    }
  }
  return order;
}

std::vector<DevicePlan> plans(const ScheduleSpec &s, int64_t extra) {
  std::vector<DevicePlan> out(s.devices);
  int64_t p = s.devices, m = s.microBatches, v = s.virtualStages;
  for (int64_t d = 0; d < p; ++d) {
    DevicePlan &plan = out[d];
    if (s.kind == ScheduleKind::Interleaved) {
      plan.forwards = interleavedOrder(s, d, false);
      plan.backwards = interleavedOrder(s, d, true);
      int64_t warmup = (p - d - 1) * 2 + (v - 1) * p;
      plan.limit = std::min(warmup + 1, m * v);
    } else {
      for (int64_t mb = 0; mb < m; ++mb) {
        plan.forwards.push_back({d, mb});
        plan.backwards.push_back({d, mb});
      }
      plan.limit = s.kind == ScheduleKind::GPipe ? m : std::min(p - d, m);
      plan.maxPendingW = p - 1;
    }
    plan.limit += extra;
  }
  return out;
}

/// The list scheduler. Returns nothing when every device waits on a limit.
std::optional<Schedule> listSchedule(const ScheduleSpec &s, int64_t extra) {
  const bool split = splitsBackward(s.kind);
  const bool gpipe = s.kind == ScheduleKind::GPipe;
  std::vector<DevicePlan> plan = plans(s, extra);
  Dependencies deps = chainDependencies(s);
  std::map<Action, int64_t> endTime; // actions started, and when they end
  struct State {
    size_t nextF = 0, nextB = 0;
    std::vector<Slot> pendingW; // B done, W not yet (split only)
    int64_t inFlight = 0, busyUntil = 0;
  };
  std::vector<State> st(s.devices);
  Schedule out{s, std::vector<std::vector<Action>>(s.devices)};
  const size_t perDevice =
      size_t(s.microBatches * s.virtualStages) * (split ? 3 : 2);

  auto ready = [&](const Action &a, int64_t t) {
    for (const Action &dep : deps(a)) {
      auto it = endTime.find(dep);
      if (it == endTime.end() || it->second > t)
        return false;
    }
    return true;
  };
  auto done = [&] {
    for (int64_t d = 0; d < s.devices; ++d)
      if (out.perDevice[d].size() < perDevice)
        return false;
    return true;
  };
  for (int64_t t = 0; !done(); ++t) {
    bool anyBusy = false, progressed = false;
    for (int64_t d = 0; d < s.devices; ++d) {
      State &x = st[d];
      if (x.busyUntil > t) {
        anyBusy = true;
        continue;
      }
      const DevicePlan &p = plan[d];
      std::optional<Action> pick;
      bool forwardsLeft = x.nextF < p.forwards.size();
      if (int64_t(x.pendingW.size()) > p.maxPendingW) {
        auto [c, mb] = x.pendingW.front();
        pick = Action{ActionKind::W, c, mb};
      }
      if (!pick && x.nextB < p.backwards.size() && !(gpipe && forwardsLeft)) {
        auto [c, mb] = p.backwards[x.nextB];
        Action b{ActionKind::B, c, mb};
        if (ready(b, t))
          pick = b;
      }
      if (!pick && forwardsLeft && x.inFlight < p.limit) {
        auto [c, mb] = p.forwards[x.nextF];
        Action f{ActionKind::F, c, mb};
        if (ready(f, t))
          pick = f;
      }
      if (!pick && !x.pendingW.empty()) {
        auto [c, mb] = x.pendingW.front();
        pick = Action{ActionKind::W, c, mb};
      }
      if (!pick)
        continue;
      switch (pick->kind) {
      case ActionKind::F:
        ++x.nextF;
        ++x.inFlight;
        break;
      case ActionKind::B:
        ++x.nextB;
        --x.inFlight;
        if (split)
          x.pendingW.push_back({pick->stage, pick->microBatch});
        break;
      case ActionKind::W:
        x.pendingW.erase(x.pendingW.begin());
        break;
      }
      // A merged backward is input and weight gradients: twice a forward.
      int64_t cost = pick->kind == ActionKind::B && !split ? 2 : 1;
      out.perDevice[d].push_back(*pick);
      endTime[*pick] = t + cost;
      x.busyUntil = t + cost;
      progressed = true;
    }
    if (!progressed && !anyBusy)
      return std::nullopt; // every device waits on something that never ends
  }
  return out;
}

/// Megatron's interleaved lists: `warmup` forwards, then one forward and
/// one backward in turn, then the remaining backwards. Device d warms up
/// with 2 (p - d - 1) + (v - 1) p forwards, plus `extra`.
Schedule interleavedLists(const ScheduleSpec &s, int64_t extra) {
  Schedule out{s, std::vector<std::vector<Action>>(s.devices)};
  int64_t p = s.devices, v = s.virtualStages, total = s.microBatches * v;
  for (int64_t d = 0; d < p; ++d) {
    std::vector<Slot> fwd = interleavedOrder(s, d, false);
    std::vector<Slot> bwd = interleavedOrder(s, d, true);
    int64_t warmup = std::min((p - d - 1) * 2 + (v - 1) * p + extra, total);
    auto &list = out.perDevice[d];
    size_t f = 0, b = 0;
    for (; f < size_t(warmup); ++f)
      list.push_back({ActionKind::F, fwd[f].first, fwd[f].second});
    while (b < bwd.size()) {
      if (f < fwd.size()) {
        list.push_back({ActionKind::F, fwd[f].first, fwd[f].second});
        ++f;
      }
      list.push_back({ActionKind::B, bwd[b].first, bwd[b].second});
      ++b;
    }
  }
  return out;
}

} // namespace

Schedule buildSchedule(const ScheduleSpec &spec) {
  assert(validate(spec).empty() && "buildSchedule needs a valid spec");
  if (!spec.backward) {
    // Nothing is held for a backward, so nothing limits the forwards in
    // flight: each device runs them as soon as their inputs come.
    Schedule s{spec, {}};
    for (const DevicePlan &plan : plans(spec, 0)) {
      std::vector<Action> &list = s.perDevice.emplace_back();
      for (auto [c, mb] : plan.forwards)
        list.push_back({ActionKind::F, c, mb});
    }
    return s;
  }
  if (spec.kind == ScheduleKind::Interleaved) {
    // With p not dividing m the fixed warm-up can cross a forward and a
    // backward between devices; a longer warm-up always works (at the
    // latest, every forward first), so the first that checks is taken.
    for (int64_t extra = 0;; ++extra) {
      Schedule s = interleavedLists(spec, extra);
      Prediction ignored;
      if (checkSchedule(s, chainDependencies(spec), {}, ignored).empty())
        return s;
    }
  }
  for (int64_t extra = 0;; ++extra)
    if (std::optional<Schedule> s = listSchedule(spec, extra))
      return std::move(*s);
}

} // namespace pc::pipeline

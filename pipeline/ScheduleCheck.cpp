//===- ScheduleCheck.cpp - Checking and predicting schedules --------------===//
//
// The check is independent of how a schedule was built: it takes any
// per-device lists (built, or written by hand in the IR) and replays them,
// each device starting its next action once the action's inputs exist. A
// replay that stops before the end has a cycle of waits, which is reported
// from the stuck devices.
//
//===----------------------------------------------------------------------===//

#include "pipeline/Schedule.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace pc::pipeline {

namespace {

double costOf(const Action &a, bool split, const ActionCosts &c) {
  if (c.of)
    return c.of(a);
  switch (a.kind) {
  case ActionKind::F:
    return c.f;
  case ActionKind::B:
    return split ? c.b : c.b + c.w;
  case ActionKind::W:
    return c.w;
  }
  return 0;
}

/// Every action once, on its device, F before B before W.
std::string checkLists(const Schedule &s,
                       const std::function<std::string(int64_t)> &name) {
  const ScheduleSpec &spec = s.spec;
  const bool split = splitsBackward(spec.kind);
  if (int64_t(s.perDevice.size()) != spec.devices)
    return "the schedule has " + std::to_string(s.perDevice.size()) +
           " device lists for " + std::to_string(spec.devices) + " stages";
  for (int64_t d = 0; d < spec.devices; ++d) {
    std::map<Action, size_t> at;
    for (size_t i = 0; i < s.perDevice[d].size(); ++i) {
      const Action &a = s.perDevice[d][i];
      std::string where =
          name(d) + ", entry " + std::to_string(i) + " " + describe(a) + ": ";
      if (a.stage < 0 || a.stage >= spec.modelStages())
        return where + "there is no model stage " + std::to_string(a.stage) +
               " (the pipeline has " + std::to_string(spec.modelStages()) + ")";
      if (a.stage % spec.devices != d)
        return where + "model stage " + std::to_string(a.stage) + " runs on " +
               name(a.stage % spec.devices);
      if (a.microBatch < 0 || a.microBatch >= spec.microBatches)
        return where + "there is no micro-batch " +
               std::to_string(a.microBatch) + " (the step has " +
               std::to_string(spec.microBatches) + ")";
      if (a.kind != ActionKind::F && !spec.backward)
        return where + "the pipeline is forward-only (no backward pass)";
      if (a.kind == ActionKind::W && !split)
        return where + std::string(scheduleName(spec.kind)) +
               " does not split the backward pass into B and W";
      if (!at.emplace(a, i).second)
        return where + "the action appears twice (first at entry " +
               std::to_string(at[a]) + ")";
      if (a.kind != ActionKind::F) {
        Action before{a.kind == ActionKind::B ? ActionKind::F : ActionKind::B,
                      a.stage, a.microBatch};
        if (!at.count(before))
          return where + "it comes before " + describe(before);
      }
    }
    for (int64_t c = d; c < spec.modelStages(); c += spec.devices)
      for (int64_t mb = 0; mb < spec.microBatches; ++mb)
        for (ActionKind k : {ActionKind::F, ActionKind::B, ActionKind::W}) {
          if ((k == ActionKind::W && !split) ||
              (k != ActionKind::F && !spec.backward))
            continue;
          Action a{k, c, mb};
          if (!at.count(a))
            return name(d) + " never runs " + describe(a);
        }
  }
  return {};
}

/// From a stuck replay: the cycle of waits, device by device.
std::string describeCycle(const Schedule &s, const std::vector<size_t> &next,
                          const std::map<Action, double> &end,
                          const Dependencies &deps,
                          const std::function<std::string(int64_t)> &name) {
  int64_t p = s.spec.devices;
  int64_t d = 0;
  while (next[d] >= s.perDevice[d].size())
    ++d;
  std::vector<int64_t> seen;
  std::vector<std::string> steps;
  while (std::find(seen.begin(), seen.end(), d) == seen.end()) {
    seen.push_back(d);
    const Action &a = s.perDevice[d][next[d]];
    Action missing = a;
    for (const Action &dep : deps(a))
      if (!end.count(dep)) {
        missing = dep;
        break;
      }
    int64_t e = missing.stage % p;
    const Action &blocker = s.perDevice[e][next[e]];
    std::string step = name(d) + " waits in " + describe(a) + " for " +
                       describe(missing) + " on " + name(e);
    if (!(blocker == missing))
      step += ", which it runs after " + describe(blocker);
    steps.push_back(step);
    d = e;
  }
  // Keep the cycle only: from the first visit of the device we came back to.
  size_t from = std::find(seen.begin(), seen.end(), d) - seen.begin();
  std::string out = "the schedule deadlocks: ";
  for (size_t i = from; i < steps.size(); ++i)
    out += (i == from ? "" : "; ") + steps[i];
  return out;
}

} // namespace

std::string checkSchedule(const Schedule &s, const Dependencies &deps,
                          const ActionCosts &costs, Prediction &out,
                          const std::function<std::string(int64_t)> &named) {
  auto name = named ? named : [](int64_t d) {
    return "device stage " + std::to_string(d);
  };
  if (std::string bad = validate(s.spec); !bad.empty())
    return bad;
  if (std::string bad = checkLists(s, name); !bad.empty())
    return bad;
  const bool split = splitsBackward(s.spec.kind);
  const int64_t p = s.spec.devices;
  std::map<Action, double> end;
  std::vector<size_t> next(p, 0);
  std::vector<double> clock(p, 0);
  out = Prediction{};
  out.timeline.assign(p, {});
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int64_t d = 0; d < p; ++d)
      while (next[d] < s.perDevice[d].size()) {
        const Action &a = s.perDevice[d][next[d]];
        double start = clock[d];
        bool ready = true;
        for (const Action &dep : deps(a)) {
          auto it = end.find(dep);
          if (it == end.end()) {
            ready = false;
            break;
          }
          start = std::max(start, it->second);
        }
        if (!ready)
          break;
        double stop = start + costOf(a, split, costs);
        end[a] = stop;
        clock[d] = stop;
        out.timeline[d].push_back({a, start, stop});
        ++next[d];
        progressed = true;
      }
  }
  for (int64_t d = 0; d < p; ++d)
    if (next[d] < s.perDevice[d].size())
      return describeCycle(s, next, end, deps, name);

  out.makespan = *std::max_element(clock.begin(), clock.end());
  double idle = 0;
  for (int64_t d = 0; d < p; ++d) {
    double busy = 0;
    int64_t held = 0, peak = 0;
    for (const TimedAction &t : out.timeline[d]) {
      busy += t.end - t.start;
      if (t.action.kind == ActionKind::F)
        peak = std::max(peak, ++held);
      // Its activations go at the end of the backward, or, forward-only,
      // of the forward.
      if (!s.spec.backward ||
          t.action.kind == (split ? ActionKind::W : ActionKind::B))
        --held;
    }
    out.peakInFlight.push_back(peak);
    idle += out.makespan > 0 ? 1 - busy / out.makespan : 0;
  }
  out.bubble = idle / double(p);
  return {};
}

std::string renderSvg(const std::vector<std::vector<TimedAction>> &timeline,
                      std::string_view title, int64_t virtualStages) {
  double makespan = 0;
  for (const auto &row : timeline)
    for (const TimedAction &t : row)
      makespan = std::max(makespan, t.end);
  const double width = 960, left = 90, rowHeight = 26, top = 40;
  const double scale = makespan > 0 ? (width - left - 10) / makespan : 1;
  const double height = top + rowHeight * double(timeline.size()) + 34;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
     << "\" height=\"" << height << "\" font-family=\"sans-serif\" "
     << "font-size=\"11\">\n"
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
     << "<text x=\"" << left << "\" y=\"20\" font-size=\"14\">";
  for (char c : title)
    os << (c == '<'   ? std::string("&lt;")
           : c == '&' ? std::string("&amp;")
                      : std::string(1, c));
  os << "</text>\n";
  auto colour = [](ActionKind k) {
    switch (k) {
    case ActionKind::F:
      return "#4e79a7";
    case ActionKind::B:
      return "#59a14f";
    case ActionKind::W:
      return "#f28e2b";
    }
    return "#999";
  };
  for (size_t d = 0; d < timeline.size(); ++d) {
    double y = top + rowHeight * double(d);
    os << "<text x=\"4\" y=\"" << y + rowHeight / 2 + 4 << "\">stage " << d
       << "</text>\n";
    for (const TimedAction &t : timeline[d]) {
      double x = left + t.start * scale, w = (t.end - t.start) * scale;
      os << "<rect x=\"" << x << "\" y=\"" << y + 2 << "\" width=\""
         << std::max(w - 1, 0.5) << "\" height=\"" << rowHeight - 4
         << "\" fill=\"" << colour(t.action.kind) << "\"/>\n";
      std::string label = std::to_string(t.action.microBatch);
      if (virtualStages > 1)
        label += "." + std::to_string(t.action.stage);
      if (w >= 7.0 * double(label.size()))
        os << "<text x=\"" << x + w / 2 << "\" y=\"" << y + rowHeight / 2 + 4
           << "\" fill=\"white\" text-anchor=\"middle\">" << label
           << "</text>\n";
    }
  }
  double y = top + rowHeight * double(timeline.size()) + 20;
  double x = left;
  for (ActionKind k : {ActionKind::F, ActionKind::B, ActionKind::W}) {
    os << "<rect x=\"" << x << "\" y=\"" << y - 10 << "\" width=\"12\" "
       << "height=\"12\" fill=\"" << colour(k) << "\"/><text x=\"" << x + 16
       << "\" y=\"" << y << "\">"
       << (k == ActionKind::F   ? "forward"
           : k == ActionKind::B ? "backward (B: input gradients)"
                                : "W: weight gradients")
       << "</text>\n";
    x += k == ActionKind::B ? 220 : 90;
  }
  os << "</svg>\n";
  return os.str();
}

} // namespace pc::pipeline

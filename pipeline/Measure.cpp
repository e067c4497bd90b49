//===- Measure.cpp - A schedule as it ran ---------------------------------===//
//
// From a traced step's op firings: each action's box (its compute ops'
// extent) per device stage, and the measured bubble, the share of the step
// a rank's compute stream spent idle, which the benchmarks compare with the
// predicted one.
//
//===----------------------------------------------------------------------===//

#include "pipeline/Schedule.h"

#include <algorithm>
#include <limits>
#include <map>

namespace pc::pipeline {

std::string shortName(const Action &a) {
  return std::string(1, kindLetter(a.kind)) + std::to_string(a.stage) + "." +
         std::to_string(a.microBatch);
}

std::optional<Action> parseShortName(std::string_view text) {
  if (text.size() < 4)
    return std::nullopt; // "F0.0" at least
  Action a;
  switch (text[0]) {
  case 'F':
    a.kind = ActionKind::F;
    break;
  case 'B':
    a.kind = ActionKind::B;
    break;
  case 'W':
    a.kind = ActionKind::W;
    break;
  default:
    return std::nullopt;
  }
  size_t dot = text.find('.');
  if (dot == std::string_view::npos || dot < 2 || dot + 1 >= text.size())
    return std::nullopt;
  auto number = [](std::string_view digits, int64_t &out) {
    if (digits.empty() || digits.size() > 18)
      return false;
    out = 0;
    for (char c : digits) {
      if (c < '0' || c > '9')
        return false;
      out = out * 10 + (c - '0');
    }
    return true;
  };
  if (!number(text.substr(1, dot - 1), a.stage) ||
      !number(text.substr(dot + 1), a.microBatch))
    return std::nullopt;
  return a;
}

Measured measureSchedule(const std::vector<MeasuredOp> &ops) {
  double first = std::numeric_limits<double>::infinity(), last = -first;
  std::map<int64_t, double> busy; // per rank
  std::map<int64_t, std::map<Action, std::pair<double, double>>> boxes;
  std::map<std::pair<int64_t, Action>, double> perRank;
  for (const MeasuredOp &op : ops) {
    std::optional<Action> a = parseShortName(op.action);
    if (!a)
      continue;
    double end = op.startUs + op.durationUs;
    first = std::min(first, op.startUs);
    last = std::max(last, end);
    if (!op.compute)
      continue;
    busy[op.rank] += op.durationUs;
    perRank[{op.rank, *a}] += op.durationUs;
    auto [it, fresh] = boxes[op.rank].try_emplace(*a, op.startUs, end);
    if (!fresh) {
      it->second.first = std::min(it->second.first, op.startUs);
      it->second.second = std::max(it->second.second, end);
    }
  }
  Measured out;
  if (boxes.empty())
    return out;
  for (auto &[key, us] : perRank)
    out.computeUs[key.second] = std::max(out.computeUs[key.second], us);
  double span = last - first;
  double idle = 0;
  for (auto &[rank, b] : busy)
    idle += span > 0 ? 1 - b / span : 0;
  out.bubble = idle / double(busy.size());
  // One row per device stage: the lowest rank whose lowest model stage is d.
  std::map<int64_t, int64_t> rowOf; // lowest model stage -> rank
  for (auto &[rank, actions] : boxes) {
    int64_t lowest = std::numeric_limits<int64_t>::max();
    for (auto &[a, box] : actions)
      lowest = std::min(lowest, a.stage);
    rowOf.try_emplace(lowest, rank);
  }
  for (auto &[stage, rank] : rowOf) {
    std::vector<TimedAction> row;
    for (auto &[a, box] : boxes[rank])
      row.push_back({a, box.first - first, box.second - first});
    std::sort(row.begin(), row.end(),
              [](const TimedAction &x, const TimedAction &y) {
                return x.start < y.start;
              });
    out.timeline.push_back(std::move(row));
  }
  return out;
}

} // namespace pc::pipeline

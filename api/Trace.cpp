//===- Trace.cpp - Traces and per-op times of a session's run -------------===//
//
// The trace is the Chrome JSON trace-event format: metadata events name
// each rank's process and stream threads, and "X" (complete) events carry
// each firing's start and duration. test/tools/pc-run.test reads it back.
//
//===----------------------------------------------------------------------===//

#include "api/Trace.h"

#include "pipeline/Schedule.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <optional>

namespace pc::api {

absl::Status writeTrace(const Report &report, const std::string &path) {
  llvm::json::Array events;
  auto meta = [&](const char *what, int64_t pid, int64_t tid,
                  std::string name) {
    events.push_back(llvm::json::Object{
        {"name", what},
        {"ph", "M"},
        {"pid", pid},
        {"tid", tid},
        {"args", llvm::json::Object{{"name", std::move(name)}}}});
  };
  for (auto &[rank, ops] : report.events) {
    meta("process_name", rank, 0, "rank " + std::to_string(rank));
    meta("thread_name", rank, 0, "compute");
    meta("thread_name", rank, 1, "comm");
    // The input stream (per-step copies) and the reading of the run's
    // inputs (a dataset's batches): what the loader costs the step.
    meta("thread_name", rank, 3, "input");
    // A pipelined step: a third row with one box per action (from its
    // first op to its last), F, B and W in their own colours.
    std::map<std::string, std::pair<double, double>> actions;
    for (const Event &e : ops)
      if (!e.action.empty()) {
        auto [it, fresh] =
            actions.try_emplace(e.action, e.startUs, e.startUs + e.durationUs);
        it->second.first = std::min(it->second.first, e.startUs);
        it->second.second =
            std::max(it->second.second, e.startUs + e.durationUs);
      }
    if (!actions.empty())
      meta("thread_name", rank, 2, "schedule");
    for (auto &[name, box] : actions) {
      std::optional<pipeline::Action> a = pipeline::parseShortName(name);
      if (!a)
        continue;
      const char *colour = a->kind == pipeline::ActionKind::F ? "rail_response"
                           : a->kind == pipeline::ActionKind::B
                               ? "thread_state_running"
                               : "thread_state_iowait";
      events.push_back(llvm::json::Object{
          {"name", std::string(1, pipeline::kindLetter(a->kind)) + " mb " +
                       std::to_string(a->microBatch)},
          {"cat", "schedule"},
          {"ph", "X"},
          {"pid", rank},
          {"tid", 2},
          {"ts", box.first},
          {"dur", box.second - box.first},
          {"cname", colour},
          {"args", llvm::json::Object{{"stage", a->stage},
                                      {"micro_batch", a->microBatch}}}});
    }
    for (const Event &e : ops) {
      llvm::json::Object args{{"step", e.iteration}, {"cpu_us", e.cpuUs}};
      if (!e.action.empty())
        args["action"] = e.action;
      // An op's detail is its types and location; the input row's, the
      // dataset samples each input's rows came from.
      if (!e.detail.empty())
        args[e.stream == "input" ? "read" : "op"] = e.detail;
      events.push_back(llvm::json::Object{{"name", e.name},
                                          {"cat", e.stream},
                                          {"ph", "X"},
                                          {"pid", rank},
                                          {"tid", e.stream == "comm"    ? 1
                                                  : e.stream == "input" ? 3
                                                                        : 0},
                                          {"ts", e.startUs},
                                          {"dur", e.durationUs},
                                          {"args", std::move(args)}});
    }
  }
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec)
    return absl::PermissionDeniedError("writeTrace: " + path + ": " +
                                       ec.message());
  out << llvm::formatv("{0}\n", llvm::json::Value(llvm::json::Object{
                                    {"traceEvents", std::move(events)}}));
  // A full disk shows at the flush; an unchecked stream error would abort
  // in the stream's destructor.
  out.close();
  if (out.has_error()) {
    std::string why = out.error().message();
    out.clear_error();
    return absl::DataLossError("writeTrace: " + path + ": " + why);
  }
  return absl::OkStatus();
}

std::vector<OpTime> opTimes(const Report &report) {
  std::map<std::string, OpTime> byName;
  for (auto &[rank, ops] : report.events)
    for (const Event &e : ops) {
      OpTime &t = byName[e.name];
      t.name = e.name;
      ++t.calls;
      t.totalUs += e.durationUs;
    }
  std::vector<OpTime> times;
  times.reserve(byName.size());
  for (auto &[name, t] : byName) {
    t.meanUs = t.totalUs / static_cast<double>(t.calls);
    times.push_back(std::move(t));
  }
  // Stable on the name order of the map: equal totals stay by name.
  std::stable_sort(
      times.begin(), times.end(),
      [](const OpTime &a, const OpTime &b) { return a.totalUs > b.totalUs; });
  return times;
}

} // namespace pc::api

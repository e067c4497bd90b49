//===- Trace.h - Traces and per-op times of a session's run -----*- C++ -*-===//
//
// What a traced run (RunOptions::trace) recorded, Report::events, made
// readable: a Chrome/Perfetto trace file (open it in ui.perfetto.dev or
// chrome://tracing; docs/runtime.md#reading-a-trace), and a table of where
// the time went, op by op. pc-run --trace writes the same file.
//
//===----------------------------------------------------------------------===//

#ifndef PC_API_TRACE_H
#define PC_API_TRACE_H

#include "api/Program.h"

#include "absl/status/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pc::api {

/// Writes `report`'s events as a Chrome/Perfetto trace to `path`: a process
/// per rank, a thread per stream (compute, comm), every actor firing a
/// complete event in µs with its iteration ("step"), pipeline action and
/// op detail as args; a pipelined run adds a "schedule" thread with a box
/// per action. An untraced report gives a trace with no events.
absl::Status writeTrace(const Report &report, const std::string &path);

/// The time of one op name (e.g. "pc.matmul") over a run: every firing on
/// every rank, stream and iteration, so a collective on 4 ranks counts 4
/// calls per iteration.
struct OpTime {
  std::string name;
  int64_t calls = 0;
  double totalUs = 0, meanUs = 0;
};

/// Per op name, from `report`'s events, by total time, largest first (ties
/// by name); empty when the run was not traced, and under mpirun on every
/// process but 0 (which alone assembles the events).
std::vector<OpTime> opTimes(const Report &report);

} // namespace pc::api

#endif // PC_API_TRACE_H

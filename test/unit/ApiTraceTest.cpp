//===- ApiTraceTest.cpp - Graphs that move, and a session's trace ---------===//
//
// A Graph returned by value from a builder function, or moved while its
// Values, Meshes and scopes are held, compiles and runs as the same graph
// built in place; a moved-from graph refuses to compile. A traced run's
// per-op times add up to its events, and its Chrome/Perfetto trace holds
// every event.
//
//===----------------------------------------------------------------------===//

#include "api/Program.h"
#include "api/Trace.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <unistd.h>

using namespace pc::api;
using pc::runtime::CommType;
using pc::runtime::HostTensor;

namespace {

HostTensor someInput() {
  HostTensor x = HostTensor::zeros({4, 6}, CommType::F32);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.as<float>()[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  return x;
}

/// An MLP on a 2x2 mesh, built in a function that returns its Graph. The
/// graph is moved mid-build, under a live scope, and built on with values
/// and a mesh taken before the move; the return moves it again when the
/// compiler does not elide it.
Graph buildMlp(bool moveMidway) {
  Graph first("mlp");
  Mesh m = first.mesh("m", {{"dp", 2}, {"tp", 2}});
  Graph::Scope scope = first.on(m);
  Value x = first.input("x", {4, 6}, DType::F32, Placement{m, {S(0), B}});
  Value w1 = first.param("w1", {6, 8}, DType::F32, Init::normal(0.3));
  Graph g = moveMidway ? std::move(first) : Graph("unused");
  Graph &b = moveMidway ? g : first;
  Value h = b.relu(b.matmul(x, b.toSbp(w1, {B, S(1)})));
  Value w2 = b.param("w2", {8, 3}, DType::F32, Init::normal(0.3));
  b.output("y", b.matmul(h, w2));
  if (moveMidway)
    return g;
  return first;
}

/// Runs `g` on `someInput()`, traced, for `iterations`; the session.
std::unique_ptr<Session> runTraced(Graph &g, int64_t iterations = 1) {
  absl::StatusOr<Program> program = compile(g);
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok())
    return nullptr;
  absl::StatusOr<std::unique_ptr<Session>> s = Session::create(*program);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok())
    return nullptr;
  EXPECT_TRUE((*s)->feed("x", someInput()).ok());
  RunOptions options;
  options.trace = true;
  options.iterations = iterations;
  absl::Status run = (*s)->run(options);
  EXPECT_TRUE(run.ok()) << run;
  return *std::move(s);
}

TEST(ApiTraceTest, AGraphReturnedByValueCompilesAndRuns) {
  Graph moved = buildMlp(/*moveMidway=*/true);
  ASSERT_TRUE(moved.status().ok()) << moved.status();
  EXPECT_EQ(moved.name(), "mlp");
  Graph inPlace = buildMlp(/*moveMidway=*/false);
  ASSERT_TRUE(inPlace.status().ok()) << inPlace.status();
  EXPECT_EQ(moved.str(), inPlace.str());

  // Move-assigned over another graph, it is still the same graph.
  Graph target("other");
  target = std::move(moved);
  EXPECT_EQ(target.name(), "mlp");
  std::unique_ptr<Session> a = runTraced(target);
  std::unique_ptr<Session> b = runTraced(inPlace);
  ASSERT_TRUE(a && b);
  absl::StatusOr<HostTensor> ya = a->fetch("y"), yb = b->fetch("y");
  ASSERT_TRUE(ya.ok() && yb.ok());
  EXPECT_EQ(ya->shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(ya->bytes, yb->bytes);

  // The moved-from graph is empty, and says so rather than crash.
  EXPECT_EQ(moved.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(moved.input("z", {2}, DType::F32).valid());
  absl::StatusOr<Program> none = compile(moved);
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("moved from"), std::string::npos)
      << none.status();
  // Values still name their graph: one of another graph is refused.
  Graph other("other");
  Value foreign = other.input("x", {4, 6}, DType::F32);
  EXPECT_FALSE(target.relu(foreign).valid());
  EXPECT_NE(target.status().message().find("belongs to another graph"),
            std::string::npos)
      << target.status();
}

TEST(ApiTraceTest, OpTimesAddUpToTheEvents) {
  Graph g = buildMlp(/*moveMidway=*/false);
  std::unique_ptr<Session> s = runTraced(g, /*iterations=*/2);
  ASSERT_TRUE(s);
  Report report = s->report();
  ASSERT_EQ(report.events.size(), 4u); // a rank per device
  std::map<std::string, int64_t> calls;
  std::map<std::string, double> total;
  for (auto &[rank, events] : report.events)
    for (const Event &e : events) {
      ++calls[e.name];
      total[e.name] += e.durationUs;
    }
  std::vector<OpTime> times = opTimes(report);
  ASSERT_EQ(times.size(), calls.size());
  for (size_t i = 0; i < times.size(); ++i) {
    const OpTime &t = times[i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.calls, calls[t.name]);
    EXPECT_DOUBLE_EQ(t.totalUs, total[t.name]);
    EXPECT_DOUBLE_EQ(t.meanUs, t.totalUs / t.calls);
    if (i > 0)
      EXPECT_GE(times[i - 1].totalUs, t.totalUs);
  }
  // Two matmuls per rank, two iterations, four ranks.
  auto matmul = std::find_if(times.begin(), times.end(), [](const OpTime &t) {
    return t.name == "pc.matmul";
  });
  ASSERT_NE(matmul, times.end());
  EXPECT_EQ(matmul->calls, 2 * 2 * 4);

  // Ties are ordered by name; an untraced run has no times.
  Report tied;
  tied.events[0] = {Event{"b", "compute", 0, 0, 5}, Event{"a", "comm", 0, 1, 5},
                    Event{"c", "compute", 0, 2, 7}};
  std::vector<OpTime> ordered = opTimes(tied);
  ASSERT_EQ(ordered.size(), 3u);
  EXPECT_EQ(ordered[0].name, "c");
  EXPECT_EQ(ordered[1].name, "a");
  EXPECT_EQ(ordered[2].name, "b");
  EXPECT_TRUE(opTimes(Report()).empty());
}

TEST(ApiTraceTest, TheTraceHoldsEveryEvent) {
  Graph g = buildMlp(/*moveMidway=*/false);
  std::unique_ptr<Session> s = runTraced(g, /*iterations=*/2);
  ASSERT_TRUE(s);
  Report report = s->report();
  std::string path = (std::filesystem::temp_directory_path() /
                      ("pc-api-trace-" + std::to_string(::getpid()) + ".json"))
                         .string();
  ASSERT_TRUE(writeTrace(report, path).ok());
  auto buffer = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(buffer);
  std::filesystem::remove(path);
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  const llvm::json::Array *events =
      json->getAsObject()->getArray("traceEvents");
  ASSERT_TRUE(events);

  size_t want = 0;
  for (auto &[rank, ops] : report.events)
    want += ops.size();
  size_t complete = 0;
  std::set<std::string> processes, threads;
  std::set<int64_t> steps;
  for (const llvm::json::Value &v : *events) {
    const llvm::json::Object &e = *v.getAsObject();
    llvm::StringRef ph = *e.getString("ph");
    if (ph == "M") {
      std::string name = e.getObject("args")->getString("name")->str();
      (*e.getString("name") == "process_name" ? processes : threads)
          .insert(name);
      continue;
    }
    ASSERT_EQ(ph, "X");
    ++complete;
    EXPECT_GE(*e.getNumber("dur"), 0);
    steps.insert(*e.getObject("args")->getInteger("step"));
    // Compute ops on thread 0, collectives on thread 1.
    if (*e.getString("name") == "pc.matmul") {
      EXPECT_EQ(*e.getInteger("tid"), 0);
      EXPECT_EQ(*e.getString("cat"), "compute");
      EXPECT_TRUE(e.getObject("args")->getString("op"));
    }
  }
  EXPECT_EQ(complete, want);
  EXPECT_EQ(processes,
            (std::set<std::string>{"rank 0", "rank 1", "rank 2", "rank 3"}));
  EXPECT_EQ(threads, (std::set<std::string>{"compute", "comm", "input"}));
  EXPECT_EQ(steps, (std::set<int64_t>{0, 1}));

  // No directory to write into: an error naming the call and the file.
  absl::Status bad = writeTrace(report, "/nonexistent-dir/trace.json");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.message().rfind("writeTrace: /nonexistent-dir/trace.json: ", 0),
            0u)
      << bad;
}

} // namespace

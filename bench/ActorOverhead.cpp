//===- ActorOverhead.cpp - Cost of one actor firing with empty kernels ----===//
//
// The actor core's overhead per firing (dispatch, the Req/Ack/Done messages,
// the stream hand-off and the callback) with kernels that do nothing, on
// three graph shapes of one device, best of N runs each:
//  - chain:  16 actors in a line on one compute stream;
//  - two-streams: the same line alternating between a compute and a
//    communication stream (a hand-off between threads at every edge);
//  - fan: 1 source, 14 independent actors, 1 sink, on one stream.
// Each runs 2000 iterations with 2 registers per actor. The baseline, in
// the same run, is the floor any asynchronous design pays: enqueueing the
// same number of empty tasks plus callbacks on one stream and waiting. The
// target is under 5 µs per firing.
//
//   build/bench/pc-bench-actor-overhead [RUNS]
//
//===----------------------------------------------------------------------===//

#include "runtime/actor/ActorRuntime.h"
#include "runtime/cpu/CpuDevice.h"

#include "bench/Timing.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace pc::runtime;
using namespace pc::runtime::actor;

namespace {

constexpr int kActors = 16;
constexpr int64_t kIterations = 2000;

ActorGraph build(const char *shape) {
  ActorGraph g;
  auto empty = [](int64_t) { return absl::OkStatus(); };
  std::string s = shape;
  for (uint32_t i = 0; i < kActors; ++i) {
    ActorSpec a;
    a.name = "a" + std::to_string(i);
    a.registers = 2;
    a.fire = empty;
    if (s == "fan")
      a.inputs = i == 0 ? std::vector<uint32_t>{}
                 : i == kActors - 1
                     ? [] {
                         std::vector<uint32_t> all;
                         for (uint32_t k = 1; k < kActors - 1; ++k)
                           all.push_back(k);
                         return all;
                       }()
                     : std::vector<uint32_t>{0};
    else if (i)
      a.inputs = {i - 1};
    a.stream = s == "two-streams" ? i % 2 : 0;
    g.add(std::move(a));
  }
  return g;
}

} // namespace

int main(int argc, char **argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  CpuStream compute("compute"), comm("comm");
  Stream *streams[] = {&compute, &comm};
  const int64_t firings = kActors * kIterations;

  double floor = pc::bench::best(runs, [&] {
    for (int64_t i = 0; i < firings; ++i) {
      compute.enqueue([] { return absl::OkStatus(); });
      compute.enqueueCallback([](const absl::Status &) {});
    }
    (void)compute.synchronize();
  });
  std::printf("baseline (empty task + callback on a stream): %.3f us per "
              "task\n",
              floor / firings * 1e6);
  for (const char *shape : {"chain", "two-streams", "fan"}) {
    ActorGraph g = build(shape);
    RunOptions options;
    options.iterations = kIterations;
    bool ok = true;
    double t =
        pc::bench::best(runs, [&] { ok &= run(g, streams, options).ok(); });
    if (!ok) {
      std::fprintf(stderr, "%s: the run failed\n", shape);
      return 1;
    }
    std::printf("%-12s %.3f us per firing (%lld firings), %.2fx the "
                "baseline\n",
                shape, t / firings * 1e6, static_cast<long long>(firings),
                t / floor);
  }
  return 0;
}

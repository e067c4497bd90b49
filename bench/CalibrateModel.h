//===- CalibrateModel.h - A spec, fitted with pc-simulate -------*- C++ -*-===//
//
// pc-bench-calibrate's spec (its figures and JSON), pc-simulate over it,
// the bisection that fits a figure to a measured time, and a training
// step's firing cost.
//
//===----------------------------------------------------------------------===//

#ifndef PC_BENCH_CALIBRATEMODEL_H
#define PC_BENCH_CALIBRATEMODEL_H

#include "absl/status/statusor.h"

#include <cstdio>
#include <string>

namespace pc::calibrate {

/// The figures of a spec, and its JSON (docs/planning.md).
struct Figures {
  int devices = 1, threads = 1, concurrent = 1;
  double flops = 0, memory = 0, bandwidth = 0;
  double beta = 0, alpha = 0, call = 0, p2p = 0, p2pWork = 0, firing = 0;
  double latencyBusy = 1, coreEfficiency = 1, wakeWork = 0, queuedShare = 1;
  double stragglerLag = 0;
  double kernelInStep = 1;

  std::string json() const {
    std::string out;
    auto add = [&](const char *format, auto... args) {
      char line[512];
      std::snprintf(line, sizeof(line), format, args...);
      out += line;
    };
    add("{\n  \"name\": \"%d CPU virtual devices (%d threads each), "
        "calibrated by pc-bench-calibrate\",\n",
        devices, threads);
    add("  \"nodes\": 1,\n  \"devices_per_node\": %d,\n", devices);
    add("  \"concurrent_devices\": %d,\n", concurrent);
    add("  \"device\": {\n    \"name\": \"CPU virtual device\",\n"
        "    \"peak_flops\": {\"f32\": %.4g, \"bf16\": %.4g},\n"
        "    \"memory\": %.4g,\n    \"memory_bandwidth\": %.4g\n  },\n",
        flops, flops, memory, bandwidth);
    if (devices > 1) {
      add("  \"intra_node\": {\"kind\": \"shared-memory\", \"bandwidth\": "
          "%.4g, \"latency\": %.4g",
          beta, alpha);
      if (call > 0)
        add(", \"call_latency\": %.4g", call);
      if (p2p > 0)
        add(", \"p2p_latency\": %.4g", p2p);
      if (p2pWork > 0)
        add(", \"p2p_work\": %.4g", p2pWork);
      if (latencyBusy < 1)
        add(", \"latency_busy\": %.3g", latencyBusy);
      if (queuedShare < 1)
        add(", \"queued_share\": %.3g", queuedShare);
      if (stragglerLag > 0)
        add(", \"straggler_lag\": %.3g", stragglerLag);
      out += "},\n";
    }
    add("  \"efficiency\": {\n    \"matmul\": 1,\n    \"memory\": 1,\n"
        "    \"collective\": 1,\n    \"kernel_latency\": %.4g,\n",
        firing);
    if (coreEfficiency < 1)
      add("    \"shared_cores\": %.3g,\n", coreEfficiency);
    if (wakeWork > 0)
      add("    \"wake_work\": %.4g,\n", wakeWork);
    if (kernelInStep != 1)
      add("    \"kernel_in_step\": %.3g,\n", kernelInStep);
    out += "    \"usable_memory\": 0.8\n  }\n}\n";
    return out;
  }
};

/// The value of `field` in [lo, hi] at which pc-simulate predicts
/// `measured` for `src`, by bisection: the prediction grows with it. The
/// ops are profiled once, so that every step of it sees the same times.
absl::StatusOr<double> fit(Figures figures, double Figures::*field, double lo,
                           double hi, const std::string &src, double measured);

/// What a firing of a training step costs beyond its kernel: `devices`
/// sessions of one device each train a small residual MLP at once (the
/// threads of `devices` devices, and no collectives), and each step's
/// time, less its kernels' (an op profile, as pc-run --profile-ops times
/// them), is shared among its firings (as pc-simulate counts them). The
/// step's time is its seconds of the host's cores with `inCores` (devices
/// sharing the cores, where the simulator counts work on them), else its
/// wall time (a device on cores of its own). `busyCores`: the cores the
/// sessions kept busy on average. The MLP trains at two batch sizes, with
/// the same firings: the larger's extra step time over its extra profiled
/// kernel time is `kernelRatio` (kernel_in_step, in [1, 2]: a kernel runs
/// slower in a step, among the other devices' threads, than its profile
/// says), by which the kernels are
/// scaled before the rest is shared among the firings.
absl::StatusOr<double> trainingFiring(int devices, int threads,
                                      const Figures &figures, bool inCores,
                                      double *busyCores = nullptr,
                                      double *kernelRatio = nullptr);

/// What a pipeline's hop costs the host's cores (p2p_work, with more
/// devices than cores): a residual MLP of a block per stage, cut into
/// `devices` stages, trains with 1F1B over 2 micro-batches per stage, and
/// its step's seconds of the cores, less the rest of its work as
/// pc-simulate counts it over `figures` (kernels, firings, the bytes of
/// its transfers), are shared among its hops (`*hops`, when given). The
/// ring of hopLatency gives a hop 1.5-2x that: there every device sleeps
/// between tokens, while a stage most often finds its micro-batch there.
absl::StatusOr<double> pipelineHopWork(int devices, int threads,
                                       const Figures &figures,
                                       int *hops = nullptr);

} // namespace pc::calibrate

#endif // PC_BENCH_CALIBRATEMODEL_H

//===- Calibrate.cpp - A cluster spec for this machine's CPU devices ------===//
//
//   build/bench/pc-bench-calibrate [--devices N] [--verbose] >
//   planner/clusters/cpu-virtual.json
//
// Measures what the planner's cost model needs for N CPU virtual devices
// in one process, as pc-run runs them: each device's large-matmul rate
// (OpenBLAS sgemm with the device's share of the cores) and memory
// bandwidth (memcpy), on one device alone; how many devices the host's
// cores run at once at those rates (concurrent_devices: the simulator
// shares the cores among the busy ones); and, with every device taking
// part, each in wall time and in seconds of the host's cores (the
// process's CPU time): the cost of a tiny op's firing (a chain of 256
// tiny ops compiled and run by the actor runtime, less the kernel's own
// time as pc-run --profile-ops measures it; the fits below use it), the
// shared-memory communicator's all-reduce bandwidth (direct calls) and
// latency (a compiled chain of tiny all-reduces, as the runtime fires
// them: the members meet from their own streams; with 4 or more devices,
// parted into a latency per call and one per ring step by the same chain
// over pairs of devices) and the share of the cores a member holds through
// that latency (latency_busy: the chain's seconds of the cores per member
// over it), and a pipeline hop (a token per device passed around a ring of
// one-device meshes): with more devices than cores, its seconds of the
// cores (p2p_work) and the wait beyond them (p2p_latency, fitted with
// pc-simulate to the ring's time). The firing cost and the share of the
// cores the spec gives are a training step's: N one-device sessions train
// a small residual MLP at once, and its step's seconds of the cores, less
// its kernels, are shared among its firings; the link's bandwidth is at
// most what an all-reduce of 128 KiB achieves in the runtime, in the
// seconds of the cores its members spend per byte. --verbose prints the
// seconds of the cores each measurement took to stderr.
// Writes the cluster spec (docs/planning.md) to stdout. The measured
// matmul rate is the spec's peak, so its matmul efficiency is 1.
//
//===----------------------------------------------------------------------===//

#include "bench/CalibrateModel.h"
#include "bench/CalibrateRuntime.h"

#include "runtime/comm/World.h"

#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" void openblas_set_num_threads(int);

using namespace pc::runtime;
using namespace pc::calibrate;

namespace {

/// Prints `s` when it is an error, and says whether it is.
bool failed(const absl::Status &s) {
  if (s.ok())
    return false;
  std::fprintf(stderr, "pc-bench-calibrate: %s\n", s.ToString().c_str());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  int devices = 2;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--devices" && i + 1 < argc)
      devices = std::atoi(argv[++i]);
    else if (a == "--verbose")
      verbose = true;
    else {
      std::fprintf(stderr, "usage: pc-bench-calibrate [--devices N] "
                           "[--verbose] > spec.json\n");
      return 2;
    }
  }
  if (devices < 1) {
    std::fprintf(stderr, "pc-bench-calibrate: --devices must be positive\n");
    return 2;
  }
  const int cores = int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const int threads = std::max(1, cores / devices);
  openblas_set_num_threads(threads);
  // The devices' rates are each device's alone; the simulator shares the
  // cores among the devices busy at once, at most `concurrent` at full
  // rate.
  const int concurrent = std::max(1, cores / threads);

  // Large products: 1024^3 per call.
  const int n = 1024, calls = 3;
  std::vector<std::vector<float>> a(devices), c(devices);
  for (int d = 0; d < devices; ++d) {
    a[d].assign(size_t(n) * n, 1.0f / n);
    c[d].assign(size_t(n) * n, 0.0f);
  }
  double mm = concurrently(1, 3, [&](int d) {
    for (int i = 0; i < calls; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                  a[d].data(), n, a[d].data(), n, 0.0f, c[d].data(), n);
  });
  double flops = 2.0 * n * n * n * calls / mm;

  // Memory: copies of 64 MiB (each byte read once and written once).
  const size_t bytes = size_t(64) << 20;
  std::vector<std::vector<char>> src(devices), dst(devices);
  for (int d = 0; d < devices; ++d) {
    src[d].assign(bytes, 1);
    dst[d].assign(bytes, 0);
  }
  double copy = concurrently(1, 5, [&](int d) {
    for (int i = 0; i < 4; ++i)
      std::memcpy(dst[d].data(), src[d].data(), bytes);
  });
  double bandwidth = 2.0 * double(bytes) * 4 / copy;

  double expKernel = 0;
  double cpuOp = 0, cpuAll = 0, cpuPair = 0, cpuHop = 0;
  absl::StatusOr<double> latency =
      opLatency(devices, threads, &expKernel, &cpuOp);
  if (failed(latency.status()))
    return 1;

  // The communicator: all-reduce of 1 KiB (latency) and 64 MiB (bandwidth).
  double alpha = 0, beta = 0, call = 0;
  if (devices > 1) {
    std::unique_ptr<World> world = makeInProcessWorld();
    if (!world->beginRun(devices).ok()) {
      std::fprintf(stderr, "pc-bench-calibrate: no in-process world\n");
      return 1;
    }
    std::vector<std::unique_ptr<Communicator>> comms;
    for (int d = 0; d < devices; ++d) {
      auto e = world->endpoint(d);
      if (!e.ok()) {
        std::fprintf(stderr, "%s\n", e.status().ToString().c_str());
        return 1;
      }
      comms.push_back(std::move(*e));
    }
    std::vector<int64_t> group(devices);
    for (int d = 0; d < devices; ++d)
      group[d] = d;
    auto allReduce = [&](int64_t count, int reps) {
      std::vector<std::vector<float>> data(devices,
                                           std::vector<float>(count, 1.0f));
      return concurrently(devices, 3,
                          [&](int d) {
                            for (int i = 0; i < reps; ++i)
                              (void)comms[d]->allReduce(
                                  data[d].data(), count, CommType::F32,
                                  pc::ReduceKind::Sum, group);
                          }) /
             reps;
    };
    const double m = devices;
    double tSmall = allReduce(256, 200);
    double big = double(size_t(64) << 20);
    double tBig = allReduce(int64_t(big / 4), 3);
    beta = 2 * (m - 1) / m * big / std::max(1e-9, tBig - tSmall);
    // The latency is the runtime's: a direct call in a tight loop, whose
    // members arrive together, costs a fraction of a firing whose members
    // meet from their own streams (3x on two devices).
    absl::StatusOr<double> inRuntime =
        allReduceLatency(devices, threads, *latency, &cpuAll);
    if (failed(inRuntime.status()))
      return 1;
    alpha = std::max(tSmall, *inRuntime) / (2 * (m - 1));
    // With pairs as well (4 or more devices, in pairs): the latency of a
    // call over m members is call + 2 (m - 1) alpha. On shared cores most
    // of it is the members' hand-offs, whatever the group's size.
    if (devices >= 4 && devices % 2 == 0) {
      absl::StatusOr<double> pairs =
          pairAllReduceLatency(devices, threads, *latency, &cpuPair);
      if (failed(pairs.status()))
        return 1;
      double full = std::max(tSmall, *inRuntime);
      alpha =
          std::max(tSmall / (2 * (m - 1)), (full - *pairs) / (2 * (m - 1) - 2));
      call = std::max(0.0, full - 2 * (m - 1) * alpha);
    }
  }

  double p2p = 0;
  std::pair<std::string, double> ring;
  if (devices > 1) {
    absl::StatusOr<double> hop =
        hopLatency(devices, threads, *latency, &cpuHop, &ring);
    if (failed(hop.status()))
      return 1;
    // The receive's own firing is timed as an op.
    p2p = std::max(0.0, *hop - *latency);
  }
  // The chain's firing cost, for the fits below, which are of chains (the
  // spec's is a training step's, further down). More devices than the
  // cores run at once: the simulator counts each firing as work on the
  // shared cores, which the chain's devices shared. The kernel's own time
  // is in an op profile; the firing cost is the rest. The share of the
  // cores the chain kept busy (its seconds of the cores over its wall
  // time): a thread woken runs some microseconds later, and the runtime's
  // threads leave that idle. A firing's work is what each device had of
  // the busy cores per op, so that the chain's time is kept.
  const double share = devices > concurrent ? double(concurrent) / devices : 1;
  double coreEfficiency = 1;
  if (devices > concurrent)
    coreEfficiency =
        std::clamp(cpuOp * devices / (*latency * concurrent), 0.05, 1.0);
  const double firing =
      std::max(1e-9, *latency * share * coreEfficiency - expKernel);

  Figures figures;
  figures.devices = devices;
  figures.threads = threads;
  figures.concurrent = concurrent;
  figures.flops = flops;
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  figures.memory = double(pages) * double(pageSize) / devices;
  figures.bandwidth = bandwidth;
  figures.beta = beta;
  figures.alpha = alpha;
  figures.call = call;
  figures.p2p = p2p;
  figures.firing = firing;
  figures.coreEfficiency = coreEfficiency;
  if (devices > concurrent) {
    // The devices outnumber the cores: a hop is its work on them (the
    // seconds of the cores a token's link takes, less its exponential's
    // firing) and a wait, fitted to the ring's measured time. Charged as
    // work alone, the ring's wait was paid again in a pipeline's stages,
    // which fill it with other micro-batches.
    figures.p2pWork = std::max(1e-7, cpuHop - cpuOp - figures.firing);
    absl::StatusOr<double> wait = fit(figures, &Figures::p2p, 1e-7,
                                      2 * p2p + 1e-6, ring.first, ring.second);
    if (failed(wait.status()))
      return 1;
    figures.p2p = *wait;
  }
  if (devices > 1) {
    // The share of the cores a member holds through a collective's latency
    // (latency_busy): the seconds of the host's cores a link of the
    // all-reduce chain takes per member, less its two ops' firings, over
    // the latency the simulator charges the call and the cores each
    // member had. Each member mostly sleeps through a meeting; what it
    // does not is its hand-offs' system calls and context switches.
    const double held = call + 2 * (devices - 1) * alpha;
    const double perDevice = std::min(1.0, double(concurrent) / devices);
    figures.latencyBusy = std::clamp(
        (cpuAll - 2 * cpuOp) / std::max(1e-9, held * perDevice), 0.01, 1.0);
  }
  // The spec's firing cost and share of the cores are a training step's.
  // The chains' tiny ops, one input and one reader each, cost a firing
  // 30-50% less and keep fewer cores busy (docs/planning.md); the fits
  // above are of the chains' measurements, so they use the chains'
  // figures.
  const bool shared = devices > concurrent;
  double trainingBusy = 0;
  absl::StatusOr<double> stepFiring =
      trainingFiring(devices, threads, figures, shared, &trainingBusy);
  if (failed(stepFiring.status()))
    return 1;
  if (verbose)
    std::fprintf(stderr,
                 "pc-bench-calibrate: a training step's firing %.3g s (the "
                 "chain's %.3g), %.3g cores busy\n",
                 *stepFiring, figures.firing, trainingBusy);
  // A hop's receive is charged the step's firing cost now, so its work is
  // what remains of the ring's measured hop.
  if (shared)
    figures.p2pWork = std::max(
        1e-7, figures.p2pWork - std::max(0.0, *stepFiring - figures.firing));
  figures.firing = *stepFiring;
  if (shared)
    figures.coreEfficiency =
        std::clamp(trainingBusy / double(concurrent), 0.05, 1.0);
  // The link's bandwidth: the lower of the direct calls' and the one that
  // gives an all-reduce in the runtime its measured work per byte (the
  // simulator counts a link's wall time with every device taking part as
  // the usable cores' work, shared among the devices).
  if (devices > 1) {
    absl::StatusOr<double> byteWork =
        allReduceByteWork(devices, threads, shared);
    if (failed(byteWork.status()))
      return 1;
    const double m = devices;
    const double perDevice =
        shared ? double(concurrent) * figures.coreEfficiency / double(devices)
               : 1.0;
    if (*byteWork > 0)
      figures.beta =
          std::min(figures.beta, 2 * (m - 1) / m * perDevice / *byteWork);
    if (verbose)
      std::fprintf(stderr,
                   "pc-bench-calibrate: an all-reduce in the runtime: %.3g s "
                   "of a member's time per byte at 128 KiB\n",
                   *byteWork);
  }
  if (verbose) // the seconds of the host's cores each measurement took
    std::fprintf(stderr,
                 "pc-bench-calibrate: cores' seconds per firing %.3g (its "
                 "kernel %.3g), per all-reduce and member %.3g (in pairs "
                 "%.3g), per hop %.3g; the chain kept %.3g cores busy\n",
                 cpuOp, expKernel, cpuAll, cpuPair, cpuHop,
                 cpuOp * devices / *latency);
  std::fputs(figures.json().c_str(), stdout);
  return 0;
}

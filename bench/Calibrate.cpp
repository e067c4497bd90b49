//===- Calibrate.cpp - A cluster spec for this machine's CPU devices ------===//
//
//   build/bench/pc-bench-calibrate [--devices N] [--repeat R] [--verbose] >
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
// that latency (latency_busy: the chain's seconds of the cores per member,
// less its ops' firings and its streams' wake-ups, over it); a thread's
// wake-up (threads handing a turn through a condition variable, as many
// pairs as the cores run devices at once), whose work twice over
// (wake_work: the dispatcher's and the stream's) the simulator charges
// each op fed by its device's other stream, and so takes out of the
// chain's latency; the share of that latency an all-reduce queued behind
// an independent one pays (queued_share: 128 of them back to back, fitted
// with pc-simulate to their time); and a pipeline hop (a token per device
// passed around a ring of one-device meshes): with more devices than
// cores, the wait beyond its work (p2p_latency, fitted with pc-simulate to
// the ring's time over the ring's own work per hop), that work (p2p_work)
// being a pipeline step's (the MLP below cut into N stages, its step's
// seconds of the cores less the rest of its work, per hop). The firing
// cost and the share of the cores the spec gives are a training step's: N
// one-device sessions train a small residual MLP at once, at two batches:
// the larger's extra time over its extra profiled kernels is a kernel's
// slowdown in a step (kernel_in_step), and the smaller's seconds of the
// cores, less its kernels so scaled, are shared among its firings; the
// link's bandwidth is at most what an all-reduce of 128 KiB achieves in
// the runtime, in the seconds of the cores its members spend per byte.
// Last, with more devices than cores, how long a collective's last member
// lags per second of the compute before it (straggler_lag: a chain of 32
// tensor-parallel MLP blocks, fitted with pc-simulate over every other
// figure). It all goes R times (--repeat, 3): the spec takes the median
// run's figures (by the firing cost, and by a full group's collective
// latency, after the wake-ups are taken out, for the collectives', the
// wake-up's and the queued share).
// --verbose prints the seconds of the cores each measurement took to
// stderr.
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
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" void openblas_set_num_threads(int);

using namespace pc::runtime;
using namespace pc::calibrate;

namespace {

/// What every measurement is run with.
struct Setup {
  int devices = 2, threads = 1, concurrent = 1;
  bool verbose = false;
};

/// Each device's large-matmul rate and memory bandwidth, on one device
/// alone (the simulator shares the cores).
void measureDevice(Figures &f) {
  // Large products: 1024^3 per call.
  const int n = 1024, calls = 3;
  std::vector<float> a(size_t(n) * n, 1.0f / n), c(size_t(n) * n, 0.0f);
  double mm = concurrently(1, 3, [&](int) {
    for (int i = 0; i < calls; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                  a.data(), n, a.data(), n, 0.0f, c.data(), n);
  });
  f.flops = 2.0 * n * n * n * calls / mm;

  // Memory: copies of 64 MiB (each byte read once and written once).
  const size_t bytes = size_t(64) << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double copy = concurrently(1, 5, [&](int) {
    for (int i = 0; i < 4; ++i)
      std::memcpy(dst.data(), src.data(), bytes);
  });
  f.bandwidth = 2.0 * double(bytes) * 4 / copy;
}

/// The communicator's all-reduce: its bandwidth (direct calls of 64 MiB)
/// and its latency as the runtime fires it, in a part per call and a part
/// per ring step; `opCost`, a chain op's time as every device runs them.
absl::Status measureAllReduce(const Setup &setup, double opCost, Figures &f,
                              double *cpuAll, double *cpuPair) {
  const int devices = setup.devices, threads = setup.threads;
  std::unique_ptr<World> world = makeInProcessWorld();
  if (absl::Status s = world->beginRun(devices); !s.ok())
    return s;
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int d = 0; d < devices; ++d) {
    auto e = world->endpoint(d);
    if (!e.ok())
      return e.status();
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
  f.beta = 2 * (m - 1) / m * big / std::max(1e-9, tBig - tSmall);
  // The latency is the runtime's: a direct call in a tight loop, whose
  // members arrive together, costs a fraction of a firing whose members
  // meet from their own streams (3x on two devices).
  absl::StatusOr<double> inRuntime =
      allReduceLatency(devices, threads, opCost, cpuAll);
  if (!inRuntime.ok())
    return inRuntime.status();
  f.alpha = std::max(tSmall, *inRuntime) / (2 * (m - 1));
  // With pairs as well (4 or more devices, in pairs): the latency of a
  // call over m members is call + 2 (m - 1) alpha. On shared cores most
  // of it is the members' hand-offs, whatever the group's size.
  if (devices >= 4 && devices % 2 == 0) {
    absl::StatusOr<double> pairs =
        pairAllReduceLatency(devices, threads, opCost, cpuPair);
    if (!pairs.ok())
      return pairs.status();
    double full = std::max(tSmall, *inRuntime);
    f.alpha =
        std::max(tSmall / (2 * (m - 1)), (full - *pairs) / (2 * (m - 1) - 2));
    f.call = std::max(0.0, full - 2 * (m - 1) * f.alpha);
  }
  return absl::OkStatus();
}

/// The figures a training step gives (with the chains' figures in `f`):
/// the firing cost and the share of the cores the runtime keeps busy, the
/// runtime's all-reduce bandwidth, and a pipeline hop's work.
absl::Status trainingFigures(const Setup &setup, Figures &f) {
  const int devices = setup.devices, threads = setup.threads,
            concurrent = setup.concurrent;
  const bool verbose = setup.verbose;
  // The spec's firing cost and share of the cores are a training step's.
  // The chains' tiny ops, one input and one reader each, cost a firing
  // 30-50% less and keep fewer cores busy (docs/planning.md); the fits in
  // measure() are of the chains' measurements, so they use the chains'
  // figures.
  const bool shared = devices > concurrent;
  double trainingBusy = 0, kernelRatio = 1;
  absl::StatusOr<double> stepFiring =
      trainingFiring(devices, threads, f, shared, &trainingBusy, &kernelRatio);
  if (!stepFiring.ok())
    return stepFiring.status();
  if (verbose)
    std::fprintf(stderr,
                 "pc-bench-calibrate: a training step's firing %.3g s (the "
                 "chain's %.3g), its kernels %.3g times their profiled "
                 "time, %.3g cores busy\n",
                 *stepFiring, f.firing, kernelRatio, trainingBusy);
  f.firing = *stepFiring;
  f.kernelInStep = kernelRatio;
  if (shared)
    f.coreEfficiency = std::clamp(trainingBusy / double(concurrent), 0.05, 1.0);
  // The link's bandwidth: the lower of the direct calls' and the one that
  // gives an all-reduce in the runtime its measured work per byte (the
  // simulator counts a link's wall time with every device taking part as
  // the usable cores' work, shared among the devices).
  if (devices > 1) {
    absl::StatusOr<double> byteWork =
        allReduceByteWork(devices, threads, shared);
    if (!byteWork.ok())
      return byteWork.status();
    const double m = devices;
    const double perDevice =
        shared ? double(concurrent) * f.coreEfficiency / double(devices) : 1.0;
    if (*byteWork > 0)
      f.beta = std::min(f.beta, 2 * (m - 1) / m * perDevice / *byteWork);
    if (verbose)
      std::fprintf(stderr,
                   "pc-bench-calibrate: an all-reduce in the runtime: %.3g s "
                   "of a member's time per byte at 128 KiB\n",
                   *byteWork);
  }
  // With more devices than cores, a hop's work is a pipeline step's (its
  // seconds of the cores, less the rest of its work): the ring's, where
  // every device sleeps between tokens, charged a pipeline's hops more
  // than they took.
  if (shared) {
    int hops = 0;
    absl::StatusOr<double> hopWork =
        pipelineHopWork(devices, threads, f, &hops);
    if (!hopWork.ok())
      return hopWork.status();
    if (verbose)
      std::fprintf(stderr,
                   "pc-bench-calibrate: a pipeline's hop %.3g s of the cores "
                   "(%d a step; the ring's %.3g)\n",
                   *hopWork, hops, f.p2pWork);
    f.p2pWork = *hopWork;
  }
  return absl::OkStatus();
}

/// The work of a stream's wake-up (wake_work), and what it leaves of the
/// all-reduce chain's latency (call_latency, latency_busy): each link of
/// the chain wakes both streams of every member (the collective waits for
/// the sum, the add for the collective), whose work the simulator now
/// charges apart. `cpuAll` and `cpuOp` are the chain's and the tiny op's
/// seconds of the cores per member.
void wakeUps(const Setup &setup, double cpuAll, double cpuOp, Figures &f) {
  const double devices = setup.devices, concurrent = setup.concurrent;
  // A stream's wait ends with two wake-ups: the operand's Done wakes the
  // device's dispatcher, which wakes the stream's worker.
  f.wakeWork = 2 * wakeCpu(setup.concurrent);
  // Two per link, every member's at once, on its share of the cores: the
  // chain's (its wall time was measured at that share; the spec's, from
  // the training step, comes later).
  const double rate =
      std::min(1.0, concurrent * f.coreEfficiency / std::max(1.0, devices));
  double wakeWall = 2 * f.wakeWork / rate;
  const double steps = 2 * (devices - 1);
  double full = f.call + steps * f.alpha;
  // The wake-ups come out of the call's part first (the pairs' chain
  // wakes as many: the per-step part is their difference), then out of
  // the steps' part, leaving at least a tenth of the latency. That
  // fallback (no call part: fewer than 4 devices, or an odd count) gives
  // smaller collectives, of fewer steps, back less than their wake-ups'
  // wall time: they come out slower than the full group's.
  wakeWall = std::min(wakeWall, 0.9 * full);
  double fromCall = std::min(f.call, wakeWall);
  f.call -= fromCall;
  f.alpha -= (wakeWall - fromCall) / steps;
  full -= wakeWall;
  // The share of the cores a member holds through a collective's latency
  // (latency_busy): the seconds of the host's cores a link of the
  // all-reduce chain takes per member, less its two ops' firings and its
  // two wake-ups, over the latency the simulator charges the call and the
  // cores each member had. Each member mostly sleeps through a meeting;
  // what it does not is its hand-offs' system calls and context switches.
  const double perDevice = std::min(1.0, concurrent / devices);
  f.latencyBusy = std::clamp((cpuAll - 2 * cpuOp - 2 * f.wakeWork) /
                                 std::max(1e-9, full * perDevice),
                             0.01, 1.0);
}

/// The share of the chain's latency a collective queued behind one it does
/// not depend on pays (queued_share), fitted with pc-simulate over the
/// chain's figures to queued all-reduces' measured time: their members
/// come from the one before together and awake.
absl::Status queuedShare(const Setup &setup, Figures &f) {
  absl::StatusOr<std::pair<std::string, double>> queued =
      queuedAllReduces(setup.devices, setup.threads);
  if (!queued.ok())
    return queued.status();
  absl::StatusOr<double> share =
      fit(f, &Figures::queuedShare, 0.01, 1, queued->first, queued->second);
  if (!share.ok())
    return share.status();
  // Above 0.99: as the chain's (the bisection ends within 0.001 of 1).
  f.queuedShare = *share < 0.99 ? *share : 1;
  if (setup.verbose)
    std::fprintf(stderr,
                 "pc-bench-calibrate: a queued all-reduce pays %.3g of the "
                 "chain's latency (128 of them in %.3g s)\n",
                 f.queuedShare, queued->second);
  return absl::OkStatus();
}

/// How long a collective whose members come from their compute waits for
/// the last of them, per second of that compute, with more devices than
/// cores (straggler_lag): fitted with pc-simulate over every other figure
/// to a chain of Megatron MLP blocks, whose all-reduces each wait for
/// every device's matmuls. 0 where the simulator already predicts the
/// chain's time or more.
absl::Status stragglerLag(const Setup &setup, Figures &f) {
  absl::StatusOr<std::pair<std::string, double>> chain =
      tensorParallelChain(setup.devices, setup.threads);
  if (!chain.ok())
    return chain.status();
  absl::StatusOr<double> lag =
      fit(f, &Figures::stragglerLag, 0, 1, chain->first, chain->second);
  if (!lag.ok())
    return lag.status();
  // The bisection ends within 0.00025 of its bottom: none.
  f.stragglerLag = *lag > 1e-3 ? *lag : 0;
  if (setup.verbose)
    std::fprintf(stderr,
                 "pc-bench-calibrate: a collective's last member lags %.3g s "
                 "per second of compute (32 tensor-parallel blocks in %.3g "
                 "s)\n",
                 f.stragglerLag, chain->second);
  return absl::OkStatus();
}

/// One calibration: every figure of the spec, measured once.
absl::StatusOr<Figures> measure(const Setup &setup) {
  const int devices = setup.devices, threads = setup.threads,
            concurrent = setup.concurrent;
  const bool verbose = setup.verbose;
  Figures figures;
  figures.devices = devices;
  figures.threads = threads;
  figures.concurrent = concurrent;
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  figures.memory = double(pages) * double(pageSize) / devices;
  measureDevice(figures);
  double expKernel = 0;
  double cpuOp = 0, cpuAll = 0, cpuPair = 0, cpuHop = 0;
  absl::StatusOr<double> latency =
      opLatency(devices, threads, &expKernel, &cpuOp);
  if (!latency.ok())
    return latency.status();

  // The communicator: all-reduce of 1 KiB (latency) and 64 MiB (bandwidth).
  if (devices > 1)
    if (absl::Status s =
            measureAllReduce(setup, *latency, figures, &cpuAll, &cpuPair);
        !s.ok())
      return s;

  double p2p = 0;
  std::pair<std::string, double> ring;
  if (devices > 1) {
    absl::StatusOr<double> hop =
        hopLatency(devices, threads, *latency, &cpuHop, &ring);
    if (!hop.ok())
      return hop.status();
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

  figures.p2p = p2p;
  figures.firing = firing;
  figures.coreEfficiency = coreEfficiency;
  if (devices > 1) {
    wakeUps(setup, cpuAll, cpuOp, figures);
    if (absl::Status s = queuedShare(setup, figures); !s.ok())
      return s;
  }
  if (devices > concurrent) {
    // The devices outnumber the cores: a hop is its work on them (the
    // seconds of the cores a token's link takes, less its exponential's
    // firing) and a wait, fitted to the ring's measured time. Charged as
    // work alone, the ring's wait was paid again in a pipeline's stages,
    // which fill it with other micro-batches.
    figures.p2pWork = std::max(1e-7, cpuHop - cpuOp - figures.firing);
    absl::StatusOr<double> wait = fit(figures, &Figures::p2p, 1e-7,
                                      2 * p2p + 1e-6, ring.first, ring.second);
    if (!wait.ok())
      return wait.status();
    figures.p2p = *wait;
  }
  if (verbose) // the seconds of the host's cores each measurement took
    std::fprintf(stderr,
                 "pc-bench-calibrate: cores' seconds per firing %.3g (its "
                 "kernel %.3g), per all-reduce and member %.3g (in pairs "
                 "%.3g), per hop %.3g, per stream's wake-up %.3g; the chain "
                 "kept %.3g cores busy\n",
                 cpuOp, expKernel, cpuAll, cpuPair, cpuHop, figures.wakeWork,
                 cpuOp * devices / *latency);
  if (absl::Status s = trainingFigures(setup, figures); !s.ok())
    return s;
  // Last, over every other figure: what a tensor-parallel chain's
  // meetings take beyond them.
  if (devices > concurrent)
    if (absl::Status s = stragglerLag(setup, figures); !s.ok())
      return s;
  return figures;
}

/// The median of `runs` by `key`: one run's figures.
const Figures &medianRun(const std::vector<Figures> &runs,
                         const std::function<double(const Figures &)> &key) {
  std::vector<const Figures *> order;
  for (const Figures &f : runs)
    order.push_back(&f);
  std::sort(
      order.begin(), order.end(),
      [&](const Figures *a, const Figures *b) { return key(*a) < key(*b); });
  return *order[order.size() / 2];
}

/// The figures of `runs`, each group of figures that depend on each other
/// from the one run that is the median of the group's leading figure: the
/// firing cost, and those fitted or left over after it (a kernel's
/// slowdown in a step, the share of the cores, the bandwidth, the hop's
/// work and wait, the straggler's lag); a full group's collective latency
/// (after the wake-ups are taken out), and its parts, busy share and the
/// wake-up's work. The device's own rates are each their median.
Figures medianOf(const std::vector<Figures> &runs) {
  Figures out = medianRun(runs, [](const Figures &f) { return f.firing; });
  const Figures &collective = medianRun(runs, [](const Figures &f) {
    return f.call + 2 * (f.devices - 1) * f.alpha;
  });
  out.alpha = collective.alpha;
  out.call = collective.call;
  out.latencyBusy = collective.latencyBusy;
  out.queuedShare = collective.queuedShare;
  out.wakeWork = collective.wakeWork;
  for (double Figures::*field : {&Figures::flops, &Figures::bandwidth}) {
    std::vector<double> v;
    for (const Figures &f : runs)
      v.push_back(f.*field);
    out.*field = median(v);
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  Setup setup;
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--devices" && i + 1 < argc)
      setup.devices = std::atoi(argv[++i]);
    else if (a == "--repeat" && i + 1 < argc)
      repeat = std::atoi(argv[++i]);
    else if (a == "--verbose")
      setup.verbose = true;
    else {
      std::fprintf(stderr, "usage: pc-bench-calibrate [--devices N] "
                           "[--repeat R] [--verbose] > spec.json\n");
      return 2;
    }
  }
  if (setup.devices < 1 || repeat < 1) {
    std::fprintf(stderr, "pc-bench-calibrate: --devices and --repeat must be "
                         "positive\n");
    return 2;
  }
  const int cores = int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  setup.threads = std::max(1, cores / setup.devices);
  openblas_set_num_threads(setup.threads);
  // The devices' rates are each device's alone; the simulator shares the
  // cores among the devices busy at once, at most `concurrent` at full
  // rate.
  setup.concurrent = std::max(1, cores / setup.threads);
  // The machine's speed drifts between runs seconds apart (docs/
  // planning.md): the spec is the median run of `repeat` (medianOf).
  std::vector<Figures> runs;
  for (int r = 0; r < repeat; ++r) {
    absl::StatusOr<Figures> f = measure(setup);
    if (!f.ok()) {
      std::fprintf(stderr, "pc-bench-calibrate: %s\n",
                   f.status().ToString().c_str());
      return 1;
    }
    runs.push_back(*f);
  }
  std::fputs(medianOf(runs).json().c_str(), stdout);
  return 0;
}

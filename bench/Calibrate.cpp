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
// process's CPU time): what the runtime adds to a kernel at each firing
// (a chain of 256 tiny ops compiled and run by the actor runtime, less the
// kernel's own time as pc-run --profile-ops measures it) and the share of
// the cores that chain kept busy (efficiency.shared_cores), the
// shared-memory communicator's all-reduce bandwidth (direct calls) and
// latency (a compiled chain of tiny all-reduces, as the runtime fires
// them: the members meet from their own streams; with 4 or more devices,
// parted into a latency per call and one per ring step by the same chain
// over pairs of devices) and the share of the cores a member holds through
// that latency (latency_busy: the chain's seconds of the cores per member
// over it), and a pipeline hop (a token per device passed around a ring of
// one-device meshes): with more devices than cores, its seconds of the
// cores (p2p_work) and the wait beyond them (p2p_latency, fitted with
// pc-simulate to the ring's time). --verbose prints the seconds of the
// cores each measurement took to stderr.
// Writes the cluster spec (docs/planning.md) to stdout. The measured
// matmul rate is the spec's peak, so its matmul efficiency is 1.
//
//===----------------------------------------------------------------------===//

#include "api/Program.h"
#include "dialect/OpProfile.h"
#include "runtime/comm/World.h"

#include <cblas.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

extern "C" void openblas_set_num_threads(int);

using namespace pc::runtime;

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The seconds of the host's cores this process has used, all its threads.
double cpuNow() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

/// Runs `work(device)` on every device at once; the slowest device's time,
/// best of `rounds`.
double concurrently(int devices, int rounds,
                    const std::function<void(int)> &work) {
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    std::barrier sync(devices + 1);
    std::vector<std::thread> threads;
    for (int d = 0; d < devices; ++d)
      threads.emplace_back([&, d] {
        sync.arrive_and_wait();
        work(d);
      });
    double t0 = now();
    sync.arrive_and_wait();
    for (std::thread &t : threads)
      t.join();
    best = std::min(best, now() - t0);
  }
  return best;
}

/// The median time of a run of `src`'s graph @chain on `devices` CPU
/// devices, compiled and run by the actor runtime; its one argument is a
/// vector of 8 floats per device.
absl::StatusOr<double> timeChain(const std::string &src, int devices,
                                 int threads, std::vector<int64_t> shape = {},
                                 double *cpu = nullptr) {
  if (shape.empty())
    shape = {8 * devices};
  absl::StatusOr<pc::api::Program> program =
      pc::api::compileSource(src, "calibrate");
  if (!program.ok())
    return program.status();
  pc::api::SessionOptions options;
  options.devices = devices;
  options.threadsPerDevice = threads;
  absl::StatusOr<std::unique_ptr<pc::api::Session>> session =
      pc::api::Session::create(*program, options);
  if (!session.ok())
    return session.status();
  if (absl::Status s = (*session)->feed(
          "arg0",
          pc::runtime::HostTensor::zeros(shape, pc::runtime::CommType::F32));
      !s.ok())
    return s;
  // The median run, as the bench takes the median step: what a run meets
  // of the other devices' scheduling is part of what it costs.
  std::vector<double> runs, cpus;
  for (int r = 0; r < 25; ++r) {
    double t0 = now(), c0 = cpuNow();
    if (absl::Status s = (*session)->run(); !s.ok())
      return s;
    runs.push_back(now() - t0);
    cpus.push_back(cpuNow() - c0);
  }
  if (cpu)
    *cpu = median(cpus);
  return median(runs);
}

/// A chain of `links` on every device: each link is `body` (with $IN and
/// $OUT standing for its input and output, and $I for its index) on a
/// vector split over the mesh.
std::string chain(int devices, int links, const std::string &body) {
  std::string type =
      "tensor<" + std::to_string(8 * devices) + "xf32, #pc.sbp<@m, [S(0)]>>";
  std::string src = "pc.mesh @m <[\"x\"=" + std::to_string(devices) +
                    "]>\nfunc.func @chain(%x: " + type + ") -> " + type +
                    " {\n";
  std::string prev = "%x";
  for (int i = 0; i < links; ++i) {
    std::string link = body, out = "%v" + std::to_string(i);
    for (auto [key, value] : {std::pair<std::string, std::string>{"$IN", prev},
                              {"$OUT", out},
                              {"$I", std::to_string(i)},
                              {"$T", type}})
      for (size_t at; (at = link.find(key)) != std::string::npos;)
        link.replace(at, key.size(), value);
    src += link;
    prev = out;
  }
  return src + "  return " + prev + " : " + type + "\n}\n";
}

/// The time one op of a per-device program takes, as the devices run
/// together: a chain of 256 tiny exponentials on every device, per op.
/// With `kernel`, also the time of the exponential's kernel alone, as
/// pc-run --profile-ops times it: the rest is the firing's.
absl::StatusOr<double> opLatency(int devices, int threads,
                                 double *kernel = nullptr,
                                 double *cpu = nullptr) {
  const int ops = 256;
  std::string src = chain(devices, ops, "  $OUT = pc.exp $IN : ($T) -> $T\n");
  absl::StatusOr<double> t = timeChain(src, devices, threads, {}, cpu);
  if (!t.ok())
    return t;
  if (cpu)
    *cpu /= double(ops) * devices;
  if (kernel) {
    absl::StatusOr<pc::api::Program> program =
        pc::api::compileSource(src, "calibrate");
    if (!program.ok())
      return program.status();
    absl::StatusOr<std::string> json = program->profileOps(threads);
    if (!json.ok())
      return json.status();
    llvm::Expected<pc::OpProfile> profile =
        pc::parseOpProfile(*json, "the chain's profile");
    if (!profile)
      return absl::InternalError(llvm::toString(profile.takeError()));
    *kernel = 0;
    for (const auto &[key, seconds] : profile->seconds)
      if (llvm::StringRef(key).starts_with("pc.exp "))
        *kernel = std::max(*kernel, seconds);
  }
  return *t / ops;
}

/// A tiny all-reduce over all devices as the actor runtime runs it (its
/// firing on each device's communication stream, the members' meeting):
/// a chain of 128 links, each a sum over the split dim (partial), its
/// all-reduce, and an add; less the two ops' own cost (`opCost`, as every
/// device runs them at once).
absl::StatusOr<double> allReduceLatency(int devices, int threads, double opCost,
                                        double *cpu = nullptr) {
  const int links = 128;
  std::string body =
      "  %s$I = pc.reduce_sum $IN {axes = array<i64: 0>, keepdim} : ($T) -> "
      "tensor<1xf32, #pc.sbp<@m, [P]>>\n"
      "  %b$I = pc.to_sbp %s$I : (tensor<1xf32, #pc.sbp<@m, [P]>>) -> "
      "tensor<1xf32, #pc.sbp<@m, [B]>>\n"
      "  $OUT = pc.add $IN, %b$I : ($T, tensor<1xf32, #pc.sbp<@m, [B]>>) -> "
      "$T\n";
  absl::StatusOr<double> t =
      timeChain(chain(devices, links, body), devices, threads, {}, cpu);
  if (!t.ok())
    return t;
  if (cpu)
    *cpu /= double(links) * devices;
  return std::max(0.0, *t / links - 2 * opCost);
}

/// The same chain with the all-reduces in pairs of devices (a 2-axis mesh
/// whose second axis has 2), every pair at once: with the full group's,
/// it parts a collective's latency into a fixed cost per call and a cost
/// per step of its ring.
absl::StatusOr<double> pairAllReduceLatency(int devices, int threads,
                                            double opCost,
                                            double *cpu = nullptr) {
  const int links = 128, rows = devices / 2;
  std::string t =
      "tensor<" + std::to_string(rows) + "x16xf32, #pc.sbp<@m, [S(0), S(1)]>>";
  std::string p =
      "tensor<" + std::to_string(rows) + "x1xf32, #pc.sbp<@m, [S(0), P]>>";
  std::string b =
      "tensor<" + std::to_string(rows) + "x1xf32, #pc.sbp<@m, [S(0), B]>>";
  std::string src = "pc.mesh @m <[\"x\"=" + std::to_string(rows) +
                    ", \"y\"=2]>\nfunc.func @chain(%x: " + t + ") -> " + t +
                    " {\n";
  std::string prev = "%x";
  for (int i = 0; i < links; ++i) {
    std::string k = std::to_string(i);
    src += "  %s" + k + " = pc.reduce_sum " + prev +
           " {axes = array<i64: 1>, keepdim} : (" + t + ") -> " + p + "\n";
    src += "  %b" + k + " = pc.to_sbp %s" + k + " : (" + p + ") -> " + b + "\n";
    src += "  %a" + k + " = pc.add " + prev + ", %b" + k + " : (" + t + ", " +
           b + ") -> " + t + "\n";
    prev = "%a" + k;
  }
  src += "  return " + prev + " : " + t + "\n}\n";
  absl::StatusOr<double> time =
      timeChain(src, devices, threads, {rows, 16}, cpu);
  if (!time.ok())
    return time;
  if (cpu)
    *cpu /= double(links) * devices;
  return std::max(0.0, *time / links - 2 * opCost);
}

/// A pipeline's hop as the actor runtime runs it, with every device busy:
/// `devices` tokens circulate at once through a ring of one-device meshes,
/// each of `links` links a transfer to the next device and an exponential
/// there.
std::string hopRing(int devices, int links) {
  auto type = [](int mesh) {
    return "tensor<8xf32, #pc.sbp<@m" + std::to_string(mesh) + ", [B]>>";
  };
  std::string in =
      "tensor<" + std::to_string(8 * devices) + "xf32, #pc.sbp<@m0, [B]>>";
  std::string src;
  for (int d = 0; d < devices; ++d)
    src += "pc.mesh @m" + std::to_string(d) + " <[\"x\"=1]> ranks [" +
           std::to_string(d) + "]\n";
  src += "func.func @chain(%x: " + in + ") -> (";
  for (int c = 0; c < devices; ++c)
    src += (c ? ", " : "") + type((c + links) % devices);
  src += ") {\n";
  std::string outs, outTypes;
  for (int c = 0; c < devices; ++c) {
    std::string prev = "%s" + std::to_string(c);
    src += "  " + prev +
           " = pc.slice %x {start = array<i64: " + std::to_string(8 * c) +
           ">, limit = array<i64: " + std::to_string(8 * c + 8) + ">} : (" +
           in + ") -> " + type(0) + "\n";
    for (int i = 0; i < links; ++i) {
      int from = (c + i) % devices, to = (c + i + 1) % devices;
      std::string t = "%t" + std::to_string(c) + "_" + std::to_string(i);
      std::string e = "%e" + std::to_string(c) + "_" + std::to_string(i);
      std::string moved = i == 0 ? type(0) : type(from);
      src += "  " + t + " = pc.transfer " + prev + " : (" + moved + ") -> " +
             type(to) + "\n";
      src += "  " + e + " = pc.exp " + t + " : (" + type(to) + ") -> " +
             type(to) + "\n";
      prev = e;
    }
    outs += (c ? ", " : "") + prev;
    outTypes += (c ? ", " : "") + type((c + links) % devices);
  }
  return src + "  return " + outs + " : " + outTypes + "\n}\n";
}

/// The time of a link of hopRing (a send, its receive, and the hand-offs
/// between the devices' streams), less the exponential's (`opCost`, as
/// every device runs them at once). With `ring`, also the ring's source
/// and its measured time; with `cpu`, the seconds of the host's cores a
/// link takes per token.
absl::StatusOr<double>
hopLatency(int devices, int threads, double opCost, double *cpu = nullptr,
           std::pair<std::string, double> *ring = nullptr) {
  const int links = 64;
  std::string src = hopRing(devices, links);
  absl::StatusOr<double> t = timeChain(src, devices, threads, {}, cpu);
  if (!t.ok())
    return t;
  if (cpu)
    *cpu /= double(links) * devices;
  if (ring)
    *ring = {src, *t};
  return std::max(0.0, *t / links - opCost);
}

/// Prints `s` when it is an error, and says whether it is.
bool failed(const absl::Status &s) {
  if (s.ok())
    return false;
  std::fprintf(stderr, "pc-bench-calibrate: %s\n", s.ToString().c_str());
  return true;
}

/// The figures of a spec, and its JSON (docs/planning.md).
struct Figures {
  int devices = 1, threads = 1, concurrent = 1;
  double flops = 0, memory = 0, bandwidth = 0;
  double beta = 0, alpha = 0, call = 0, p2p = 0, p2pWork = 0, firing = 0;
  double latencyBusy = 1, coreEfficiency = 1;

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
      out += "},\n";
    }
    add("  \"efficiency\": {\n    \"matmul\": 1,\n    \"memory\": 1,\n"
        "    \"collective\": 1,\n    \"kernel_latency\": %.4g,\n",
        firing);
    if (coreEfficiency < 1)
      add("    \"shared_cores\": %.3g,\n", coreEfficiency);
    out += "    \"usable_memory\": 0.8\n  }\n}\n";
    return out;
  }
};

/// pc-simulate's step for `src` over `figures` (written to a spec file,
/// as pc-run --cluster reads it), its compute timed by `profile` (the
/// JSON of Program::profileOps).
absl::StatusOr<double> simulated(const std::string &src, const Figures &figures,
                                 const std::string &profile) {
  char path[] = "/tmp/pc-calibrate-XXXXXX.json";
  int fd = mkstemps(path, 5);
  if (fd < 0)
    return absl::InternalError("cannot create a temporary spec");
  std::string json = figures.json();
  bool written = write(fd, json.data(), json.size()) == ssize_t(json.size());
  close(fd);
  absl::StatusOr<double> step =
      absl::InternalError("cannot write " + std::string(path));
  if (written) {
    pc::api::CompileOptions options;
    options.cluster = path;
    absl::StatusOr<pc::api::Program> program =
        pc::api::compileSource(src, "calibrate", options);
    double t = 0;
    if (!program.ok())
      step = program.status();
    else if (absl::StatusOr<std::string> s = program->simulate(&t, profile);
             !s.ok())
      step = s.status();
    else
      step = t;
  }
  unlink(path);
  return step;
}

/// The value of `field` in [lo, hi] at which pc-simulate predicts
/// `measured` for `src`, by bisection: the prediction grows with it. The
/// ops are profiled once, so that every step of it sees the same times.
absl::StatusOr<double> fit(Figures figures, double Figures::*field, double lo,
                           double hi, const std::string &src, double measured) {
  absl::StatusOr<pc::api::Program> program =
      pc::api::compileSource(src, "calibrate");
  if (!program.ok())
    return program.status();
  absl::StatusOr<std::string> profile = program->profileOps(figures.threads);
  if (!profile.ok())
    return profile.status();
  for (int i = 0; i < 12; ++i) {
    figures.*field = (lo + hi) / 2;
    absl::StatusOr<double> predicted = simulated(src, figures, *profile);
    if (!predicted.ok())
      return predicted;
    (*predicted < measured ? lo : hi) = figures.*field;
  }
  return (lo + hi) / 2;
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
  // More devices than the cores run at once: the simulator counts each
  // firing as work on the shared cores, which the chain's devices shared.
  // The kernel's own time is in an op profile; the spec's kernel latency
  // is the rest, what the runtime adds to every firing.
  // The share of the cores the chain kept busy (its seconds of the cores
  // over its wall time): a thread woken runs some microseconds later, and
  // the runtime's threads leave that idle. A firing's work is what each
  // device had of the busy cores per op, so that the chain's time is kept.
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

//===- Calibrate.cpp - A cluster spec for this machine's CPU devices ------===//
//
//   build/bench/pc-bench-calibrate [--devices N] >
//   planner/clusters/cpu-virtual.json
//
// Measures what the planner's cost model needs for N CPU virtual devices
// in one process, as pc-run runs them: each device's large-matmul rate
// (OpenBLAS sgemm with the device's share of the cores) and memory
// bandwidth (memcpy), on one device alone; how many devices the host's
// cores run at once at those rates (concurrent_devices: the simulator
// shares the cores among the busy ones); and, with every device taking
// part: what the runtime adds to a kernel at each firing (a chain of 256
// tiny ops compiled and run by the actor runtime, less the kernel's own
// time as pc-run --profile-ops measures it), the shared-memory
// communicator's all-reduce bandwidth (direct calls) and latency (a
// compiled chain of tiny all-reduces, as the runtime fires them: the
// members meet from their own streams), and a pipeline hop's latency (a
// token per device passed around a ring of one-device meshes).
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
                                 int threads) {
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
          "arg0", pc::runtime::HostTensor::zeros({8 * devices},
                                                 pc::runtime::CommType::F32));
      !s.ok())
    return s;
  // The median run, as the bench takes the median step: what a run meets
  // of the other devices' scheduling is part of what it costs.
  std::vector<double> runs;
  for (int r = 0; r < 25; ++r) {
    double t0 = now();
    if (absl::Status s = (*session)->run(); !s.ok())
      return s;
    runs.push_back(now() - t0);
  }
  std::nth_element(runs.begin(), runs.begin() + runs.size() / 2, runs.end());
  double median = runs[runs.size() / 2];
  return median;
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
                                 double *kernel = nullptr) {
  const int ops = 256;
  std::string src = chain(devices, ops, "  $OUT = pc.exp $IN : ($T) -> $T\n");
  absl::StatusOr<double> t = timeChain(src, devices, threads);
  if (!t.ok())
    return t;
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
absl::StatusOr<double> allReduceLatency(int devices, int threads,
                                        double opCost) {
  const int links = 128;
  std::string body =
      "  %s$I = pc.reduce_sum $IN {axes = array<i64: 0>, keepdim} : ($T) -> "
      "tensor<1xf32, #pc.sbp<@m, [P]>>\n"
      "  %b$I = pc.to_sbp %s$I : (tensor<1xf32, #pc.sbp<@m, [P]>>) -> "
      "tensor<1xf32, #pc.sbp<@m, [B]>>\n"
      "  $OUT = pc.add $IN, %b$I : ($T, tensor<1xf32, #pc.sbp<@m, [B]>>) -> "
      "$T\n";
  absl::StatusOr<double> t =
      timeChain(chain(devices, links, body), devices, threads);
  if (!t.ok())
    return t;
  return std::max(0.0, *t / links - 2 * opCost);
}

/// A pipeline's hop as the actor runtime runs it, with every device busy:
/// `devices` tokens circulate at once through a ring of one-device meshes,
/// each link a transfer to the next device and an exponential there. The
/// time of a link less the exponential's (`opCost`, as every device runs
/// them at once): a send, its receive, and the hand-offs between the
/// devices' streams.
absl::StatusOr<double> hopLatency(int devices, int threads, double opCost) {
  const int links = 64;
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
  src += "  return " + outs + " : " + outTypes + "\n}\n";
  absl::StatusOr<double> t = timeChain(src, devices, threads);
  if (!t.ok())
    return t;
  return std::max(0.0, *t / links - opCost);
}

} // namespace

int main(int argc, char **argv) {
  int devices = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--devices" && i + 1 < argc)
      devices = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: pc-bench-calibrate [--devices N] > spec.json\n");
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
  absl::StatusOr<double> latency = opLatency(devices, threads, &expKernel);
  if (!latency.ok()) {
    std::fprintf(stderr, "pc-bench-calibrate: %s\n",
                 latency.status().ToString().c_str());
    return 1;
  }

  // The communicator: all-reduce of 1 KiB (latency) and 64 MiB (bandwidth).
  double alpha = 0, beta = 0;
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
        allReduceLatency(devices, threads, *latency);
    if (!inRuntime.ok()) {
      std::fprintf(stderr, "pc-bench-calibrate: %s\n",
                   inRuntime.status().ToString().c_str());
      return 1;
    }
    alpha = std::max(tSmall, *inRuntime) / (2 * (m - 1));
  }

  double p2p = 0;
  if (devices > 1) {
    absl::StatusOr<double> hop = hopLatency(devices, threads, *latency);
    if (!hop.ok()) {
      std::fprintf(stderr, "pc-bench-calibrate: %s\n",
                   hop.status().ToString().c_str());
      return 1;
    }
    // The receive's own firing is timed as an op.
    p2p = std::max(0.0, *hop - *latency);
  }
  // More devices than the cores run at once: the simulator counts each
  // firing as work on the shared cores, which the chain's devices shared.
  // The kernel's own time is in an op profile; the spec's kernel latency
  // is the rest, what the runtime adds to every firing.
  const double share = devices > concurrent ? double(concurrent) / devices : 1;
  const double firing = std::max(1e-9, (*latency - expKernel / share) * share);

  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  double memory = double(pages) * double(pageSize) / devices;
  std::printf(
      "{\n"
      "  \"name\": \"%d CPU virtual devices (%d threads each), "
      "calibrated by pc-bench-calibrate\",\n"
      "  \"nodes\": 1,\n"
      "  \"devices_per_node\": %d,\n"
      "%s"
      "  \"device\": {\n"
      "    \"name\": \"CPU virtual device\",\n"
      "    \"peak_flops\": {\"f32\": %.4g, \"bf16\": %.4g},\n"
      "    \"memory\": %.4g,\n"
      "    \"memory_bandwidth\": %.4g\n"
      "  },\n",
      devices, threads, devices,
      ("  \"concurrent_devices\": " + std::to_string(concurrent) + ",\n")
          .c_str(),
      flops, flops, memory, bandwidth);
  if (devices > 1) {
    std::printf("  \"intra_node\": {\"kind\": \"shared-memory\", "
                "\"bandwidth\": %.4g, \"latency\": %.4g",
                beta, alpha);
    if (p2p > 0)
      std::printf(", \"p2p_latency\": %.4g", p2p);
    std::printf("},\n");
  }
  std::printf("  \"efficiency\": {\n"
              "    \"matmul\": 1,\n"
              "    \"memory\": 1,\n"
              "    \"collective\": 1,\n"
              "    \"kernel_latency\": %.4g,\n"
              "    \"usable_memory\": 0.8\n"
              "  }\n"
              "}\n",
              firing);
  return 0;
}

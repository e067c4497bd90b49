//===- CalibrateRuntime.cpp - Measuring the actor runtime -----------------===//

#include "bench/CalibrateRuntime.h"

#include "api/Program.h"
#include "dialect/OpProfile.h"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <thread>

namespace pc::calibrate {

static double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double cpuNow() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

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

double wakeCpu(int pairs) {
  const int turns = 5000;
  auto pingPong = [&](int) {
    std::mutex mu;
    std::condition_variable cv;
    int turn = 0;
    std::thread other([&] {
      for (int i = 0; i < turns; ++i) {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return turn == 1; });
        turn = 0;
        cv.notify_one();
      }
    });
    for (int i = 0; i < turns; ++i) {
      std::unique_lock<std::mutex> lock(mu);
      turn = 1;
      cv.notify_one();
      cv.wait(lock, [&] { return turn == 0; });
    }
    other.join();
  };
  std::vector<double> perWake;
  for (int round = 0; round < 3; ++round) {
    double c0 = cpuNow();
    concurrently(pairs, 1, pingPong);
    perWake.push_back((cpuNow() - c0) / (2.0 * turns * pairs));
  }
  return median(perWake);
}

/// The median time of a run of `src`'s graph @chain on `devices` CPU
/// devices, compiled and run by the actor runtime; its one argument is a
/// vector of 8 floats per device.
static absl::StatusOr<double> timeChain(const std::string &src, int devices,
                                        int threads,
                                        std::vector<int64_t> shape = {},
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
static std::string chain(int devices, int links, const std::string &body) {
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

/// The op profile of `src`'s graph @chain, as pc-run --profile-ops takes
/// it with `threads` threads a device.
static absl::StatusOr<pc::OpProfile> profileOf(const std::string &src,
                                               int threads) {
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
  return *std::move(profile);
}

absl::StatusOr<double> opLatency(int devices, int threads, double *kernel,
                                 double *cpu) {
  const int ops = 256;
  std::string src = chain(devices, ops, "  $OUT = pc.exp $IN : ($T) -> $T\n");
  absl::StatusOr<double> t = timeChain(src, devices, threads, {}, cpu);
  if (!t.ok())
    return t;
  if (cpu)
    *cpu /= double(ops) * devices;
  if (kernel) {
    absl::StatusOr<pc::OpProfile> profile = profileOf(src, threads);
    if (!profile.ok())
      return profile.status();
    *kernel = 0;
    for (const auto &[key, seconds] : profile->seconds)
      if (llvm::StringRef(key).starts_with("pc.exp "))
        *kernel = std::max(*kernel, seconds);
  }
  return *t / ops;
}

absl::StatusOr<double> allReduceLatency(int devices, int threads, double opCost,
                                        double *cpu) {
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

absl::StatusOr<std::pair<std::string, double>> queuedAllReduces(int devices,
                                                                int threads) {
  const int links = 128;
  const std::string type = "tensor<" + std::to_string(8 * devices) +
                           "xf32, #pc.sbp<@m, [S(0)]>>",
                    p = "tensor<1xf32, #pc.sbp<@m, [P]>>",
                    b = "tensor<1xf32, #pc.sbp<@m, [B]>>";
  std::string src = "pc.mesh @m <[\"x\"=" + std::to_string(devices) +
                    "]>\nfunc.func @chain(%x: " + type + ") -> " + type +
                    " {\n";
  for (int i = 0; i < links; ++i) {
    std::string k = std::to_string(i);
    src += "  %s" + k + " = pc.reduce_sum %x {axes = array<i64: 0>, " +
           "keepdim} : (" + type + ") -> " + p + "\n  %b" + k +
           " = pc.to_sbp %s" + k + " : (" + p + ") -> " + b + "\n";
  }
  std::string prev = "%x";
  for (int i = 0; i < links; ++i) {
    std::string k = std::to_string(i);
    src += "  %a" + k + " = pc.add " + prev + ", %b" + k + " : (" + type +
           ", " + b + ") -> " + type + "\n";
    prev = "%a" + k;
  }
  src += "  return " + prev + " : " + type + "\n}\n";
  absl::StatusOr<double> t = timeChain(src, devices, threads);
  if (!t.ok())
    return t.status();
  return std::make_pair(src, *t);
}

absl::StatusOr<std::pair<std::string, double>>
tensorParallelChain(int devices, int threads) {
  const int links = 32;
  auto type = [&](const char *shape, const char *sbp) {
    return "tensor<" + std::string(shape) + "xf32, #pc.sbp<@m, [" + sbp + "]>>";
  };
  const std::string x = type("512x64", "B"), fc1 = type("64x256", "S(1)"),
                    fc2 = type("256x64", "S(0)"), u = type("512x256", "S(1)"),
                    p = type("512x64", "P");
  std::string params, body, prev = "%x";
  for (int i = 0; i < links; ++i) {
    const std::string k = std::to_string(i);
    params += "pc.param @fc1_" + k + " : " + fc1 +
              " = #pc.init<normal(std = 0.02)>\n" + "pc.param @fc2_" + k +
              " : " + fc2 + " = #pc.init<normal(std = 0.02)>\n";
    body += "  %f" + k + " = pc.get_param @fc1_" + k + " : " + fc1 + "\n";
    body += "  %g" + k + " = pc.get_param @fc2_" + k + " : " + fc2 + "\n";
    body += "  %u" + k + " = pc.matmul " + prev + ", %f" + k + " : (" + x +
            ", " + fc1 + ") -> " + u + "\n";
    // Five GELUs: a longer stretch of compute between the meetings (with
    // one, the fitted lag varied twice as much between calibrations).
    std::string act = "%u" + k;
    for (int e = 0; e < 5; ++e) {
      std::string next = "%a" + k + "_" + std::to_string(e);
      body += "  " + next + " = pc.gelu " + act + " {approximate} : (" + u +
              ") -> " + u + "\n";
      act = next;
    }
    body += "  %d" + k + " = pc.matmul " + act + ", %g" + k + " : (" + u +
            ", " + fc2 + ") -> " + p + "\n";
    body +=
        "  %b" + k + " = pc.to_sbp %d" + k + " : (" + p + ") -> " + x + "\n";
    body += "  %r" + k + " = pc.add " + prev + ", %b" + k + " : (" + x + ", " +
            x + ") -> " + x + "\n";
    prev = "%r" + k;
  }
  const std::string src = "pc.mesh @m <[\"x\"=" + std::to_string(devices) +
                          "]>\n" + params + "func.func @chain(%x: " + x +
                          ") -> " + x + " {\n" + body + "  return " + prev +
                          " : " + x + "\n}\n";
  absl::StatusOr<double> t = timeChain(src, devices, threads, {512, 64});
  if (!t.ok())
    return t.status();
  return std::make_pair(src, *t);
}

absl::StatusOr<double> allReduceByteWork(int devices, int threads,
                                         bool inCores) {
  const int links = 64;
  auto source = [&](int64_t count) {
    std::string n = std::to_string(count), d = std::to_string(devices);
    std::string t = "tensor<" + n + "x" + d + "xf32, #pc.sbp<@m, [S(1)]>>",
                p = "tensor<" + n + "x1xf32, #pc.sbp<@m, [P]>>",
                b = "tensor<" + n + "x1xf32, #pc.sbp<@m, [B]>>";
    std::string src = "pc.mesh @m <[\"x\"=" + d +
                      "]>\nfunc.func @chain(%x: " + t + ") -> " + t + " {\n",
                prev = "%x";
    for (int i = 0; i < links; ++i) {
      std::string k = std::to_string(i);
      src += "  %s" + k + " = pc.reduce_sum " + prev +
             " {axes = array<i64: 1>, keepdim} : (" + t + ") -> " + p + "\n" +
             "  %b" + k + " = pc.to_sbp %s" + k + " : (" + p + ") -> " + b +
             "\n" + "  %a" + k + " = pc.add " + prev + ", %b" + k + " : (" + t +
             ", " + b + ") -> " + t + "\n";
      prev = "%a" + k;
    }
    return src + "  return " + prev + " : " + t + "\n}\n";
  };
  // Per member and link: its time (of the cores, or wall), and the
  // kernels'.
  auto perLink = [&](int64_t count, double &kernels) -> absl::StatusOr<double> {
    std::string src = source(count);
    double cpu = 0;
    absl::StatusOr<double> t =
        timeChain(src, devices, threads, {count, devices}, &cpu);
    if (!t.ok())
      return t;
    absl::StatusOr<pc::OpProfile> profile = profileOf(src, threads);
    if (!profile.ok())
      return profile.status();
    kernels = 0;
    for (const auto &[key, seconds] : profile->seconds)
      kernels += seconds; // the link's sum and add
    return inCores ? cpu / (double(links) * devices) : *t / links;
  };
  const int64_t count = 32768;
  double smallKernels = 0, bigKernels = 0;
  absl::StatusOr<double> small = perLink(1, smallKernels);
  if (!small.ok())
    return small;
  absl::StatusOr<double> big = perLink(count, bigKernels);
  if (!big.ok())
    return big;
  double bytes = 4.0 * double(count - 1);
  return std::max(0.0, (*big - *small - (bigKernels - smallKernels)) / bytes);
}

absl::StatusOr<double> pairAllReduceLatency(int devices, int threads,
                                            double opCost, double *cpu) {
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
static std::string hopRing(int devices, int links) {
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

absl::StatusOr<double> hopLatency(int devices, int threads, double opCost,
                                  double *cpu,
                                  std::pair<std::string, double> *ring) {
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

} // namespace pc::calibrate

//===- CalibrateModel.cpp - A spec, fitted with pc-simulate ---------------===//

#include "bench/CalibrateModel.h"
#include "bench/CalibrateRuntime.h"

#include "api/Program.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <memory>
#include <unistd.h>
#include <utility>
#include <vector>

namespace pc::calibrate {

/// pc-simulate's step for `src` over `figures` (written to a spec file,
/// as pc-run --cluster reads it), its compute timed by `profile` (the
/// JSON of Program::profileOps).
static absl::StatusOr<double>
simulated(const std::string &src, const Figures &figures,
          const std::string &profile, const pc::api::CompileOptions &base = {},
          double *work = nullptr) {
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
    pc::api::CompileOptions options = base;
    options.cluster = path;
    absl::StatusOr<pc::api::Program> program =
        pc::api::compileSource(src, "calibrate", options);
    double t = 0;
    if (!program.ok())
      step = program.status();
    else if (absl::StatusOr<std::string> s = program->simulate(
                 &t, profile, /*emulatedCompute=*/false, nullptr, work);
             !s.ok())
      step = s.status();
    else
      step = t;
  }
  unlink(path);
  return step;
}

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

/// `text` with each `$k` replaced by `values[k]` (k a digit).
static std::string fill(const std::string &text,
                        const std::vector<std::string> &values) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    size_t k = size_t(text[++i] - '0');
    assert(k < values.size() && "a $ names a value it is given");
    out += values[k];
  }
  return out;
}

/// A residual MLP (`blocks` blocks of layer norm, matmul, GELU, matmul and
/// add; a head and its cross-entropy) over a batch of `rows`, on one
/// device, trained with Adam: the mix of firings a model's training step
/// has (parameters read and updated, ops of two and three inputs, values
/// read twice, activations of rows x 64 and rows x 256), which a chain of
/// tiny exponentials lacks.
static std::string trainingGraph(int blocks, int rows) {
  const std::string r = std::to_string(rows);
  std::string src = "pc.mesh @m <[\"x\"=1]>\n"
                    "pc.param @head : tensor<64x128xf32> = "
                    "#pc.init<normal(std = 0.02)>\n";
  std::string body, prev = "%x";
  for (int b = 0; b < blocks; ++b) {
    const std::vector<std::string> v = {std::to_string(b), prev, r};
    src += fill("pc.param @b$0.ln.w : tensor<64xf32> = #pc.init<ones>\n"
                "pc.param @b$0.ln.b : tensor<64xf32> = #pc.init<zeros>\n"
                "pc.param @b$0.fc1 : tensor<64x256xf32> = "
                "#pc.init<normal(std = 0.02)>\n"
                "pc.param @b$0.fc2 : tensor<256x64xf32> = "
                "#pc.init<normal(std = 0.02)>\n",
                v);
    body += fill(
        "  %w$0 = pc.get_param @b$0.ln.w : tensor<64xf32>\n"
        "  %c$0 = pc.get_param @b$0.ln.b : tensor<64xf32>\n"
        "  %f$0 = pc.get_param @b$0.fc1 : tensor<64x256xf32>\n"
        "  %g$0 = pc.get_param @b$0.fc2 : tensor<256x64xf32>\n"
        "  %n$0 = pc.layer_norm $1, %w$0, %c$0 : (tensor<$2x64xf32>, "
        "tensor<64xf32>, tensor<64xf32>) -> tensor<$2x64xf32>\n"
        "  %u$0 = pc.matmul %n$0, %f$0 : (tensor<$2x64xf32>, "
        "tensor<64x256xf32>) -> tensor<$2x256xf32>\n"
        "  %a$0 = pc.gelu %u$0 {approximate} : (tensor<$2x256xf32>) -> "
        "tensor<$2x256xf32>\n"
        "  %d$0 = pc.matmul %a$0, %g$0 : (tensor<$2x256xf32>, "
        "tensor<256x64xf32>) -> tensor<$2x64xf32>\n"
        "  %r$0 = pc.add $1, %d$0 : (tensor<$2x64xf32>, tensor<$2x64xf32>) "
        "-> tensor<$2x64xf32>\n",
        v);
    prev = "%r" + std::to_string(b);
  }
  return src +
         fill("func.func @mlp(%x: tensor<$0x64xf32>, %labels: "
              "tensor<$0xi64>) -> tensor<f32> {\n",
              {r}) +
         body +
         fill("  %wh = pc.get_param @head : tensor<64x128xf32>\n"
              "  %y = pc.matmul $1, %wh : (tensor<$0x64xf32>, "
              "tensor<64x128xf32>) -> tensor<$0x128xf32>\n"
              "  %l = pc.cross_entropy %y, %labels : (tensor<$0x128xf32>, "
              "tensor<$0xi64>) -> tensor<$0xf32>\n"
              "  %s = pc.reduce_mean %l {axes = array<i64: 0>} : "
              "(tensor<$0xf32>) -> tensor<f32>\n"
              "  return %s : tensor<f32>\n}\n",
              {r, prev});
}

/// What pc-simulate counts of `field` in `src`'s step, over `program`'s
/// ops profiled on devices of `threads` threads: its step (or, with
/// `work`, its work on the cores) with `field` vanishing, and how many
/// times a microsecond of it adds a microsecond (firings, hops).
static absl::StatusOr<std::pair<double, double>>
baseAndCount(const pc::api::Program &program, int threads,
             const std::string &src, Figures f, double Figures::*field,
             const pc::api::CompileOptions &options, bool work) {
  absl::StatusOr<std::string> profiled = program.profileOps(threads);
  if (!profiled.ok())
    return profiled.status();
  const std::string &profile = *profiled;
  double base = 0, with = 0;
  f.*field = 1e-15;
  absl::StatusOr<double> s =
      simulated(src, f, profile, options, work ? &base : nullptr);
  if (!s.ok())
    return s.status();
  if (!work)
    base = *s;
  f.*field = 1e-6;
  s = simulated(src, f, profile, options, work ? &with : nullptr);
  if (!s.ok())
    return s.status();
  if (!work)
    with = *s;
  return std::make_pair(base, (with - base) / 1e-6);
}

/// A session of `devices` CPU devices for `program`, its inputs fed with
/// example values (seed `seed`).
static absl::StatusOr<std::unique_ptr<pc::api::Session>>
trainingSession(const pc::api::Program &program, int devices, int threads,
                uint64_t seed) {
  pc::api::SessionOptions sessionOptions;
  sessionOptions.devices = devices;
  sessionOptions.threadsPerDevice = threads;
  absl::StatusOr<std::unique_ptr<pc::api::Session>> session =
      pc::api::Session::create(program, sessionOptions);
  if (!session.ok())
    return session.status();
  absl::StatusOr<std::vector<pc::runtime::HostTensor>> inputs =
      program.exampleInputs(seed);
  if (!inputs.ok())
    return inputs.status();
  for (const pc::api::Port &port : program.inputs())
    if (!program.fedByTraining(port.index))
      if (absl::Status s =
              (*session)->feed(port.name, std::move((*inputs)[port.index]));
          !s.ok())
        return s;
  return session;
}

/// The median step of `devices` one-device sessions of `program` training
/// at once: seconds of the host's cores per session with `inCores`, else
/// wall time; `busyCores`, the cores they kept busy.
static absl::StatusOr<double> sessionsStep(const pc::api::Program &program,
                                           int devices, int threads,
                                           bool inCores, double *busyCores) {
  std::vector<std::unique_ptr<pc::api::Session>> sessions;
  for (int d = 0; d < devices; ++d) {
    absl::StatusOr<std::unique_ptr<pc::api::Session>> session =
        trainingSession(program, 1, threads, d);
    if (!session.ok())
      return session.status();
    sessions.push_back(*std::move(session));
  }
  // Rounds of steps on every session at once; the median round, as the
  // bench takes the median step.
  const int steps = 8;
  std::vector<double> perStep, busy;
  for (int round = 0; round < 7; ++round) {
    std::vector<absl::Status> status(devices);
    double c0 = cpuNow();
    double wall = concurrently(devices, 1, [&](int d) {
      status[d] = sessions[d]->train(steps).status();
    });
    double cpu = cpuNow() - c0;
    for (const absl::Status &s : status)
      if (!s.ok())
        return s;
    if (round == 0)
      continue; // warm-up: primitives, pages, the allocators' caches
    // On cores of their own the sessions' steps are wall time, which the
    // simulator counts per device; on shared cores, seconds of the cores.
    perStep.push_back(inCores ? cpu / (double(devices) * steps) : wall / steps);
    busy.push_back(cpu / wall);
  }
  if (busyCores)
    *busyCores = median(busy);
  return median(perStep);
}

absl::StatusOr<double> trainingFiring(int devices, int threads,
                                      const Figures &figures, bool inCores,
                                      double *busyCores, double *kernelRatio) {
  // The MLP at two batches: the same firings, kernels 4x the work.
  const int rows[2] = {256, 1024};
  double step[2], kernels[2], count = 0;
  for (int i = 0; i < 2; ++i) {
    const std::string src = trainingGraph(2, rows[i]);
    pc::api::CompileOptions options;
    options.train = true;
    absl::StatusOr<pc::api::Program> program =
        pc::api::compileSource(src, "calibrate", options);
    if (!program.ok())
      return program.status();
    absl::StatusOr<double> s = sessionsStep(*program, devices, threads, inCores,
                                            i ? nullptr : busyCores);
    if (!s.ok())
      return s.status();
    step[i] = *s;
    // The step's kernels and its firings, as pc-simulate counts them: its
    // time with a vanishing firing cost (the spec wants one) and kernels
    // at their profiled times, and what a microsecond of firing adds.
    Figures alone = figures;
    alone.kernelInStep = 1;
    absl::StatusOr<std::pair<double, double>> firings =
        baseAndCount(*program, threads, src, alone, &Figures::firing, options,
                     /*work=*/false);
    if (!firings.ok())
      return firings.status();
    kernels[i] = firings->first;
    count = firings->second;
  }
  if (count < 1)
    return absl::InternalError("the training step has no firings to share");
  // A step is kernelInStep times its profiled kernels plus its firings:
  // the larger batch's extra time is its extra kernels' in a step.
  double ratio = kernels[1] > kernels[0]
                     ? (step[1] - step[0]) / (kernels[1] - kernels[0])
                     : 1;
  ratio = std::clamp(ratio, 1.0, 2.0);
  if (kernelRatio)
    *kernelRatio = ratio;
  return std::max(1e-9, (step[0] - ratio * kernels[0]) / count);
}

absl::StatusOr<double> pipelineHopWork(int devices, int threads,
                                       const Figures &figures, int *hops) {
  // A block per stage, 2 micro-batches per stage of 32 rows each.
  const std::string src = trainingGraph(std::max(2, devices), 64 * devices);
  pc::api::CompileOptions options;
  options.train = true;
  options.stages = devices;
  options.microbatches = 2 * devices;
  options.schedule = "1f1b";
  absl::StatusOr<pc::api::Program> program =
      pc::api::compileSource(src, "calibrate", options);
  if (!program.ok())
    return program.status();
  absl::StatusOr<std::unique_ptr<pc::api::Session>> session =
      trainingSession(*program, devices, threads, 0);
  if (!session.ok())
    return session.status();
  const int steps = 8;
  std::vector<double> perStep;
  for (int round = 0; round < 7; ++round) {
    double c0 = cpuNow();
    if (absl::Status s = (*session)->train(steps).status(); !s.ok())
      return s;
    if (round > 0) // the first warms the primitives, pages and caches
      perStep.push_back((cpuNow() - c0) / steps);
  }
  // The step's work as pc-simulate counts it, but for its hops' (a
  // vanishing p2p_work), and what a microsecond each adds.
  absl::StatusOr<std::pair<double, double>> counted =
      baseAndCount(*program, threads, src, figures, &Figures::p2pWork, options,
                   /*work=*/true);
  if (!counted.ok())
    return counted.status();
  auto [without, count] = *counted;
  if (count < 1)
    return absl::InternalError("the pipeline's step has no hops to share");
  if (hops)
    *hops = int(count + 0.5);
  return std::max(1e-7, (median(perStep) - without) / count);
}

} // namespace pc::calibrate

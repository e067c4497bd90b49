//===- CalibrateModel.cpp - A spec, fitted with pc-simulate ---------------===//

#include "bench/CalibrateModel.h"
#include "bench/CalibrateRuntime.h"

#include "api/Program.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <unistd.h>
#include <vector>

namespace pc::calibrate {

/// pc-simulate's step for `src` over `figures` (written to a spec file,
/// as pc-run --cluster reads it), its compute timed by `profile` (the
/// JSON of Program::profileOps).
static absl::StatusOr<double> simulated(const std::string &src,
                                        const Figures &figures,
                                        const std::string &profile,
                                        bool train = false) {
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
    options.train = train;
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

/// A residual MLP (two blocks of layer norm, matmul, GELU, matmul and add;
/// a head and its cross-entropy) on one device, trained with Adam: the mix
/// of firings a model's training step has (parameters read and updated,
/// ops of two and three inputs, values read twice, activations of 64 KiB),
/// which a chain of tiny exponentials lacks.
static std::string trainingGraph() {
  const std::string x = "tensor<256x64xf32>", h = "tensor<256x256xf32>",
                    v = "tensor<64xf32>";
  std::string src = "pc.mesh @m <[\"x\"=1]>\n"
                    "pc.param @head : tensor<64x128xf32> = "
                    "#pc.init<normal(std = 0.02)>\n";
  std::string body, prev = "%x";
  for (int b = 0; b < 2; ++b) {
    std::string p = "@b" + std::to_string(b), i = std::to_string(b);
    src += "pc.param " + p + ".ln.w : " + v + " = #pc.init<ones>\n" +
           "pc.param " + p + ".ln.b : " + v + " = #pc.init<zeros>\n" +
           "pc.param " + p +
           ".fc1 : tensor<64x256xf32> = " + "#pc.init<normal(std = 0.02)>\n" +
           "pc.param " + p +
           ".fc2 : tensor<256x64xf32> = #pc.init<normal(std = 0.02)>\n";
    body +=
        "  %w" + i + " = pc.get_param " + p + ".ln.w : " + v + "\n" + "  %c" +
        i + " = pc.get_param " + p + ".ln.b : " + v + "\n" + "  %f" + i +
        " = pc.get_param " + p + ".fc1 : tensor<64x256xf32>\n" + "  %g" + i +
        " = pc.get_param " + p + ".fc2 : tensor<256x64xf32>\n" + "  %n" + i +
        " = pc.layer_norm " + prev + ", %w" + i + ", %c" + i + " : (" + x +
        ", " + v + ", " + v + ") -> " + x + "\n" + "  %u" + i +
        " = pc.matmul %n" + i + ", %f" + i + " : (" + x +
        ", tensor<64x256xf32>) -> " + h + "\n" + "  %a" + i + " = pc.gelu %u" +
        i + " {approximate} : (" + h + ") -> " + h + "\n" + "  %d" + i +
        " = pc.matmul %a" + i + ", %g" + i + " : (" + h +
        ", tensor<256x64xf32>) -> " + x + "\n" + "  %r" + i + " = pc.add " +
        prev + ", %d" + i + " : (" + x + ", " + x + ") -> " + x + "\n";
    prev = "%r" + i;
  }
  return src + "func.func @mlp(%x: " + x +
         ", %labels: tensor<256xi64>) -> tensor<f32> {\n" + body +
         "  %wh = pc.get_param @head : tensor<64x128xf32>\n"
         "  %y = pc.matmul " +
         prev + ", %wh : (" + x +
         ", tensor<64x128xf32>) -> tensor<256x128xf32>\n"
         "  %l = pc.cross_entropy %y, %labels : (tensor<256x128xf32>, "
         "tensor<256xi64>) -> tensor<256xf32>\n"
         "  %s = pc.reduce_mean %l {axes = array<i64: 0>} : "
         "(tensor<256xf32>) -> tensor<f32>\n"
         "  return %s : tensor<f32>\n}\n";
}

absl::StatusOr<double> trainingFiring(int devices, int threads,
                                      const Figures &figures, bool inCores,
                                      double *busyCores) {
  const std::string src = trainingGraph();
  pc::api::CompileOptions options;
  options.train = true;
  absl::StatusOr<pc::api::Program> program =
      pc::api::compileSource(src, "calibrate", options);
  if (!program.ok())
    return program.status();
  std::vector<std::unique_ptr<pc::api::Session>> sessions;
  for (int d = 0; d < devices; ++d) {
    pc::api::SessionOptions sessionOptions;
    sessionOptions.devices = 1;
    sessionOptions.threadsPerDevice = threads;
    absl::StatusOr<std::unique_ptr<pc::api::Session>> session =
        pc::api::Session::create(*program, sessionOptions);
    if (!session.ok())
      return session.status();
    absl::StatusOr<std::vector<pc::runtime::HostTensor>> inputs =
        program->exampleInputs(d);
    if (!inputs.ok())
      return inputs.status();
    for (const pc::api::Port &port : program->inputs())
      if (!program->fedByTraining(port.index))
        if (absl::Status s =
                (*session)->feed(port.name, std::move((*inputs)[port.index]));
            !s.ok())
          return s;
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
  // The step's kernels and its firings, as pc-simulate counts them: its
  // time with a vanishing firing cost (the spec wants one), and what a
  // microsecond each adds.
  absl::StatusOr<std::string> profile = program->profileOps(threads);
  if (!profile.ok())
    return profile.status();
  Figures f = figures;
  f.firing = 1e-15;
  absl::StatusOr<double> kernels = simulated(src, f, *profile, true);
  if (!kernels.ok())
    return kernels;
  f.firing = 1e-6;
  absl::StatusOr<double> withFirings = simulated(src, f, *profile, true);
  if (!withFirings.ok())
    return withFirings;
  double firings = (*withFirings - *kernels) / 1e-6;
  if (firings < 1)
    return absl::InternalError("the training step has no firings to share");
  return std::max(1e-9, (median(perStep) - *kernels) / firings);
}

} // namespace pc::calibrate

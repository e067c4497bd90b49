//===- TrainingStep.cpp - A training step against a forward pass ----------===//
//
// One device, an MLP (batch 256, 1024 -> 4096 -> 1024 classes, relu,
// cross-entropy): the forward pass with its loss, against one training step
// of the same graph (--pc-autodiff, AdamW by --pc-optimizer, then
// --pc-distribute), best of N runs each, in one process. Prints both times,
// their ratio (the usual frameworks take about 3x), and where the step's
// time goes, by op, from one traced step.
//
//   build/bench/pc-bench-training-step [RUNS]
//
//===----------------------------------------------------------------------===//

#include "passes/InitAll.h"
#include "runtime/exec/CpuExecutor.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "bench/Timing.h"
#include <algorithm>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>

using namespace mlir;
using pc::runtime::CommType;
using pc::runtime::HostTensor;

static const char *kModel = R"mlir(
pc.mesh @m <["x"=1]>
pc.param @w1 : tensor<1024x4096xf32, #pc.sbp<@m, [B]>> = #pc.init<normal(std = 0.02)>
pc.param @w2 : tensor<4096x1024xf32, #pc.sbp<@m, [B]>> = #pc.init<normal(std = 0.02)>
func.func @mlp(%x: tensor<256x1024xf32, #pc.sbp<@m, [B]>>, %y: tensor<256xi64, #pc.sbp<@m, [B]>>) -> (tensor<f32> {pc.loss}) {
  %w1 = pc.get_param @w1 : tensor<1024x4096xf32, #pc.sbp<@m, [B]>>
  %w2 = pc.get_param @w2 : tensor<4096x1024xf32, #pc.sbp<@m, [B]>>
  %h = pc.matmul %x, %w1 : (tensor<256x1024xf32, #pc.sbp<@m, [B]>>, tensor<1024x4096xf32, #pc.sbp<@m, [B]>>) -> tensor<256x4096xf32>
  %a = pc.relu %h : (tensor<256x4096xf32>) -> tensor<256x4096xf32>
  %z = pc.matmul %a, %w2 : (tensor<256x4096xf32>, tensor<4096x1024xf32, #pc.sbp<@m, [B]>>) -> tensor<256x1024xf32>
  %l = pc.cross_entropy %z, %y : (tensor<256x1024xf32>, tensor<256xi64, #pc.sbp<@m, [B]>>) -> tensor<256xf32>
  %loss = pc.reduce_mean %l {axes = array<i64: 0>} : (tensor<256xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
)mlir";

int main(int argc, char **argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  DialectRegistry registry;
  pc::registerAllDialects(registry);
  pc::registerAllPasses();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  auto compile = [&](const char *pipeline) {
    OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(kModel, &context);
    PassManager pm = PassManager::on<ModuleOp>(&context);
    if (!m || failed(parsePassPipeline(pipeline, pm)) || failed(pm.run(*m))) {
      std::fprintf(stderr, "compiling with %s failed\n", pipeline);
      std::exit(1);
    }
    return m;
  };
  OwningOpRef<ModuleOp> forward = compile("pc-distribute");
  OwningOpRef<ModuleOp> train =
      compile("pc-autodiff,pc-optimizer{kind=adamw},pc-distribute");

  std::mt19937 rng(1);
  HostTensor x = HostTensor::zeros({256, 1024}, CommType::F32);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
  HostTensor y = HostTensor::zeros({256}, CommType::I64);
  for (int64_t i = 0; i < y.numel(); ++i)
    y.as<int64_t>()[i] = std::uniform_int_distribution<int64_t>(0, 1023)(rng);
  HostTensor lr = HostTensor::zeros({}, CommType::F32);
  lr.as<float>()[0] = 1e-3f;

  pc::runtime::CpuSession fwd(*forward, 0), step(*train, 0);
  bool ok = true;
  // The first run of each initializes the parameters; not measured.
  ok &= fwd.run("mlp", {x, y}).ok();
  ok &= step.run("mlp", {x, y, lr}).ok();
  double tf = pc::bench::best(runs, [&] { ok &= fwd.run("mlp", {x, y}).ok(); });
  double ts = pc::bench::best(runs, [&] {
    ok &= step.run("mlp", {x, y, lr}).ok();
  });
  pc::runtime::CpuRunOptions traced;
  traced.trace = true;
  absl::StatusOr<pc::runtime::CpuRun> one = step.run("mlp", {x, y, lr}, traced);
  if (!ok || !one.ok()) {
    std::fprintf(stderr, "a run failed\n");
    return 1;
  }
  std::printf("MLP on one device, best of %d: forward %.4f s, training step "
              "(backward + AdamW) %.4f s, ratio %.2f\n",
              runs, tf, ts, ts / tf);
  std::map<std::string, std::pair<double, int>> byOp;
  double total = 0;
  for (const pc::runtime::OpEvent &e : one->events.begin()->second) {
    byOp[e.name].first += e.durationUs;
    ++byOp[e.name].second;
    total += e.durationUs;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> sorted(
      byOp.begin(), byOp.end());
  std::sort(sorted.begin(), sorted.end(),
            [](auto &a, auto &b) { return a.second.first > b.second.first; });
  std::printf("where one step's %.1f ms of kernels go:\n", total / 1000);
  for (size_t i = 0; i < sorted.size() && i < 10; ++i)
    std::printf("  %-20s %3d ops %8.2f ms %5.1f%%\n", sorted[i].first.c_str(),
                sorted[i].second.second, sorted[i].second.first / 1000,
                100 * sorted[i].second.first / total);
  return 0;
}

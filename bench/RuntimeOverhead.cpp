//===- RuntimeOverhead.cpp - The executor against a plain kernel loop -----===//
//
// A single-device MLP forward pass (batch 256, 1024 -> 4096 -> 1024, f32)
// through the runtime (compiled with --pc-distribute, run by a CpuSession)
// against a plain C++ loop calling the same kernels on the same shapes, best
// of N runs each, in one process. Prints both times and their ratio (target
// <= 1.1).
//
//   build/bench/pc-bench-runtime-overhead [RUNS]
//
//===----------------------------------------------------------------------===//

#include "passes/InitAll.h"
#include "runtime/device/HostTensor.h"
#include "runtime/exec/CpuExecutor.h"
#include "runtime/kernels/CpuKernels.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "bench/Timing.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

using namespace mlir;
using pc::runtime::CommType;
using pc::runtime::HostTensor;

static const char *kModel = R"mlir(
pc.mesh @m <["x"=1]>
pc.param @w1 : tensor<1024x4096xf32, #pc.sbp<@m, [B]>> = #pc.init<normal(std = 0.02)>
pc.param @w2 : tensor<4096x1024xf32, #pc.sbp<@m, [B]>> = #pc.init<normal(std = 0.02)>
func.func @mlp(%x: tensor<256x1024xf32, #pc.sbp<@m, [B]>>) -> tensor<256x1024xf32> {
  %w1 = pc.get_param @w1 : tensor<1024x4096xf32, #pc.sbp<@m, [B]>>
  %w2 = pc.get_param @w2 : tensor<4096x1024xf32, #pc.sbp<@m, [B]>>
  %h = pc.matmul %x, %w1 : (tensor<256x1024xf32, #pc.sbp<@m, [B]>>, tensor<1024x4096xf32, #pc.sbp<@m, [B]>>) -> tensor<256x4096xf32>
  %a = pc.relu %h : (tensor<256x4096xf32>) -> tensor<256x4096xf32>
  %y = pc.matmul %a, %w2 : (tensor<256x4096xf32>, tensor<4096x1024xf32, #pc.sbp<@m, [B]>>) -> tensor<256x1024xf32>
  return %y : tensor<256x1024xf32>
}
)mlir";

HostTensor random(std::vector<int64_t> shape, std::mt19937 &rng) {
  HostTensor t = HostTensor::zeros(std::move(shape), CommType::F32);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
  return t;
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 10;
  pc::registerAllPasses();
  DialectRegistry registry;
  pc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModel, &context);
  PassManager pm = PassManager::on<ModuleOp>(&context);
  if (!module || failed(parsePassPipeline("pc-distribute", pm)) ||
      failed(pm.run(*module)))
    return 1;

  std::mt19937 rng(1);
  HostTensor x = random({256, 1024}, rng);
  HostTensor w1 = random({1024, 4096}, rng), w2 = random({4096, 1024}, rng);

  pc::runtime::CpuSession session(*module, 0);
  if (!session.run("mlp", {x}).ok()) // Initializes the parameters.
    return 1;
  double runtime = pc::bench::best(runs, [&] {
    if (!session.run("mlp", {x}).ok())
      std::abort();
  });
  double plain = pc::bench::best(runs, [&] {
    HostTensor h = HostTensor::zeros({256, 4096}, CommType::F32);
    HostTensor a = HostTensor::zeros({256, 4096}, CommType::F32);
    HostTensor y = HostTensor::zeros({256, 1024}, CommType::F32);
    if (!pc::runtime::cpu::matmul(x, w1, false, false, h).ok() ||
        !pc::runtime::cpu::unary(pc::runtime::cpu::Unary::Relu, h, a).ok() ||
        !pc::runtime::cpu::matmul(a, w2, false, false, y).ok())
      std::abort();
  });
  std::printf("MLP forward on one device, best of %d: runtime %.4f s, plain "
              "kernel loop %.4f s, ratio %.3f (target <= 1.1)\n",
              runs, runtime, plain, runtime / plain);
  return 0;
}

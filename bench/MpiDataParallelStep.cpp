//===- MpiDataParallelStep.cpp - A DP step: MPI processes vs threads ------===//
//
// The data-parallel training step of an MLP (batch 512, 512 -> 2048 -> 512
// classes, relu, cross-entropy, AdamW; the batch split over dp=2, the
// weights replicated, the gradients all-reduced), run two ways in the same
// launch, in alternating rounds:
//  - one rank per process: both processes of `mpirun -np 2`, through the
//    MPI communicator;
//  - both ranks as threads of process 0 (in-process world, the `cpu:2`
//    default), while process 1 sleeps in a non-blocking barrier.
// Prints the median step time of each and their ratio (MPI / threads; the
// target is <= 1.15), and whether the two runs' losses are bit-identical
// (two-member sums do not depend on the reduction order).
//
//   mpirun -np 2 build/bench/pc-bench-mpi-dp-step [ROUNDS] [STEPS]
//
//===----------------------------------------------------------------------===//

#include "passes/InitAll.h"
#include "runtime/comm/World.h"
#include "runtime/exec/CpuExecutor.h"
#include "runtime/exec/ProgramInterface.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

using namespace mlir;
using pc::runtime::CommType;
using pc::runtime::HostTensor;

static const char *kModel = R"mlir(
pc.mesh @m <["dp"=2]>
pc.param @w1 : tensor<512x2048xf32, #pc.sbp<@m, [B]>> = #pc.init<normal(std = 0.02)>
pc.param @w2 : tensor<2048x512xf32, #pc.sbp<@m, [B]>> = #pc.init<normal(std = 0.02)>
func.func @mlp(%x: tensor<512x512xf32, #pc.sbp<@m, [S(0)]>>, %y: tensor<512xi64, #pc.sbp<@m, [S(0)]>>) -> (tensor<f32> {pc.loss}) {
  %w1 = pc.get_param @w1 : tensor<512x2048xf32, #pc.sbp<@m, [B]>>
  %w2 = pc.get_param @w2 : tensor<2048x512xf32, #pc.sbp<@m, [B]>>
  %h = pc.matmul %x, %w1 : (tensor<512x512xf32, #pc.sbp<@m, [S(0)]>>, tensor<512x2048xf32, #pc.sbp<@m, [B]>>) -> tensor<512x2048xf32>
  %a = pc.relu %h : (tensor<512x2048xf32>) -> tensor<512x2048xf32>
  %z = pc.matmul %a, %w2 : (tensor<512x2048xf32>, tensor<2048x512xf32, #pc.sbp<@m, [B]>>) -> tensor<512x512xf32>
  %l = pc.cross_entropy %z, %y : (tensor<512x512xf32>, tensor<512xi64, #pc.sbp<@m, [S(0)]>>) -> tensor<512xf32>
  %loss = pc.reduce_mean %l {axes = array<i64: 0>} : (tensor<512xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
)mlir";

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int die(const char *what) {
  std::fprintf(stderr, "pc-bench-mpi-dp-step: %s\n", what);
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  int steps = argc > 2 ? std::atoi(argv[2]) : 5;
  DialectRegistry registry;
  pc::registerAllDialects(registry);
  pc::registerAllPasses();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(kModel, &context);
  PassManager pm = PassManager::on<ModuleOp>(&context);
  if (!m ||
      failed(parsePassPipeline(
          "pc-autodiff,pc-optimizer{kind=adamw},pc-distribute", pm)) ||
      failed(pm.run(*m))) {
    std::fprintf(stderr, "compiling failed\n");
    return 1;
  }

  pc::runtime::WorldOptions mpiOptions;
  mpiOptions.kind = pc::runtime::WorldOptions::Kind::Mpi;
  mpiOptions.devicesPerProcess = 1;
  absl::StatusOr<std::unique_ptr<pc::runtime::World>> mpi =
      pc::runtime::makeWorld(mpiOptions);
  if (!mpi.ok()) {
    std::fprintf(stderr, "%s (run under mpirun -np 2)\n",
                 mpi.status().ToString().c_str());
    return 1;
  }
  if ((*mpi)->processCount() != 2)
    return die("run under mpirun -np 2");
  bool first = (*mpi)->process() == 0;

  std::mt19937 rng(1);
  HostTensor x = HostTensor::zeros({512, 512}, CommType::F32);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
  HostTensor y = HostTensor::zeros({512}, CommType::I64);
  for (int64_t i = 0; i < y.numel(); ++i)
    y.as<int64_t>()[i] = std::uniform_int_distribution<int64_t>(0, 511)(rng);
  HostTensor lr = HostTensor::zeros({}, CommType::F32);
  lr.as<float>()[0] = 1e-3f;
  pc::runtime::ProgramInterface io = pc::runtime::interfaceOf(*m, "mlp");
  if (!io.lr || !io.loss)
    return die("the step has no lr input or loss");
  std::vector<HostTensor> inputs(3);
  inputs[*io.lr] = lr;
  for (int64_t i = 0, next = 0; i < 3; ++i)
    if (i != *io.lr)
      inputs[i] = next++ == 0 ? x : y;

  pc::runtime::CpuSession overMpi(*m, 0, mpi->get());
  std::unique_ptr<pc::runtime::World> threads =
      pc::runtime::makeInProcessWorld();
  std::unique_ptr<pc::runtime::CpuSession> inProcess;
  if (first)
    inProcess = std::make_unique<pc::runtime::CpuSession>(*m, 0, threads.get());
  pc::runtime::CpuRunOptions options;
  options.resultsOnEveryProcess = true;

  std::vector<double> mpiTimes, threadTimes, mpiLosses, threadLosses;
  auto timed = [&](pc::runtime::CpuSession &s, std::vector<double> *times,
                   std::vector<double> &losses) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<pc::runtime::CpuRun> run = s.run("mlp", inputs, options);
    double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!run.ok())
      die(run.status().ToString().c_str());
    if (times)
      times->push_back(t);
    losses.push_back(run->results[*io.loss].get(0));
  };
  // The first step of each initializes the parameters: not measured.
  timed(overMpi, nullptr, mpiLosses);
  if (first)
    timed(*inProcess, nullptr, threadLosses);
  for (int r = 0; r < rounds; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    for (int s = 0; s < steps; ++s)
      timed(overMpi, first ? &mpiTimes : nullptr, mpiLosses);
    // Process 1 sleeps (no busy polling) while process 0's threads run.
    MPI_Request done;
    MPI_Ibarrier(MPI_COMM_WORLD, &done);
    if (first)
      for (int s = 0; s < steps; ++s)
        timed(*inProcess, &threadTimes, threadLosses);
    for (int flag = 0; !flag;) {
      MPI_Test(&done, &flag, MPI_STATUS_IGNORE);
      if (!flag)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (first) {
    double a = median(mpiTimes), b = median(threadTimes);
    bool same = mpiLosses == threadLosses;
    std::printf("DP MLP step (dp=2, %d rounds x %d steps): mpirun -np 2 "
                "%.2f ms, in-process cpu:2 %.2f ms, ratio %.3f (target <= "
                "1.15); losses %s\n",
                rounds, steps, a * 1e3, b * 1e3, a / b,
                same ? "bit-identical" : "DIFFER");
  }
  return 0;
}

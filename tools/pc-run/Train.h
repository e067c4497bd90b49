//===- Train.h - pc-run's training loop -------------------------*- C++ -*-===//
//
// The loop of `pc-run --train`: feeds each step its scheduled rate, runs it,
// prints a progress line, records the curve in the report's steps, and
// writes checkpoints.
//
//===----------------------------------------------------------------------===//

#ifndef PC_TOOLS_PC_RUN_TRAIN_H
#define PC_TOOLS_PC_RUN_TRAIN_H

#include "runtime/exec/CpuExecutor.h"

#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace pc::tools {

struct TrainFlags {
  int steps;
  int registers;
  double lr;
  int warmupSteps, totalSteps;
  double minLr;
  std::string schedule, saveFormat, savePath;
  int saveEvery;
  bool trace; // trace the last step
};

/// Test hook, for the failure tests: PC_TEST_FAULT=PROCESS:STEP:ACTION makes
/// process PROCESS, before step STEP, `kill` itself (SIGKILL), `sleep`
/// forever, or `fail` (return an error). Returns the error of `fail`.
absl::Status injectFault(const runtime::World &world, int64_t step);

/// Trains `flags.steps` steps of `graph` from step `firstStep`. Fills
/// `stepTimes` (one entry per step, with its loss and rate) and `run` (the
/// last step, with bytes and collectives totalled over the steps). Returns
/// the exit code when pc-run is done (an error, or nothing left to write),
/// else nothing.
std::optional<int>
trainLoop(mlir::ModuleOp module, runtime::CpuSession &session,
          const std::string &graph, std::vector<runtime::HostTensor> &inputs,
          int64_t firstStep, const TrainFlags &flags,
          llvm::json::Array &stepTimes, absl::StatusOr<runtime::CpuRun> &run);

} // namespace pc::tools

#endif // PC_TOOLS_PC_RUN_TRAIN_H

//===- Train.h - pc-run's training loop -------------------------*- C++ -*-===//
//
// The loop of `pc-run --train`, on an API Session (api/Program.h), whose
// trainStep feeds the scheduled rate, runs the step and reads the loss:
// this loop sequences the steps, prints a progress line, records the curve
// in the report's steps, and writes checkpoints.
//
//===----------------------------------------------------------------------===//

#ifndef PC_TOOLS_PC_RUN_TRAIN_H
#define PC_TOOLS_PC_RUN_TRAIN_H

#include "api/Program.h"

#include "llvm/Support/JSON.h"

#include <map>
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
  bool trace; // trace the last run of steps
  /// Steps per run of the actor graph (loop-carried parameters).
  int stepsPerRun;
  /// Validation every N steps (0: never), over K batches; with a dataset.
  int evalEvery = 0, evalBatches = 0;
};

/// Test hook, for the failure tests: PC_TEST_FAULT=PROCESS:STEP:ACTION makes
/// process PROCESS, before step STEP, `kill` itself (SIGKILL), `sleep`
/// forever, or `fail` (return an error). Returns the error of `fail`.
absl::Status injectFault(const runtime::World &world, int64_t step);
/// The step PC_TEST_FAULT names (on any process): a run of steps starts
/// there, so that the fault comes between steps.
std::optional<int64_t> faultStep();

/// Writes the session's model weights with their LoRA adapters folded in
/// to the .safetensors file `path` (written by process 0, `speaker`),
/// through a temporary logical checkpoint beside it.
absl::Status exportMergedLora(api::Session &session,
                              const api::Program &program,
                              const std::string &path, double alpha,
                              bool speaker);

/// Trains `flags.steps` steps from the session's step. On process 0, fills
/// `stepTimes` (one entry per step, with its loss and rate), `validation`
/// (the validation loss before the first step and every evalEvery steps),
/// `comm` (each
/// rank's collectives, totalled over the steps) and `peaks` (each rank's
/// peak bytes over the steps). Returns false when pc-run has nothing left
/// to write (no steps), an error naming the step that failed.
absl::StatusOr<bool> trainLoop(api::Session &session, const TrainFlags &flags,
                               llvm::json::Array &stepTimes,
                               llvm::json::Array &validation,
                               std::map<int64_t, runtime::CommStats> &comm,
                               std::map<int64_t, int64_t> &peaks);

} // namespace pc::tools

#endif // PC_TOOLS_PC_RUN_TRAIN_H

//===- Train.cpp - pc-run's training loop on an API session --------------===//

#include "tools/pc-run/Train.h"

#include "api/Files.h"

#include "absl/strings/str_cat.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <thread>
#include <unistd.h>

namespace pc::tools {

absl::Status injectFault(const runtime::World &world, int64_t step) {
  const char *spec = std::getenv("PC_TEST_FAULT");
  if (!spec)
    return absl::OkStatus();
  llvm::SmallVector<llvm::StringRef, 3> parts;
  llvm::StringRef(spec).split(parts, ':');
  int64_t process = -1, at = -1;
  if (parts.size() != 3 || parts[0].getAsInteger(10, process) ||
      parts[1].getAsInteger(10, at))
    return absl::InvalidArgumentError(
        "PC_TEST_FAULT must be PROCESS:STEP:kill|sleep|fail");
  if (process != world.process() || at != step)
    return absl::OkStatus();
  llvm::errs().flush();
  if (parts[2] == "kill")
    std::raise(SIGKILL);
  if (parts[2] == "sleep")
    while (true)
      std::this_thread::sleep_for(std::chrono::hours(1));
  return absl::InternalError(absl::StrCat("PC_TEST_FAULT: process ", process,
                                          " fails at step ", step));
}

std::optional<int64_t> faultStep() {
  const char *spec = std::getenv("PC_TEST_FAULT");
  if (!spec)
    return std::nullopt;
  llvm::SmallVector<llvm::StringRef, 3> parts;
  llvm::StringRef(spec).split(parts, ':');
  int64_t at = -1;
  if (parts.size() != 3 || parts[1].getAsInteger(10, at))
    return std::nullopt;
  return at;
}

namespace {
/// The CPU seconds this process's threads have used (0 where the clock
/// is missing).
double processCpuSeconds() {
  timespec t{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0)
    return 0;
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

/// Evaluates and reports the validation loss after `step` steps.
absl::Status validate(api::Session &session, const TrainFlags &flags,
                      int64_t step, bool quiet, llvm::json::Array &validation) {
  absl::StatusOr<double> loss = session.evaluate(flags.evalBatches);
  if (!loss.ok())
    return loss.status();
  if (quiet)
    return absl::OkStatus();
  validation.push_back(llvm::json::Object{{"step", step}, {"loss", *loss}});
  llvm::outs() << "validation loss after step " << step << ": "
               << llvm::format("%.6f", *loss) << "\n";
  llvm::outs().flush();
  return absl::OkStatus();
}
} // namespace

absl::StatusOr<bool> trainLoop(api::Session &session, const TrainFlags &flags,
                               llvm::json::Array &stepTimes,
                               llvm::json::Array &validation,
                               std::map<int64_t, runtime::CommStats> &comm,
                               std::map<int64_t, int64_t> &peaks) {
  int64_t firstStep = session.report().step;
  api::OptimizerOptions rates;
  rates.lr = flags.lr;
  rates.schedule = flags.schedule;
  rates.warmupSteps = flags.warmupSteps;
  rates.totalSteps =
      flags.totalSteps > 0 ? flags.totalSteps : firstStep + flags.steps;
  rates.minLr = flags.minLr;
  if (absl::Status s = session.setSchedule(rates); !s.ok())
    return s;
  bool sharded = flags.saveFormat == "sharded";
  bool quiet = session.world().process() != 0; // process 0 speaks
  if (flags.steps == 0) {
    // Nothing to train: load and save, resharding a checkpoint.
    if (!flags.savePath.empty())
      if (absl::Status s = session.save(flags.savePath, sharded); !s.ok())
        return s;
    if (!quiet)
      llvm::outs() << "trained 0 steps\n";
    return false;
  }
  bool tty = !quiet && ::isatty(STDOUT_FILENO);
  if (flags.evalEvery > 0)
    if (absl::Status s = validate(session, flags, firstStep, quiet, validation);
        !s.ok())
      return s;
  int64_t tokensPerStep = session.report().tokensPerStep;
  auto begin = std::chrono::steady_clock::now();
  double firstLoss = 0, lastLoss = 0;
  std::optional<int64_t> fault = faultStep();
  for (int i = 0; i < flags.steps;) {
    int64_t step = firstStep + i;
    // This run's steps: at most --steps-per-run, ending where a checkpoint
    // is due; the test hook's step starts a run (on every process alike).
    int n = std::min(std::max(flags.stepsPerRun, 1), flags.steps - i);
    if (flags.saveEvery > 0)
      n = std::min(n, flags.saveEvery - i % flags.saveEvery);
    if (flags.evalEvery > 0)
      n = std::min(n, flags.evalEvery - i % flags.evalEvery);
    if (fault && *fault > step && *fault < step + n)
      n = static_cast<int>(*fault - step);
    if (absl::Status s = injectFault(session.world(), step); !s.ok())
      return s;
    api::RunOptions options;
    options.registers = flags.registers;
    options.trace = flags.trace && i + n == flags.steps;
    double runStart =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
            .count();
    double cpuStart = processCpuSeconds();
    absl::StatusOr<std::vector<double>> losses = session.train(n, options);
    if (!losses.ok())
      return absl::Status(losses.status().code(),
                          "step " + std::to_string(step) + ": " +
                              losses.status().ToString());
    // The run's steps overlap (each reads the parameters the one before
    // updated), so a step's CPU time is its wall time at the rate the
    // whole run kept the cores busy: the steps' CPU seconds over their
    // wall seconds are then the run's busy cores, its setup outside the
    // steps' times included in both.
    double runWall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
            .count() -
        runStart;
    double busyCores =
        runWall > 0 ? (processCpuSeconds() - cpuStart) / runWall : 0;
    api::Report r = session.report();
    for (int k = 0; k < n; ++k, ++i) {
      const api::Report::Step &at = r.steps[k];
      if (i == 0)
        firstLoss = at.loss;
      lastLoss = at.loss;
      if (quiet)
        continue;
      llvm::json::Object entry{{"step", at.step},
                               {"wall_s", at.seconds},
                               {"cpu_s", at.seconds * busyCores},
                               {"loss", at.loss},
                               {"lr", at.lr}};
      if (at.gradNorm)
        entry["grad_norm"] = *at.gradNorm;
      if (at.lossScale) {
        entry["loss_scale"] = *at.lossScale;
        entry["skipped"] = at.skipped;
      }
      stepTimes.push_back(std::move(entry));
      // A progress bar: redrawn in place on a terminal, a line per step
      // otherwise (logs, tests). A run's steps come together, each with
      // the rate up to its own end.
      double elapsed = runStart + at.endSeconds;
      int width = 20, done = (i + 1) * width / flags.steps;
      llvm::outs() << (tty ? "\r" : "") << "step " << at.step + 1 << "/"
                   << firstStep + flags.steps << " [" << std::string(done, '#')
                   << std::string(width - done, '.') << "] loss "
                   << llvm::format("%.6f", at.loss) << " lr "
                   << llvm::format("%.3e", at.lr);
      if (at.gradNorm)
        llvm::outs() << " |g| " << llvm::format("%.4f", *at.gradNorm);
      if (at.lossScale)
        llvm::outs() << " scale " << llvm::format("%g", *at.lossScale)
                     << (at.skipped ? " (overflow: skipped)" : "");
      if (tokensPerStep > 0)
        llvm::outs() << " "
                     << llvm::format("%.0f", (i + 1) * tokensPerStep / elapsed)
                     << " tokens/s";
      else
        llvm::outs() << " " << llvm::format("%.1f", (i + 1) / elapsed)
                     << " steps/s";
      llvm::outs() << (tty ? "" : "\n");
      llvm::outs().flush();
    }
    if (!quiet) {
      for (auto &[rank, stats] : r.comm) {
        runtime::CommStats &t = comm[rank];
        t.bytesSent += stats.bytesSent;
        t.bytesReceived += stats.bytesReceived;
        for (auto &[k, c] : stats.calls)
          t.calls[k] += c;
        for (auto &[k, b] : stats.bytes) {
          t.bytes[k].first += b.first;
          t.bytes[k].second += b.second;
        }
        peaks[rank] = std::max(peaks[rank], r.peakBytes[rank]);
      }
    }
    bool last = i == flags.steps;
    if (flags.evalEvery > 0 && (last || i % flags.evalEvery == 0)) {
      if (tty)
        llvm::outs() << "\n";
      if (absl::Status s =
              validate(session, flags, firstStep + i, quiet, validation);
          !s.ok())
        return s;
    }
    if (!flags.savePath.empty() &&
        (last || (flags.saveEvery > 0 && i % flags.saveEvery == 0)))
      if (absl::Status s = session.save(flags.savePath, sharded); !s.ok())
        return s;
  }
  if (quiet)
    return true;
  if (tty)
    llvm::outs() << "\n";
  llvm::outs() << "trained " << flags.steps << " steps: loss "
               << llvm::format("%.6f", firstLoss) << " -> "
               << llvm::format("%.6f", lastLoss) << "\n";
  return true;
}

absl::Status exportMergedLora(api::Session &session,
                              const api::Program &program,
                              const std::string &path, double alpha,
                              bool speaker) {
  std::string scratch = path + ".checkpoint.tmp";
  if (absl::Status s = session.save(scratch); !s.ok())
    return s;
  absl::Status result = absl::OkStatus();
  if (speaker) {
    result = [&]() -> absl::Status {
      absl::StatusOr<api::Checkpoint> saved = api::readCheckpoint(scratch);
      if (!saved.ok())
        return saved.status();
      std::map<std::string, runtime::HostTensor> weights;
      for (const api::Parameter &p : program.parameters())
        if (!p.optimizerState)
          if (auto it = saved->tensors.find(p.name); it != saved->tensors.end())
            weights.emplace(p.name, std::move(it->second));
      absl::StatusOr<std::map<std::string, runtime::HostTensor>> merged =
          api::mergeLora(weights, alpha);
      if (!merged.ok())
        return merged.status();
      return api::writeSafetensors(path, *merged);
    }();
    std::remove(scratch.c_str());
  }
  return result;
}

} // namespace pc::tools

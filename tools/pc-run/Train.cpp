//===- Train.cpp - pc-run's training loop ---------------------------------===//

#include "tools/pc-run/Train.h"

#include "runtime/exec/Checkpoint.h"
#include "runtime/exec/ProgramInterface.h"
#include "runtime/exec/Schedule.h"

#include "dialect/PcOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <thread>
#include <unistd.h>

using namespace mlir;
using pc::runtime::CommType;
using pc::runtime::HostTensor;

namespace pc::tools {
namespace {
int fail(const std::string &message) {
  llvm::errs() << "pc-run: " << message << "\n";
  return 1;
}
} // namespace

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

std::optional<int> trainLoop(ModuleOp module, runtime::CpuSession &session,
                             const std::string &graph,
                             std::vector<HostTensor> &inputs, int64_t firstStep,
                             const TrainFlags &flags,
                             llvm::json::Array &stepTimes,
                             absl::StatusOr<runtime::CpuRun> &run) {
  // Where the loop feeds the rate and reads the loss: from the programs'
  // argument and result attributes, which partition keeps.
  runtime::ProgramInterface io = runtime::interfaceOf(module, graph);
  std::optional<int64_t> lrIndex = io.lr, lossIndex = io.loss,
                         normIndex = io.gradNorm;
  if (!lrIndex || !lossIndex)
    return fail("@" + graph +
                " is not a training step: it needs an `lr` input and a "
                "{pc.loss} result (train a logical graph with a loss)");
  absl::StatusOr<pc::runtime::LrSchedule::Kind> kind =
      pc::runtime::LrSchedule::parse(flags.schedule);
  if (!kind.ok())
    return fail(std::string(kind.status().message()));
  pc::runtime::CheckpointFormat format =
      flags.saveFormat == "sharded" ? pc::runtime::CheckpointFormat::Sharded
                                    : pc::runtime::CheckpointFormat::Logical;
  if (flags.saveFormat != "sharded" && flags.saveFormat != "logical")
    return fail("--save-format must be logical or sharded, not '" +
                flags.saveFormat + "'");
  pc::runtime::LrSchedule rates{*kind, flags.lr, flags.warmupSteps,
                                flags.totalSteps > 0 ? flags.totalSteps
                                                     : firstStep + flags.steps,
                                flags.minLr};
  if (flags.steps == 0) {
    // Nothing to train: load and save, resharding a checkpoint.
    if (!flags.savePath.empty())
      if (absl::Status s = pc::runtime::saveCheckpoint(session, flags.savePath,
                                                       format, firstStep);
          !s.ok())
        return fail(s.ToString());
    if (session.getWorld().process() == 0)
      llvm::outs() << "trained 0 steps\n";
    return 0;
  }
  // Under MPI, process 0 speaks for the run.
  bool quiet = session.getWorld().process() != 0;
  bool tty = !quiet && ::isatty(STDOUT_FILENO);
  std::map<int64_t, pc::runtime::CommStats> totals;
  std::map<int64_t, int64_t> peaks;
  auto begin = std::chrono::steady_clock::now();
  double firstLoss = 0, lastLoss = 0;
  for (int i = 0; i < flags.steps; ++i) {
    int64_t step = firstStep + i;
    double rate = rates.at(step);
    HostTensor lrTensor = HostTensor::zeros({}, CommType::F32);
    lrTensor.as<float>()[0] = static_cast<float>(rate);
    inputs[*lrIndex] = lrTensor;
    pc::runtime::CpuRunOptions options;
    options.registers = flags.registers;
    options.trace = flags.trace && i + 1 == flags.steps;
    options.step = step;
    // Every process acts on the loss (a non-finite one stops them all).
    options.resultsOnEveryProcess = true;
    if (absl::Status s = injectFault(session.getWorld(), step); !s.ok())
      return fail(s.ToString());
    auto start = std::chrono::steady_clock::now();
    run = session.run(graph, inputs, options);
    if (!run.ok())
      return fail("step " + std::to_string(step) + ": " +
                  run.status().ToString());
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    double loss = run->results[*lossIndex].get(0);
    if (!std::isfinite(loss))
      return fail("step " + std::to_string(step) + ": the loss is " +
                  std::to_string(loss));
    (i ? lastLoss : firstLoss) = loss;
    lastLoss = loss;
    if (!quiet) {
      llvm::json::Object entry{
          {"step", step}, {"wall_s", seconds}, {"loss", loss}, {"lr", rate}};
      if (normIndex)
        entry["grad_norm"] = run->results[*normIndex].get(0);
      stepTimes.push_back(std::move(entry));
      for (auto &[rank, stats] : run->comm) {
        pc::runtime::CommStats &t = totals[rank];
        t.bytesSent += stats.bytesSent;
        t.bytesReceived += stats.bytesReceived;
        for (auto &[k, n] : stats.calls)
          t.calls[k] += n;
        for (auto &[k, b] : stats.bytes) {
          t.bytes[k].first += b.first;
          t.bytes[k].second += b.second;
        }
        peaks[rank] = std::max(peaks[rank], run->peakBytes[rank]);
      }
      // A progress bar: redrawn in place on a terminal, a line per step
      // otherwise (logs, tests).
      double elapsed = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - begin)
                           .count();
      int width = 20, done = (i + 1) * width / flags.steps;
      llvm::outs() << (tty ? "\r" : "") << "step " << step + 1 << "/"
                   << firstStep + flags.steps << " [" << std::string(done, '#')
                   << std::string(width - done, '.') << "] loss "
                   << llvm::format("%.6f", loss) << " lr "
                   << llvm::format("%.3e", rate);
      if (normIndex)
        llvm::outs() << " |g| "
                     << llvm::format("%.4f", run->results[*normIndex].get(0));
      llvm::outs() << " " << llvm::format("%.1f", (i + 1) / elapsed)
                   << " steps/s" << (tty ? "" : "\n");
      llvm::outs().flush();
    }
    bool last = i + 1 == flags.steps;
    if (!flags.savePath.empty() &&
        (last || (flags.saveEvery > 0 && (i + 1) % flags.saveEvery == 0)))
      if (absl::Status s = pc::runtime::saveCheckpoint(session, flags.savePath,
                                                       format, step + 1);
          !s.ok())
        return fail(s.ToString());
  }
  if (quiet)
    return std::nullopt;
  if (tty)
    llvm::outs() << "\n";
  llvm::outs() << "trained " << flags.steps << " steps: loss "
               << llvm::format("%.6f", firstLoss) << " -> "
               << llvm::format("%.6f", lastLoss) << "\n";
  run->comm = std::move(totals);
  run->peakBytes = std::move(peaks);
  return std::nullopt;
}

} // namespace pc::tools

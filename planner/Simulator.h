//===- Simulator.h - Step time, bubble and memory of a strategy -*- C++ -*-===//
//
// The simulator runs a strategy's per-device programs over the cost model:
// each action (F, B, W of a model stage for one micro-batch) takes the time
// of its kernels by roofline and of its collectives by alpha-beta, with the
// communication that runs alongside compute hidden up to that compute; the
// pipeline schedule (pipeline/Schedule.h) orders the actions across
// devices; each device stage then ends its step with the data-parallel
// gradient reduction (hidden behind its last backward as far as it goes),
// the optimizer and, with ZeRO, the weights' all-gather. Memory per device
// is the model states (as pc stores them: f32 weights, f32 gradients, two
// f32 Adam moments, each sharded by ZeRO's stage) plus the activations of
// the micro-batches the schedule holds at its peak (Korthikanti et al.
// 2022, for each recompute mode).
//
//===----------------------------------------------------------------------===//

#ifndef PC_PLANNER_SIMULATOR_H
#define PC_PLANNER_SIMULATOR_H

#include "pipeline/Schedule.h"
#include "planner/CostModel.h"
#include "planner/Program.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pc::planner {

/// Bytes one device holds at its peak.
struct Memory {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0;
  /// Optimizer state in host memory (offload), per device.
  double host = 0;
  double total() const { return weights + gradients + optimizer + activations; }
};

struct StageReport {
  Memory memory;
  int64_t peakInFlight = 0;
  /// Seconds of the step in each category (compute, tp comm, pp comm,
  /// dp comm, optimizer, offload, idle); they sum to the step time.
  std::map<std::string, double> time;
};

struct Simulation {
  Strategy strategy;
  double stepTime = 0;
  double bubble = 0; // the pipeline's idle share (schedule only)
  /// FLOPs of the step without recompute (the model's) and with it (what
  /// the devices run).
  double modelFlops = 0, hardwareFlops = 0;
  double mfu = 0, hfu = 0;
  std::vector<StageReport> stages;
  /// The device stage whose step ends last.
  int64_t critical = 0;
  double peakMemory = 0;
  double memoryBudget = 0;
  bool fits = false;
  /// The pipeline timeline (seconds), for the SVG.
  std::vector<std::vector<pipeline::TimedAction>> timeline;
};

class Simulator {
public:
  Simulator(const ClusterSpec &spec) : spec(spec) {}

  /// Why `st` cannot run `model` on this cluster (an empty string when it
  /// can): device count, divisibility of heads, layers and batch.
  std::string check(const TransformerSpec &model, const Strategy &st) const;

  /// Simulates one training step; `st` must pass check().
  llvm::Expected<Simulation> simulate(const TransformerSpec &model,
                                      const Strategy &st);

  /// A quick estimate of the step time, for ranking: the busiest device's
  /// work plus the schedule's bubble formula over its action times, plus
  /// its tail. Fails as simulate() does.
  llvm::Expected<double> estimate(const TransformerSpec &model,
                                  const Strategy &st) const;

  /// The memory of each device stage, without running the schedule:
  /// in-flight micro-batches from the schedules' formulas.
  std::vector<Memory> memory(const TransformerSpec &model,
                             const Strategy &st) const;

  /// Whether memory of these device stages fits the devices' budget (and
  /// the offloaded state the hosts); `peak` gets the largest device's.
  bool fits(const std::vector<Memory> &stages, double *peak) const;

  const ClusterSpec &getSpec() const { return spec; }

private:
  const pipeline::Schedule &schedule(const pipeline::ScheduleSpec &s);
  /// The peak FLOP/s `st` computes at, once check() accepts it.
  llvm::Expected<double> checkedPeak(const TransformerSpec &m,
                                     const Strategy &st) const;

  const ClusterSpec &spec;
  std::map<std::tuple<int, int64_t, int64_t, int64_t>,
           std::unique_ptr<pipeline::Schedule>>
      schedules;
};

/// Activation bytes one layer keeps for its backward, per micro-batch and
/// tensor-parallel rank (Korthikanti et al. 2022, Table 2, with 1-byte
/// dropout masks and `elem`-byte activations).
double layerActivationBytes(const TransformerSpec &m, const Strategy &st);

/// Micro-batches (model-stage forwards) device stage `d` holds at its peak
/// under the schedule's formula.
int64_t inFlight(const Strategy &st, int64_t d);

/// A table of the step: one row per device stage.
std::string formatSimulation(const Simulation &s);

} // namespace pc::planner

#endif // PC_PLANNER_SIMULATOR_H

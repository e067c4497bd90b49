//===- Program.h - Compiling graphs and running them ------------*- C++ -*-===//
//
// compile(graph, options) runs the pc pipeline on a copy of the graph's
// module (autodiff and the optimizer first when training) and returns a
// Program: the per-device programs and what a runner needs to know about
// them. A Session runs a Program on CPU virtual devices: feed inputs by
// name, run or train a step, fetch outputs, save and load checkpoints, read
// the report. Every error is an absl::Status carrying the diagnostics; no
// call aborts or throws.
//
//===----------------------------------------------------------------------===//

#ifndef PC_API_PROGRAM_H
#define PC_API_PROGRAM_H

#include "api/Graph.h"
#include "runtime/comm/World.h"
#include "runtime/device/HostTensor.h"

#include "absl/status/statusor.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace pc::runtime {
class CpuSession;
} // namespace pc::runtime

namespace pc::api {

struct OptimizerOptions {
  std::string kind = "adamw"; // sgd, adam or adamw
  double lr = 1e-3;
  double momentum = 0, weightDecay = 0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double clipNorm = 0;               // 0: no clipping
  std::string schedule = "constant"; // or cosine (linear warmup first)
  int64_t warmupSteps = 0, totalSteps = 0;
  double minLr = 0;
};

struct CompileOptions {
  /// Mesh shapes that replace the graph's (same axes, other sizes): the
  /// same model on more or fewer devices.
  std::map<std::string, std::vector<int64_t>> meshShapes;
  /// Pipeline stages and micro-batches: 1 until pipelines exist.
  int64_t stages = 1, microbatches = 1;
  /// A training step (--pc-autodiff, --pc-optimizer) instead of a forward
  /// pass; the graph needs a loss.
  bool train = false;
  OptimizerOptions optimizer;
};

class Program {
public:
  const std::string &graph() const { return graphName; }
  bool training() const { return isTraining; }
  const OptimizerOptions &optimizer() const { return opt; }
  /// Devices the meshes need.
  int64_t numDevices() const { return devices; }
  /// The per-device programs as IR text.
  std::string str() const;
  /// A summary: meshes, per-device programs and their ranks, collectives
  /// by kind.
  std::string plan() const;

private:
  friend absl::StatusOr<Program> compile(Graph &, const CompileOptions &);
  friend class Session;
  struct Impl;
  std::shared_ptr<Impl> impl;
  std::string graphName;
  bool isTraining = false;
  OptimizerOptions opt;
  int64_t devices = 0;
};

absl::StatusOr<Program> compile(Graph &graph,
                                const CompileOptions &options = {});

struct SessionOptions {
  /// CPU virtual devices; 0 takes what the program needs.
  int64_t devices = 0;
  uint64_t seed = 0;
  /// BLAS threads per device; 0 shares the cores among the devices.
  int threadsPerDevice = 0;
  /// Where the ranks run: by default in this process, or, when started by
  /// mpirun or srun, in every process of the launch, each hosting
  /// `world.devicesPerProcess` ranks (docs/cluster.md). Every process
  /// builds the same program and makes the same calls; outputs and losses
  /// are the same on every process.
  runtime::WorldOptions world;
};

/// What the last run did.
struct Report {
  double wallSeconds = 0;
  int64_t step = 0;
  std::map<int64_t, int64_t> peakBytes;       // per rank
  std::map<int64_t, int64_t> bytesSent;       // per rank
  std::map<int64_t, int64_t> bytesReceived;   // per rank
  std::map<std::string, int64_t> collectives; // calls, all ranks
  std::vector<double> losses;                 // every trainStep so far
};

class Session {
public:
  static absl::StatusOr<std::unique_ptr<Session>>
  create(const Program &program, const SessionOptions &options = {});
  ~Session();

  /// Sets input `name` (a graph input's name) for the next runs.
  absl::Status feed(const std::string &name, runtime::HostTensor value);
  /// Runs the program once (a forward pass).
  absl::Status run();
  /// Output `name` of the last run.
  absl::StatusOr<runtime::HostTensor> fetch(const std::string &name) const;
  /// One training step at the schedule's rate; returns the loss.
  absl::StatusOr<double> trainStep();
  /// Checkpoints: one logical file, or a directory of shards.
  absl::Status save(const std::string &path, bool sharded = false);
  absl::Status load(const std::string &path);
  Report report() const { return last; }
  /// Ends the session; every later call fails.
  void close();

private:
  Session() = default;
  absl::Status usable(const char *call) const;
  absl::Status runOnce(const char *call);

  Program program;
  std::unique_ptr<runtime::World> world; // outlives the session's runs
  std::unique_ptr<runtime::CpuSession> cpu;
  std::map<std::string, int64_t> inputIndex, outputIndex;
  std::map<int64_t, runtime::HostTensor> inputShapes; // zeros of each input
  std::vector<runtime::HostTensor> inputs, outputs;
  std::optional<int64_t> lrIndex, lossIndex;
  std::set<int64_t> fed;
  int64_t step = 0;
  bool closed = false;
  Report last;
};

} // namespace pc::api

#endif // PC_API_PROGRAM_H

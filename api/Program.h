//===- Program.h - Compiling graphs and running them ------------*- C++ -*-===//
//
// compile(graph, options) runs the pc pipeline on a copy of the graph's
// module (autodiff and the optimizer first when training) and returns a
// Program: the per-device programs and what a runner needs to know about
// them; compileSource does the same for a module's text (what pc-run
// reads). A Session runs a Program on its devices (CPU virtual devices by
// default; the ranks of many processes under mpirun): feed inputs by name,
// run or train a step, fetch outputs, save and load checkpoints, read the
// report. pc-run is a client of this API. Every error is an absl::Status
// carrying the diagnostics; no call aborts or throws.
//
//===----------------------------------------------------------------------===//

#ifndef PC_API_PROGRAM_H
#define PC_API_PROGRAM_H

#include "api/Graph.h"
#include "runtime/comm/Communicator.h"
#include "runtime/comm/World.h"
#include "runtime/device/HostTensor.h"

#include "absl/status/statusor.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pc::runtime {
class CpuSession;
class Input;
class MappedNpy;
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
  /// Bits per element of Adam's moments: 32, or 8 (block-wise quantized;
  /// docs/memory.md), for tensors of 4096 elements or more.
  int64_t stateBits = 32;
};

struct CompileOptions {
  /// Mesh shapes that replace the graph's (same axes, other sizes): the
  /// same model on more or fewer devices.
  std::map<std::string, std::vector<int64_t>> meshShapes;
  /// Pipeline parallelism (docs/pipeline.md): device stages (the graph's
  /// meshes are copied once per stage onto the next ranks, unless its ops
  /// carry pc.stage and it names pc.stage_meshes), model stages per device
  /// stage (interleaved), micro-batches per step (gradients accumulate over
  /// them; they need no stages), and the schedule: gpipe, 1f1b,
  /// interleaved or zb-h1 ("" is 1f1b, or interleaved with virtual
  /// stages).
  int64_t stages = 1, virtualStages = 1, microbatches = 1;
  std::string schedule;
  /// A training step (--pc-autodiff, --pc-optimizer) instead of a forward
  /// pass; the graph needs a loss.
  bool train = false;
  OptimizerOptions optimizer;
  /// ZeRO stage (docs/memory.md): 1 shards the optimizer state and the
  /// update over the data-parallel mesh axis `zeroAxis`, 2 also
  /// reduce-scatters the gradients into the shard, 3 also stores the
  /// weights there and gathers each at every use; 0, none.
  int64_t zero = 0;
  std::string zeroAxis = "dp";
  /// Low-rank adapters (docs/memory.md, --pc-lora): with rank > 0, every
  /// matmul weight whose name matches the regular expression `targets`
  /// gets adapters A [in, rank] and B [rank, out] scaled by alpha / rank,
  /// and is frozen; only the adapters train.
  struct Lora {
    int64_t rank = 0;
    double alpha = 16;
    std::string targets = "attn\\.(q|v)$";
  } lora;
  /// Activation checkpointing (docs/memory.md): "full" recomputes whole
  /// layers in the backward pass, "selective" only attention cores; ""
  /// keeps every activation. Results are bit for bit the same.
  std::string recompute;
  /// Mixed precision (docs/memory.md, --pc-mixed-precision): with dtype
  /// "bf16" or "f16" the forward and backward passes compute in that type
  /// over f32 master weights, except the ops `f32Ops` names (empty: the
  /// default list). Loss scaling: "dynamic" (the default for f16) starts
  /// at initScale, halves on an overflow, whose step is skipped, and
  /// doubles after growthInterval clean steps; "none" (the default for
  /// bf16); or a number, a static scale. injectOverflow adds the input a
  /// test forces overflows through (Session::injectOverflow).
  struct MixedPrecision {
    std::string dtype;
    std::vector<std::string> f32Ops;
    std::string lossScale;
    double initScale = 65536;
    int64_t growthInterval = 2000;
    bool injectOverflow = false;
  } mixedPrecision;
  /// CPU offload (docs/memory.md, --pc-offload): the optimizer state and
  /// the optimizer's step in host memory, outside the device's budget;
  /// with `parameters` (for ZeRO-3) the trained weights' shards too, each
  /// copied to the device right before it is gathered.
  struct Offload {
    bool optimizer = false;
    bool parameters = false;
  } offload;
  /// Auto-parallel (docs/planning.md, --pc-auto-parallel): choose the
  /// layout of every value the graph leaves unannotated for the least
  /// predicted step time, within deviceMemory.
  bool autoParallel = false;
  /// A cluster spec (JSON, docs/planning.md) whose rates every cost is
  /// figured with (--pc-cost-model): auto-parallel's, propagation's, the
  /// boxing planner's. Empty: the defaults.
  std::string cluster;
  /// Bytes of memory per device (0: no limit). A program whose predicted
  /// peak exceeds it fails to compile, naming its ranks and what the peak
  /// holds (docs/memory.md); give the same to SessionOptions::deviceMemory
  /// for the allocator to enforce it.
  int64_t deviceMemory = 0;
  /// Update parameters in place (docs/memory.md): each parameter's old
  /// piece goes once the step has read it for the last time, instead of the
  /// step's starting model state being held to the step's end to roll back to.
  /// Saves up to the model state's size at the end of the update. A run that
  /// fails or is rejected (a loss that is not finite) then leaves the
  /// parameters half-updated, and the session refuses to go on until a
  /// checkpoint is loaded (Session::load). The memory plan and
  /// --auto-parallel's budget count what it holds.
  bool inPlaceUpdates = false;
};

/// A device's predicted memory (--pc-memory-plan), in bytes: the peak, and
/// what is live at it.
struct MemoryUse {
  int64_t peak = 0;
  int64_t parameters = 0, gradients = 0, optimizerState = 0, activations = 0,
          workspace = 0;
  /// The most activation bytes live at any point of the step.
  int64_t activationsPeak = 0;
  /// Host memory the step holds at most (CPU offload), outside the budget.
  int64_t hostPeak = 0;
};

/// An input or output of a compiled program, in the logical signature.
struct Port {
  /// The graph's name for it, or argN / outN.
  std::string name;
  int64_t index = 0;
  std::vector<int64_t> shape;
  runtime::CommType type = runtime::CommType::F32;
  /// For integer inputs read by lookups and losses (token ids, labels):
  /// ids must be below this (the smallest table or class count that reads
  /// them). Nothing when unknown (per-device programs given alone).
  std::optional<int64_t> idBound;
};

/// A parameter of a program: a model weight, or optimizer state.
struct Parameter {
  std::string name;
  std::vector<int64_t> shape;
  runtime::CommType type = runtime::CommType::F32;
  /// Its SBP layout as the IR writes it, e.g. "#pc.sbp<@m, [B, S(1)]>";
  /// empty when it has none.
  std::string layout;
  bool trainable = true;
  /// State that pc-optimizer added (moments, the step counter), which a
  /// checkpoint holds and model weights do not.
  bool optimizerState = false;
};

class Program {
public:
  const std::string &graph() const { return graphName; }
  bool training() const { return isTraining; }
  /// CompileOptions::inPlaceUpdates, which its sessions follow.
  bool inPlaceUpdates() const { return inPlace; }
  const OptimizerOptions &optimizer() const { return opt; }
  /// Devices the meshes need.
  int64_t numDevices() const { return devices; }
  /// Whether a training session feeds input `index` itself (the learning
  /// rate; the input that injects overflows): feed() refuses it.
  bool fedByTraining(int64_t index) const;
  /// The per-device programs as IR text.
  std::string str() const;
  /// A summary: meshes, per-device programs and their ranks, collectives
  /// by kind, predicted memory.
  std::string plan() const;
  /// pc-simulate's prediction of one step of the training (or forward)
  /// graph's programs over the module's cost model: per program and the
  /// step (docs/planning.md). The step in seconds goes to `*step` when
  /// given. With `opProfile` (the JSON profileOps() returns), an op it
  /// times takes its measured time. An error when the programs cannot be
  /// simulated or the profile is malformed.
  /// With `emulatedCompute`, of a run whose compute is emulated
  /// (Session::emulateCompute): waits hold no core, so the devices do not
  /// share the host's. The mean share of the step the devices' compute is
  /// idle (a pipeline's bubble, op by op) goes to `*idle` when given; the
  /// seconds of the host's cores the step takes, all devices together, to
  /// `*work` (on shared cores; else 0).
  absl::StatusOr<std::string> simulate(double *step = nullptr,
                                       const std::string &opProfile = {},
                                       bool emulatedCompute = false,
                                       double *idle = nullptr,
                                       double *work = nullptr) const;
  /// Times every compute op of those programs on one CPU device of
  /// `threads` threads, by its kernel, each program's ops fired in its
  /// order (vTrain's profiling step, docs/planning.md): a JSON op profile
  /// for simulate().
  absl::StatusOr<std::string> profileOps(int threads) const;
  /// Per global rank, the predicted peak memory of one step and what is
  /// live at it (docs/memory.md).
  std::map<int64_t, MemoryUse> predictedMemory() const;
  /// The predicted pipeline schedule as an SVG timeline (one row per
  /// stage); empty when the program is not pipelined.
  std::string scheduleSvg() const;
  /// The predicted bubble of the pipeline schedule (docs/pipeline.md), or
  /// nothing when the program is not pipelined. By default F, B and W cost
  /// one unit each; `cost` gives each action's cost by its short name
  /// ("F1.3"), e.g. measured durations, to replay the schedule with them.
  std::optional<double> predictedBubble(
      const std::function<double(const std::string &action)> &cost = {}) const;
  /// The bubble predicted with each action's cost the sum of its compute
  /// ops' times in `opProfile` (profileOps's JSON; the slowest rank of a
  /// stage): the stages' imbalance (a loss on the last, no input gradient
  /// on the first) included, before anything runs. Ops the profile lacks,
  /// communication and per-op firing costs count nothing; simulate() has
  /// them. Nothing when the
  /// program is not pipelined; an error when the profile does not parse.
  absl::StatusOr<std::optional<double>>
  profiledBubble(const std::string &opProfile) const;
  /// Whether the programs are a training step: an `lr` input and a
  /// {pc.loss} result.
  bool isTrainingStep() const { return lrIndex && lossIndex; }
  /// The inputs (the learning rate of a training step, `lr`, included) and
  /// outputs, by position.
  const std::vector<Port> &inputs() const { return inputPorts; }
  const std::vector<Port> &outputs() const { return outputPorts; }
  /// Whether the program can evaluate its loss without training
  /// (Session::evaluate): a training step compiled from a logical graph
  /// also holds the graph's forward pass (pipelined as the step is, on the
  /// same stages and micro-batches, with a forward-only schedule).
  bool canEvaluate() const { return !evalGraph.empty(); }
  /// Whether Session::generate can sample from the program: it was
  /// compiled from a logical graph with one cross-entropy (a language
  /// model), and also holds the forward pass to its logits (pipelined as
  /// the graph is; not when a pipeline stage held only the loss).
  bool canGenerate() const { return !logitsGraph.empty(); }
  /// Every parameter of the programs, in the order the IR declares them.
  std::vector<Parameter> parameters() const;
  /// Inputs drawn from `seed` that the graph accepts: ids and labels within
  /// the tables and classes they index. Per-device programs given without
  /// their logical graph get uniform floats in [-1, 1) and ids of 0.
  absl::StatusOr<std::vector<runtime::HostTensor>>
  exampleInputs(uint64_t seed) const;

private:
  friend absl::StatusOr<Program> compile(Graph &, const CompileOptions &);
  friend absl::StatusOr<Program> compileSource(const std::string &,
                                               const std::string &,
                                               const CompileOptions &,
                                               const std::string &);
  friend class Session;
  struct Impl;
  /// The per-device programs.
  mlir::ModuleOp programs() const;
  /// Runs the pipeline on `impl`'s module (what `options` asks for, of what
  /// the module still needs) and reads the program's signature.
  static absl::StatusOr<Program> build(std::shared_ptr<Impl> impl,
                                       const std::string &graph,
                                       const CompileOptions &options);
  std::shared_ptr<Impl> impl;
  std::string graphName;
  bool isTraining = false;
  bool inPlace = false;
  OptimizerOptions opt;
  int64_t devices = 0;
  std::vector<Port> inputPorts, outputPorts;
  std::optional<int64_t> lrIndex, lossIndex;
  /// The forward pass of a training step's graph (canEvaluate), its inputs
  /// numbered as the step's without the rate, and where its loss is.
  std::string evalGraph;
  std::optional<int64_t> evalLossIndex;
  /// The forward pass to the logits (canGenerate) and its inputs.
  std::string logitsGraph;
  std::vector<Port> logitsPorts;
};

absl::StatusOr<Program> compile(Graph &graph,
                                const CompileOptions &options = {});

/// Compiles the module in `source` (named `bufferName` in diagnostics): a
/// logical graph (`graph`, default the first func.func), trained when
/// `options.train`; a training step that already stores its parameters (its
/// optimizer is in the IR; `options.train` says to train it); or per-device
/// programs (pc.graph), run as they are.
absl::StatusOr<Program> compileSource(const std::string &source,
                                      const std::string &bufferName,
                                      const CompileOptions &options = {},
                                      const std::string &graph = "");

struct SessionOptions {
  /// CPU virtual devices in this process; 0 takes what the program needs
  /// (under mpirun, world.devicesPerProcess decides).
  int64_t devices = 0;
  uint64_t seed = 0;
  /// Threads of each device's kernels (oneDNN's, through the device's own
  /// OpenMP setting, never a process-wide one); 0 shares the cores among
  /// the devices of the node.
  int threadsPerDevice = 0;
  /// Run the GPU backend's kernels, built for the host through Thrust's
  /// CPP system, on the CPU devices instead of the CPU backend's kernels:
  /// slower, and used to test the GPU kernels' logic where there is no GPU
  /// (docs/cluster.md).
  bool portableKernels = false;
  /// The device kind every rank runs on ("cpu", "cuda"), whatever the
  /// meshes declare; empty: each mesh's own (`pc.mesh ... on cuda`).
  std::string deviceKind;
  /// Where the ranks run: by default in this process, or, when started by
  /// mpirun or srun, in every process of the launch, each hosting
  /// `world.devicesPerProcess` ranks (docs/cluster.md). Every process
  /// builds the same program and makes the same calls; outputs and losses
  /// are the same on every process.
  runtime::WorldOptions world;
  /// Bytes of memory per device (0: no limit): an allocation past it fails
  /// the step with an error naming the device. Compile with the same
  /// CompileOptions::deviceMemory to fail before anything runs instead.
  /// The prediction is of one step run on its own (trainStep(), or
  /// train(1)): train(n) overlaps n steps in one run, which holds more (the
  /// parameters and optimizer state from before the run, to roll back to,
  /// and the next steps' early work; docs/memory.md).
  int64_t deviceMemory = 0;
};

/// Training on a dataset (docs/data.md).
struct DataOptions {
  /// The description: a JSON file, inline "key=value,..." or one file
  /// (runtime/data/Dataset.h).
  std::string spec;
  /// The graph inputs that take a batch's token ids and its next-token
  /// labels; empty: the first two integer inputs, in order.
  std::string inputs, labels;
  /// The order of the samples (per epoch); the same seed and position give
  /// the same batches.
  uint64_t seed = 0;
  /// Batches the loader reads ahead on its thread.
  int64_t prefetch = 2;
};

/// How a run goes.
struct RunOptions {
  /// Iterations of a forward pass, overlapped as far as `registers` allow
  /// (a training step always runs one).
  int64_t iterations = 1;
  /// Registers per actor: how many iterations a value may be ahead of its
  /// slowest consumer.
  int32_t registers = 2;
  /// Record every actor firing (Report::events).
  bool trace = false;
};

/// One actor firing, for traces.
struct Event {
  std::string name;
  std::string stream; // "compute" or "comm"
  int64_t iteration = 0;
  double startUs = 0, durationUs = 0;
  /// The CPU time of the stream's thread over the firing: where it is well
  /// below the duration, the thread slept or shared its core.
  double cpuUs = 0;
  /// The pipeline action the op belongs to, as "F1.3" (forward of model
  /// stage 1, micro-batch 3; B and W likewise); empty when not pipelined.
  std::string action;
  /// The op's types on this rank and where it was written, e.g.
  /// "16x128x256xf32, 256x768xf32 -> 16x128x768xf32 at m.mlir:12:8".
  std::string detail;
};

/// What the last run did. Under mpirun the per-rank figures (peaks, bytes,
/// collectives, events, iteration times) are assembled on process 0 only;
/// steps, rates and losses are on every process.
struct Report {
  double wallSeconds = 0;
  /// The next training step's number (checkpoints resume from it).
  int64_t step = 0;
  std::map<int64_t, int64_t> peakBytes;       // per rank, from its allocator
  std::map<int64_t, int64_t> bytesSent;       // per rank
  std::map<int64_t, int64_t> bytesReceived;   // per rank
  std::map<std::string, int64_t> collectives; // calls, all ranks
  /// Per rank: calls and bytes of each kind of collective.
  std::map<int64_t, runtime::CommStats> comm;
  /// Per rank, with RunOptions::trace: every firing.
  std::map<int64_t, std::vector<Event>> events;
  /// Per iteration: when its last firing finished (µs from the run's start).
  std::vector<double> iterationDoneUs;
  std::vector<double> losses; // every training step so far
  /// The last training run's steps, in order.
  struct Step {
    int64_t step = 0;
    double loss = 0, lr = 0;
    std::optional<double> gradNorm;
    /// Under loss scaling: the scale the step used, and whether its
    /// gradients overflowed, so that it was skipped (nothing stored).
    std::optional<double> lossScale;
    bool skipped = false;
    /// Seconds from the step before's end (the first: the run's start)
    /// to the end of this one.
    double seconds = 0;
    /// When it ended, in seconds from the run's start.
    double endSeconds = 0;
  };
  std::vector<Step> steps;
  /// Tensors of the last load() that matched no parameter and were skipped
  /// (a training checkpoint's optimizer state, read by a forward program).
  std::vector<std::string> skippedTensors;
  /// The last training step's rate, and its gradients' global norm (when
  /// the optimizer clips).
  double lr = 0;
  std::optional<double> gradNorm;
  /// With a dataset (Session::setData): where the loader stands (samples
  /// drawn since the start of training), the epoch that is, the tokens a
  /// step trains on, and the seconds its thread spent reading ahead.
  int64_t dataPosition = 0, dataEpoch = 0, tokensPerStep = 0;
  double prefetchSeconds = 0;
  /// Every Session::evaluate so far: the step it followed and the mean
  /// validation loss.
  struct Eval {
    int64_t step = 0;
    double loss = 0;
  };
  std::vector<Eval> evals;
};

class Session {
public:
  static absl::StatusOr<std::unique_ptr<Session>>
  create(const Program &program, const SessionOptions &options = {});
  ~Session();

  /// Sets input `name` (a graph input's name, or argN) for the next runs.
  absl::Status feed(const std::string &name, runtime::HostTensor value);
  /// Sets input `name` from a .npy file, mapped into memory: each process
  /// reads only its ranks' pieces of it, at every run. The file's dtype is
  /// the input's, another integer type for an integer input, or f32 for a
  /// bf16 input (NumPy has no bf16). The file must not change while it is
  /// fed (a run checks its size and time, and fails if it changed); to
  /// feed new contents, write a new file, or feed it again after writing.
  absl::Status feedFile(const std::string &name, const std::string &path);
  /// Runs the program (a forward pass).
  absl::Status run(const RunOptions &options = {});
  /// Output `name` (or outN) of the last run.
  absl::StatusOr<runtime::HostTensor> fetch(const std::string &name) const;
  /// One training step at the schedule's rate; returns the loss. A loss
  /// that is not finite is an error (the run stops there).
  absl::StatusOr<double> trainStep(const RunOptions &options = {});
  /// `steps` training steps as iterations of one run, each at its own rate
  /// from the schedule: step i+1 reads each parameter as soon as step i
  /// has updated it, so its forward overlaps step i's tail, and the
  /// programs are bound once. Returns each step's loss. The steps are
  /// applied together: a loss or gradient norm that is not finite in any
  /// of them is an error, and the parameters stay those before the call.
  /// Report::steps has each step's loss, rate and time.
  absl::StatusOr<std::vector<double>> train(int64_t steps,
                                            const RunOptions &options = {});
  /// Forces the backward pass of the given steps (global step numbers) to
  /// overflow, for tests of loss scaling: their loss's gradient seed is
  /// multiplied by infinity. Needs a program compiled with
  /// CompileOptions::mixedPrecision.injectOverflow.
  absl::Status injectOverflow(std::set<int64_t> steps);
  /// Emulated compute, from the next run on: every compute op that
  /// `opProfile` (Program::profileOps's JSON, from this machine or
  /// another) times runs as a wait of that time instead of its kernel, with
  /// zeros for results; communication, parameters and the pipeline
  /// schedule run for real. For measuring what the runtime makes of a
  /// schedule where devices outnumber cores (docs/pipeline.md): waits hold
  /// a device's stream, not a core. Losses, weights and memory figures are
  /// then meaningless. CPU devices only; an empty profile ends it. Under
  /// mpirun every process makes the same call between the same runs (the
  /// next run binds afresh), with the same profile.
  absl::Status emulateCompute(const std::string &opProfile);
  /// Trains on a dataset from now on: each step of train() and trainStep()
  /// draws the next batch of the training split into the token and label
  /// inputs, which need no feed(). The batch must be the inputs' first
  /// dim and the sequence length their second; ids must be below the
  /// model's vocabulary. The loader's position is saved in checkpoints and
  /// restored by load() (before or after this call), so that a resumed run
  /// sees the batches the uninterrupted run would have.
  absl::Status setData(const DataOptions &options);
  /// The mean loss over the first `batches` batches of the validation split
  /// (the same ones every call), with the current weights and no update;
  /// recorded in Report::evals. Needs setData, a validation split and
  /// Program::canEvaluate.
  absl::StatusOr<double> evaluate(int64_t batches);
  /// Samples `tokens` ids after `prompt` from the model's logits
  /// (Program::canGenerate), recomputing the whole context per id (its last
  /// sequence-length ids, left-aligned in the ids input's first row; no KV
  /// cache). `temperature` 0 takes the argmax (the first on ties); else the
  /// softmax of logits / temperature over the `topK` largest (0: all),
  /// drawn from `seed`. Returns the new ids. Parameters are the session's:
  /// trained, loaded or initialized.
  absl::StatusOr<std::vector<int64_t>>
  generate(const std::vector<int64_t> &prompt, int64_t tokens,
           double temperature = 1.0, int64_t topK = 0, uint64_t seed = 0);
  /// Checkpoints: one logical file, or a directory of shards.
  absl::Status save(const std::string &path, bool sharded = false);
  /// Resumes from a checkpoint (either format, any mesh or process layout).
  absl::Status load(const std::string &path);
  /// Starts the weights from a .safetensors file of logical tensors by
  /// name: every model weight must be there, and every tensor must match a
  /// parameter (an error names the ones that do not); optimizer state not
  /// in the file keeps its initializer.
  absl::Status loadParameters(const std::string &path);
  /// Replaces the learning-rate schedule (lr, schedule, warmupSteps,
  /// totalSteps, minLr) for the next steps; the optimizer's kind and
  /// constants are compiled into the program and stay.
  absl::Status setSchedule(const OptimizerOptions &rates);
  Report report() const { return last; }
  /// Where the ranks run: this process alone, or the processes of a launch.
  runtime::World &world() { return *world_; }
  /// Threads of each device's kernels (SessionOptions::threadsPerDevice,
  /// or the node's cores shared among its devices); 0 once closed.
  int threadsPerDevice() const;
  /// Ends the session; every later call fails.
  void close();

private:
  Session() = default;
  absl::Status usable(const char *call) const;

  using Accept =
      std::function<absl::Status(const std::vector<runtime::HostTensor> &)>;
  /// One run; `varying` inputs change per iteration, and `every` (when
  /// given) gets every iteration's results.
  absl::Status
  runOnce(const char *call, const RunOptions &options,
          const Accept &accept = {},
          std::map<int64_t, std::vector<runtime::Input>> varying = {},
          std::vector<std::vector<runtime::HostTensor>> *every = nullptr);
  absl::StatusOr<std::vector<double>>
  trainSteps(const char *call, int64_t steps, const RunOptions &options);

  /// The batches of the next `steps` steps, as varying inputs.
  std::map<int64_t, std::vector<runtime::Input>> drawBatches(int64_t steps);
  /// Seeks the loader to the position a checkpoint recorded, if it was
  /// made on the same data.
  void resumeData();
  int64_t dataPositionNow() const;
  void rewindData(int64_t position);
  /// The report's data figures, after a run.
  void noteData();
  /// What a checkpoint records of the loader.
  std::map<std::string, std::string> dataMetadata() const;

  Program program;
  OptimizerOptions rates;
  struct Data;
  std::shared_ptr<Data> data;
  /// A loaded checkpoint's data metadata, for setData after load().
  std::map<std::string, std::string> dataMeta;
  std::unique_ptr<runtime::World> world_; // outlives the session's runs
  std::unique_ptr<runtime::CpuSession> cpu;
  std::map<std::string, int64_t> inputIndex, outputIndex;
  std::map<int64_t, Port> inputPorts; // shape and type of each input
  /// The inputs fed from files, checked unchanged before each run.
  std::map<int64_t, std::shared_ptr<const runtime::MappedNpy>> files;
  std::vector<runtime::Input> inputs;
  std::vector<runtime::HostTensor> outputs;
  std::optional<int64_t> lrIndex, lossIndex, gradNormIndex;
  /// Loss scaling: the input that injects overflows, and the outputs that
  /// give the scale and whether a step was skipped.
  std::optional<int64_t> injectIndex, lossScaleIndex, skippedIndex;
  std::set<int64_t> overflowAt;
  std::set<int64_t> fed;
  int64_t step = 0;
  bool closed = false;
  Report last;
};

} // namespace pc::api

#endif // PC_API_PROGRAM_H

//===- pc-run.cpp - Compile and run a model on CPU virtual devices --------===//
//
//   pc-run MODEL.mlir [--devices cpu:N] [--inputs DIR] [--dump-outputs DIR]
//          [--params FILE.safetensors] [--seed S] [--steps K]
//          [--report FILE.json] [--trace FILE.json] [--graph NAME]
//
// A client of the C++ API (api/Program.h): compiles a logical graph with
// the API's pipeline (or takes per-device programs as they are), runs it in
// an API Session on N CPU virtual devices per process, and writes the
// outputs as .npy files and a JSON report. Inputs are DIR/<name>.npy for an
// argument with a pc.name, else DIR/argN.npy; missing ones are filled
// deterministically from --seed, as are parameters (or --params). Outputs
// are OUT/<name>.npy or OUT/outN.npy likewise.
//
// Each device's program runs on the actor runtime: --steps K runs K
// iterations that overlap as far as --registers allows; the report holds
// each step's time (from one step's end to the next's) and the trace every
// actor firing on each device's compute and communication streams.
//
//===----------------------------------------------------------------------===//

#include "api/GraphPlan.h"
#include "api/Program.h"
#include "api/Trace.h"
#include "runtime/exec/Npy.h"
#include "runtime/exec/Safetensors.h"
#include "tools/ToolOptions.h"
#include "tools/pc-run/Plot.h"
#include "tools/pc-run/Train.h"

#include "llvm/Support/CommandLine.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <set>

#include "pipeline/Schedule.h"

#include <map>
#include <optional>
using pc::runtime::CommType;
using pc::runtime::HostTensor;
namespace cl = llvm::cl;

namespace {

int fail(const std::string &message) {
  llvm::errs() << "pc-run: " << message << "\n";
  return 1;
}

/// "64MiB", "1.5GiB", "100MB" or "1000000" (bytes) as bytes; "" is 0 (no
/// limit); nothing when malformed.
std::optional<int64_t> parseBytes(llvm::StringRef text) {
  text = text.trim();
  if (text.empty())
    return 0;
  static const std::pair<const char *, double> kUnits[] = {
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
      {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},
      {"B", 1.0}};
  double scale = 1;
  for (auto [unit, factor] : kUnits)
    if (text.consume_back(unit)) {
      scale = factor;
      break;
    }
  double value = 0;
  if (text.trim().getAsDouble(value) || !(value > 0) || value * scale > 1e18)
    return std::nullopt;
  return static_cast<int64_t>(value * scale);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  pc::tools::hideLibraryOptions();
  cl::OptionCategory runCat("Model and run");
  cl::opt<std::string> model(cl::Positional, cl::desc("<model.mlir>"),
                             cl::cat(runCat));
  cl::opt<std::string> devices(
      "devices",
      cl::desc("cpu:N: N CPU virtual devices; cuda:N: N GPUs (per process "
               "under mpirun)"),
      cl::init("cpu:1"), cl::cat(runCat));
  cl::opt<std::string> inputsDir(
      "inputs", cl::desc("Directory of <name>.npy or argN.npy inputs"),
      cl::cat(runCat));
  cl::opt<std::string> outputsDir("dump-outputs",
                                  cl::desc("Directory for outN.npy outputs"),
                                  cl::cat(runCat));
  cl::opt<uint64_t> seed("seed", cl::desc("Seed of inputs and parameters"),
                         cl::init(0), cl::cat(runCat));
  cl::opt<int> steps("steps", cl::desc("Forward passes to run"), cl::init(1),
                     cl::cat(runCat));
  cl::opt<int> registers(
      "registers",
      cl::desc("Registers per actor: how many steps a value may run ahead of "
               "its slowest consumer"),
      cl::init(2), cl::cat(runCat));
  cl::opt<std::string> reportPath("report", cl::desc("JSON report file"),
                                  cl::cat(runCat));
  cl::opt<std::string> graphName("graph", cl::desc("Graph to run"),
                                 cl::cat(runCat));
  cl::opt<std::string> paramsPath(
      "params", cl::desc("Parameters from a .safetensors file, by name"),
      cl::cat(runCat));
  cl::opt<std::string> tracePath(
      "trace",
      cl::desc("Chrome/Perfetto trace of every actor firing (JSON; "
               "with --train, of the last step)"),
      cl::cat(runCat));
  cl::opt<int> threadsPerDevice(
      "threads-per-device",
      cl::desc("Threads of each device's kernels (default: cores / devices)"),
      cl::init(0), cl::cat(runCat));
  cl::opt<std::string> kernels(
      "kernels",
      cl::desc("The CPU devices' kernels: 'native' (the CPU backend's, "
               "default) or 'portable' (the GPU backend's, built for the host "
               "through Thrust; slower, for testing them without a GPU)"),
      cl::init("native"), cl::cat(runCat));
  cl::opt<bool> autoParallel(
      "auto-parallel",
      cl::desc("Choose the layout of every value the model leaves "
               "unannotated for the least predicted step time, within "
               "--device-memory (docs/planning.md)"),
      cl::cat(runCat));
  cl::list<std::string> meshShapes(
      "mesh-shape",
      cl::desc("NAME=AxB...: run the graph's mesh @NAME with these axis "
               "sizes (same axes; the devices follow), e.g. mesh=4x1 as "
               "pc-plan writes it"),
      cl::cat(runCat));
  cl::opt<std::string> clusterSpec(
      "cluster",
      cl::desc("Cluster spec (JSON, docs/planning.md) whose rates every cost "
               "is figured with: --auto-parallel's, SBP propagation's and "
               "the boxing planner's (default: this machine's CPU devices)"),
      cl::cat(runCat));
  cl::OptionCategory memoryCat("Memory");
  cl::opt<std::string> deviceMemory(
      "device-memory",
      cl::desc("Memory of each device, e.g. 64MiB or 2GiB (bytes without a "
               "unit): a program whose predicted peak needs more fails to "
               "compile, and the allocator enforces it; training then runs "
               "one step per run (--steps-per-run 1), as predicted"),
      cl::cat(memoryCat));
  cl::opt<int> zero(
      "zero",
      cl::desc("ZeRO stage with --train: 1 shards the optimizer state over "
               "the data-parallel axis, 2 also reduce-scatters the gradients, "
               "3 also stores the weights sharded and gathers them at each "
               "use (0: none)"),
      cl::init(0), cl::cat(memoryCat));
  cl::opt<std::string> zeroAxis("zero-axis",
                                cl::desc("The mesh axis ZeRO shards over"),
                                cl::init("dp"), cl::cat(memoryCat));
  cl::opt<bool> inPlaceUpdates(
      "in-place-updates",
      cl::desc("With --train, let each parameter's old value go once the "
               "step has read it for the last time, instead of holding the "
               "step's starting model state to its end to roll back to "
               "(saves up to the model state's size); a step that fails or "
               "diverges then ends the run with the parameters "
               "half-updated (resume with --load)"),
      cl::cat(memoryCat));
  cl::opt<int> loraRank(
      "lora-rank",
      cl::desc("With --train, fine-tune rank-N low-rank adapters of the "
               "matmul weights --lora-targets names; every other weight is "
               "frozen (0: no adapters)"),
      cl::init(0), cl::cat(memoryCat));
  cl::opt<double> loraAlpha("lora-alpha",
                            cl::desc("The adapters' scale is alpha / rank"),
                            cl::init(16.0), cl::cat(memoryCat));
  cl::opt<std::string> loraTargets(
      "lora-targets",
      cl::desc("Regular expression over weight names: the weights to adapt "
               "(default: attention queries and values, attn\\.(q|v)$)"),
      cl::init("attn\\.(q|v)$"), cl::cat(memoryCat));
  cl::opt<std::string> mergeLoraPath(
      "merge-lora",
      cl::desc("After training, write the model weights with the adapters "
               "folded in (W + alpha/rank A B) to this .safetensors file, "
               "for --load-params of the model without adapters"),
      cl::cat(memoryCat));
  cl::opt<int> stateBits(
      "state-bits",
      cl::desc("Bits per element of Adam's moments: 32, or 8 (block-wise "
               "quantized, for tensors of 4096 elements or more)"),
      cl::init(32), cl::cat(memoryCat));
  cl::opt<std::string> recompute(
      "recompute",
      cl::desc("With --train, recompute activations in the backward pass "
               "instead of keeping them: full (whole layers) or selective "
               "(attention cores)"),
      cl::cat(memoryCat));
  cl::opt<std::string> offload(
      "offload",
      cl::desc("With --train, keep in host memory, outside --device-memory: "
               "optimizer (the optimizer state and its step) or all (with "
               "--zero 3, the weights' shards too)"),
      cl::cat(memoryCat));
  cl::opt<std::string> mixedPrecision(
      "mixed-precision",
      cl::desc("With --train, compute in bf16 or f16 over f32 master "
               "weights (softmax, norms, reductions and the loss stay f32)"),
      cl::cat(memoryCat));
  cl::list<std::string> f32Ops(
      "f32-ops",
      cl::desc("Under --mixed-precision, the ops kept in f32, by name "
               "without pc. (default: softmax,log_softmax,layer_norm,"
               "rms_norm,cross_entropy,reduce_sum,reduce_mean; none: no op)"),
      cl::CommaSeparated, cl::cat(memoryCat));
  cl::opt<std::string> lossScale(
      "loss-scale",
      cl::desc("Under --mixed-precision: dynamic (the default for f16: "
               "halve and skip the step on an overflow, double after "
               "--loss-scale-interval clean steps), none (the default for "
               "bf16), or a static scale"),
      cl::cat(memoryCat));
  cl::opt<double> lossScaleInit(
      "loss-scale-init", cl::desc("The dynamic loss scale's first value"),
      cl::init(65536.0), cl::cat(memoryCat));
  cl::opt<int> lossScaleInterval(
      "loss-scale-interval",
      cl::desc("Clean steps after which the dynamic loss scale doubles"),
      cl::init(2000), cl::cat(memoryCat));
  // Pipelines.
  cl::OptionCategory pipeCat("Pipeline parallelism and micro-batches");
  cl::opt<int> stages(
      "stages",
      cl::desc("Pipeline stages: the model is cut into N stages, each on a "
               "copy of its mesh on the next ranks"),
      cl::init(1), cl::cat(pipeCat));
  cl::opt<int> virtualStages(
      "virtual-stages",
      cl::desc("Model stages per device stage (interleaved schedule)"),
      cl::init(1), cl::cat(pipeCat));
  cl::opt<int> microBatches(
      "micro-batches",
      cl::desc("Micro-batches per step; gradients accumulate over them"),
      cl::init(1), cl::cat(pipeCat));
  cl::opt<std::string> pipelineSchedule(
      "pipeline-schedule",
      cl::desc("gpipe, 1f1b, interleaved or zb-h1 (default 1f1b, or "
               "interleaved with --virtual-stages)"),
      cl::cat(pipeCat));
  cl::opt<std::string> scheduleSvg(
      "schedule-svg",
      cl::desc("Write the predicted pipeline schedule as an SVG timeline"),
      cl::cat(pipeCat));
  cl::opt<std::string> traceSvg(
      "trace-svg",
      cl::desc("Trace the run (with --train, its last step) and write its "
               "measured pipeline schedule as an SVG timeline"),
      cl::cat(pipeCat));
  cl::opt<bool> printPlan(
      "plan",
      cl::desc("Print the plan: meshes, each program's ranks, collectives "
               "and pipeline schedule, the predicted bubble"),
      cl::cat(runCat));
  cl::opt<bool> simulate(
      "simulate",
      cl::desc("Print pc-simulate's prediction of one step of the programs "
               "it runs, over the --cluster rates, and put it in the "
               "--report as predicted_step_s (docs/planning.md)"),
      cl::cat(runCat));
  cl::opt<bool> profileOps(
      "profile-ops",
      cl::desc(
          "With --simulate or --emulate-compute: first time each "
          "compute op on one device of this machine, in its program's "
          "order, and use those times (--simulate: instead of the roofline)"),
      cl::cat(runCat));
  cl::opt<std::string> opProfilePath(
      "op-profile",
      cl::desc("With --simulate or --emulate-compute: the op times of an "
               "earlier --profile-ops (JSON); with --profile-ops: where to "
               "write them"),
      cl::value_desc("file"), cl::cat(runCat));
  cl::opt<bool> emulateCompute(
      "emulate-compute",
      cl::desc("Run each compute op as a wait of its time from --profile-ops "
               "or --op-profile instead of its kernel; communication and the "
               "schedule run for real, and a wait holds no core: for "
               "measuring pipelines with more devices than cores. CPU "
               "devices only; losses, weights and memory figures are "
               "meaningless"),
      cl::cat(runCat));
  // Training.
  cl::OptionCategory trainCat("Training (--train)");
  cl::opt<bool> train("train",
                      cl::desc("Train: differentiate the loss, add the "
                               "optimizer, run --steps steps"),
                      cl::cat(trainCat));
  cl::opt<std::string> optimizer("optimizer", cl::desc("sgd, adam or adamw"),
                                 cl::init("adamw"), cl::cat(trainCat));
  cl::opt<double> lr("lr", cl::desc("Learning rate (the schedule's peak)"),
                     cl::init(1e-3), cl::cat(trainCat));
  cl::opt<double> momentum("momentum", cl::desc("SGD momentum"), cl::init(0.0),
                           cl::cat(trainCat));
  cl::opt<double> weightDecay("weight-decay", cl::desc("Weight decay"),
                              cl::init(0.0), cl::cat(trainCat));
  cl::opt<double> beta1("beta1", cl::desc("Adam beta1"), cl::init(0.9),
                        cl::cat(trainCat));
  cl::opt<double> beta2("beta2", cl::desc("Adam beta2"), cl::init(0.999),
                        cl::cat(trainCat));
  cl::opt<double> eps("eps", cl::desc("Adam epsilon"), cl::init(1e-8),
                      cl::cat(trainCat));
  cl::opt<double> clipNorm("clip-norm",
                           cl::desc("Clip gradients to this global norm"),
                           cl::init(0.0), cl::cat(trainCat));
  cl::opt<std::string> schedule(
      "schedule", cl::desc("constant, or cosine (linear warmup, cosine decay)"),
      cl::init("constant"), cl::cat(trainCat));
  cl::opt<int> warmupSteps("warmup-steps", cl::desc("Warmup steps (cosine)"),
                           cl::init(0), cl::cat(trainCat));
  cl::opt<int> totalSteps(
      "total-steps",
      cl::desc("Step where the cosine ends (default: the last step)"),
      cl::init(0), cl::cat(trainCat));
  cl::opt<double> minLr("min-lr", cl::desc("The cosine's final rate"),
                        cl::init(0.0), cl::cat(trainCat));
  cl::opt<std::string> savePath(
      "save", cl::desc("Checkpoint to write at the end (and --save-every)"),
      cl::cat(trainCat));
  cl::opt<std::string> saveFormat(
      "save-format", cl::desc("logical (one file) or sharded (a directory)"),
      cl::init("logical"), cl::cat(trainCat));
  cl::opt<int> saveEvery("save-every",
                         cl::desc("Also checkpoint every N steps"), cl::init(0),
                         cl::cat(trainCat));
  cl::opt<std::string> loadPath(
      "load", cl::desc("Resume from a checkpoint (either format, any mesh)"),
      cl::cat(trainCat));
  cl::opt<std::string> dataSpec(
      "data",
      cl::desc("Train on a dataset: a JSON description, key=value,... or "
               "one file (.txt, .npy, .bin); see docs/data.md"),
      cl::cat(trainCat));
  cl::opt<int> evalEvery(
      "eval-every",
      cl::desc("Report the validation loss every N steps (and before the "
               "first)"),
      cl::init(0), cl::cat(trainCat));
  cl::opt<std::string> plotPath(
      "plot",
      cl::desc("Draw the training and validation loss against the step as "
               "an SVG chart"),
      cl::cat(trainCat));
  cl::opt<std::string> plotFrom(
      "plot-report",
      cl::desc("With --plot: draw the curves of this report (of an earlier "
               "run), no model needed"),
      cl::cat(trainCat));
  cl::opt<int> evalBatches("eval-batches",
                           cl::desc("Validation batches per evaluation"),
                           cl::init(8), cl::cat(trainCat));
  cl::opt<int> stepsPerRun(
      "steps-per-run",
      cl::desc("Steps per run of the actor graph: each reads the parameters "
               "the one before updated, so steps overlap; one that diverges "
               "rejects its run's steps"),
      cl::init(8), cl::cat(trainCat));
  // Sampling.
  cl::OptionCategory sampleCat("Generation (a language model's logits)");
  cl::opt<int> generateTokens(
      "generate",
      cl::desc("Sample N tokens after --prompt (with --train: before and "
               "after training) instead of running the graph"),
      cl::init(0), cl::cat(sampleCat));
  cl::opt<std::string> prompt("prompt",
                              cl::desc("The context, as text (byte-level ids)"),
                              cl::init("The "), cl::cat(sampleCat));
  cl::opt<double> temperature(
      "temperature", cl::desc("0: the most likely token; higher: more random"),
      cl::init(0.8), cl::cat(sampleCat));
  cl::opt<int> topK("top-k",
                    cl::desc("Sample among the K most likely (0: all)"),
                    cl::init(0), cl::cat(sampleCat));
  // Many processes.
  cl::OptionCategory clusterCat("Processes (mpirun -np N pc-run ...)");
  cl::opt<double> timeout(
      "timeout",
      cl::desc("Seconds a rank waits in a collective or receive before it "
               "names the rank that did not come and the run ends"),
      cl::init(300), cl::cat(clusterCat));
  cl::opt<bool> desyncCheck(
      "desync-check",
      cl::desc("Compare each collective's signature across its members "
               "before it runs (default on)"),
      cl::init(true), cl::cat(clusterCat));
  cl::ParseCommandLineOptions(argc, argv, "pc-run: run a model\n");

  if (!plotFrom.empty()) {
    if (plotPath.empty())
      return fail("--plot-report needs --plot FILE.svg");
    if (absl::Status s = pc::tools::plotReport(plotFrom, plotPath); !s.ok())
      return fail(std::string(s.message()));
    return 0;
  }
  if (model.empty())
    return fail("no model given (pc-run MODEL.mlir [options]; see --help)");
  if (kernels != "native" && kernels != "portable")
    return fail("--kernels must be 'native' or 'portable', not '" + kernels +
                "'");
  if (!plotPath.empty() && !train)
    return fail("--plot needs --train (or --plot-report)");
  if ((profileOps || !opProfilePath.empty()) && !simulate && !emulateCompute)
    return fail("--profile-ops and --op-profile go with --simulate or "
                "--emulate-compute");
  if (emulateCompute && !profileOps && opProfilePath.empty())
    return fail("--emulate-compute needs the ops' times: --profile-ops or "
                "--op-profile FILE");

  int64_t numDevices = 0;
  llvm::StringRef spec(devices);
  std::string deviceKind = spec.starts_with("cuda:") ? "cuda" : "cpu";
  if ((!spec.consume_front("cpu:") && !spec.consume_front("cuda:")) ||
      spec.getAsInteger(10, numDevices) || numDevices < 1)
    return fail("--devices must be cpu:N or cuda:N with N >= 1, not '" +
                devices + "'");
  if (profileOps && deviceKind != "cpu")
    return fail("--profile-ops times the CPU devices' kernels; give an "
                "--op-profile measured on the devices you run on");
  if (emulateCompute && deviceKind != "cpu")
    return fail("--emulate-compute runs on CPU devices (--devices cpu:N)");
  if (deviceKind == "cuda" && kernels == "portable")
    return fail("--kernels portable is for CPU devices (--devices cpu:N)");
  if (steps < (train ? 0 : 1))
    return fail(train ? "--steps must be at least 0"
                      : "--steps must be at least 1");
  if (registers < 1)
    return fail("--registers must be at least 1");
  if (stepsPerRun < 1)
    return fail("--steps-per-run must be at least 1");
  if (!(timeout > 0))
    return fail("--timeout must be a positive number of seconds");
  if (!train && (!savePath.empty() || saveEvery > 0))
    return fail("--save and --save-every write training checkpoints; they "
                "need --train");
  if (saveFormat != "sharded" && saveFormat != "logical")
    return fail("--save-format must be logical or sharded, not '" + saveFormat +
                "'");

  // Compile: the API's one pipeline (autodiff and the optimizer first when
  // training a logical graph).
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(model);
  if (!file)
    return fail(model + ": " + file.getError().message());
  if (stages < 1 || virtualStages < 1 || microBatches < 1)
    return fail("--stages, --virtual-stages and --micro-batches must be at "
                "least 1");
  std::optional<int64_t> memoryBytes = parseBytes(deviceMemory);
  if (!memoryBytes)
    return fail("--device-memory must be a size such as 64MiB, 2GiB or "
                "1000000 (bytes), not '" +
                deviceMemory + "'");
  // The prediction is of one step on its own: overlapped steps hold more.
  if (*memoryBytes > 0)
    stepsPerRun = 1;
  if (zero < 0 || zero > 3)
    return fail("--zero must be 0, 1, 2 or 3, not " + std::to_string(zero));
  if (zero > 0 && !train)
    return fail("--zero shards training's optimizer state; it needs --train");
  if (inPlaceUpdates && !train)
    return fail("--in-place-updates is how training stores its updates; it "
                "needs --train");
  if (!recompute.empty() && recompute != "full" && recompute != "selective")
    return fail("--recompute is full or selective, not '" + recompute + "'");
  if (stateBits != 32 && stateBits != 8)
    return fail("--state-bits must be 32 or 8, not " +
                std::to_string(stateBits));
  if (stateBits == 8 && (!train || optimizer == "sgd"))
    return fail("--state-bits 8 quantizes Adam's moments; it needs --train "
                "and --optimizer adam or adamw");
  if (loraRank < 0)
    return fail("--lora-rank must be at least 0, not " +
                std::to_string(loraRank));
  if (loraRank > 0 && !train)
    return fail("--lora-rank adds adapters to train; it needs --train");
  if (!mergeLoraPath.empty() && loraRank == 0)
    return fail("--merge-lora folds trained adapters in; it needs "
                "--lora-rank");
  if (!recompute.empty() && !train)
    return fail("--recompute rewrites training's backward pass; it needs "
                "--train");
  if (!mixedPrecision.empty() && mixedPrecision != "bf16" &&
      mixedPrecision != "f16")
    return fail("--mixed-precision is bf16 or f16, not '" + mixedPrecision +
                "'");
  if (!offload.empty() && offload != "optimizer" && offload != "all")
    return fail("--offload is optimizer or all, not '" + offload + "'");
  if (!offload.empty() && !train)
    return fail("--offload moves training's optimizer to the host; it needs "
                "--train");
  if (offload == "all" && zero != 3)
    return fail("--offload all keeps the weights' shards on the host; it "
                "needs --zero 3");
  if (!mixedPrecision.empty() && !train)
    return fail("--mixed-precision runs training in 16 bits; it needs "
                "--train");
  if ((!f32Ops.empty() || !lossScale.empty()) && mixedPrecision.empty())
    return fail("--f32-ops and --loss-scale need --mixed-precision");
  // Test hook: PC_TEST_OVERFLOW=STEP,... forces those steps' gradients to
  // overflow (loss scaling must skip exactly them).
  std::set<int64_t> overflowAt;
  if (const char *spec = std::getenv("PC_TEST_OVERFLOW")) {
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(spec).split(parts, ',', -1, false);
    for (llvm::StringRef p : parts) {
      int64_t at = 0;
      if (p.trim().getAsInteger(10, at) || at < 0)
        return fail("PC_TEST_OVERFLOW must be step numbers separated by "
                    "commas, not '" +
                    std::string(spec) + "'");
      overflowAt.insert(at);
    }
  }
  pc::api::CompileOptions compileOptions;
  compileOptions.deviceMemory = *memoryBytes;
  compileOptions.zero = zero;
  compileOptions.zeroAxis = zeroAxis;
  compileOptions.recompute = recompute;
  compileOptions.inPlaceUpdates = inPlaceUpdates;
  compileOptions.autoParallel = autoParallel;
  for (const std::string &text : meshShapes) {
    absl::StatusOr<std::pair<std::string, std::vector<int64_t>>> shape =
        pc::api::parseMeshShape(text);
    if (!shape.ok())
      return fail("--mesh-shape: " + std::string(shape.status().message()));
    compileOptions.meshShapes[shape->first] = shape->second;
  }
  compileOptions.cluster = clusterSpec;
  compileOptions.mixedPrecision.dtype = mixedPrecision;
  compileOptions.offload.optimizer = !offload.empty();
  compileOptions.offload.parameters = offload == "all";
  compileOptions.mixedPrecision.f32Ops.assign(f32Ops.begin(), f32Ops.end());
  compileOptions.mixedPrecision.lossScale = lossScale;
  compileOptions.mixedPrecision.initScale = lossScaleInit;
  compileOptions.mixedPrecision.growthInterval = lossScaleInterval;
  compileOptions.mixedPrecision.injectOverflow = !overflowAt.empty();
  compileOptions.lora.rank = loraRank;
  compileOptions.lora.alpha = loraAlpha;
  compileOptions.lora.targets = loraTargets;
  compileOptions.train = train;
  compileOptions.stages = stages;
  compileOptions.virtualStages = virtualStages;
  compileOptions.microbatches = microBatches;
  compileOptions.schedule = pipelineSchedule;
  compileOptions.optimizer = {
      optimizer, lr,       momentum,    weightDecay, beta1, beta2,    eps,
      clipNorm,  schedule, warmupSteps, totalSteps,  minLr, stateBits};
  absl::StatusOr<pc::api::Program> program = pc::api::compileSource(
      (*file)->getBuffer().str(), model, compileOptions, graphName);
  if (!program.ok())
    return fail(std::string(program.status().message()));
  const std::string &graph = program->graph();
  if (!scheduleSvg.empty()) {
    std::string svg = program->scheduleSvg();
    if (svg.empty())
      return fail("--schedule-svg: @" + graph + " is not pipelined");
    std::error_code ec;
    llvm::raw_fd_ostream out(scheduleSvg, ec);
    if (ec)
      return fail(scheduleSvg + ": " + ec.message());
    out << svg;
  }
  if (train && !program->isTrainingStep())
    return fail("@" + graph +
                " is not a training step: it needs an `lr` input and a "
                "{pc.loss} result (train a logical graph with a loss)");

  if (!pc::runtime::launchedByMpi() && program->numDevices() > numDevices)
    return fail("the model's meshes need " +
                std::to_string(program->numDevices()) +
                " devices, but --devices gives " + std::to_string(numDevices));

  // The session: this process alone, or the processes of an mpirun/srun
  // launch, each hosting --devices ranks.
  pc::api::SessionOptions sessionOptions;
  sessionOptions.devices = numDevices;
  sessionOptions.seed = seed;
  sessionOptions.threadsPerDevice = threadsPerDevice;
  sessionOptions.portableKernels = kernels == "portable";
  // cuda:N puts every rank on a GPU; cpu:N leaves the meshes' own kinds.
  if (deviceKind == "cuda")
    sessionOptions.deviceKind = deviceKind;
  sessionOptions.deviceMemory = *memoryBytes;
  sessionOptions.world.devicesPerProcess = numDevices;
  sessionOptions.world.timeoutSeconds = timeout;
  sessionOptions.world.checkDesync = desyncCheck;
  absl::StatusOr<std::unique_ptr<pc::api::Session>> session =
      pc::api::Session::create(*program, sessionOptions);
  if (!session.ok())
    return fail(std::string(session.status().message()));
  if (!overflowAt.empty())
    if (absl::Status s = (*session)->injectOverflow(overflowAt); !s.ok())
      return fail("PC_TEST_OVERFLOW: " + std::string(s.message()));
  pc::runtime::World &world = (*session)->world();
  // From here on a failure of this process ends the others' waits too.
  auto failAll = [&](const std::string &message) {
    world.abort(absl::InternalError(message));
    return fail(message);
  };
  int64_t processes = world.processCount();
  bool speaker = world.process() == 0; // process 0 prints and writes
  double predictedStep = 0, simulatedIdle = 0, predictedWork = 0;
  std::string profile;
  if (simulate || emulateCompute) {
    if (profileOps) {
      absl::StatusOr<std::string> p =
          program->profileOps((*session)->threadsPerDevice());
      if (!p.ok())
        return failAll("--profile-ops: " + std::string(p.status().message()));
      profile = *std::move(p);
      if (!opProfilePath.empty() && speaker)
        if (absl::Status s =
                pc::runtime::writeFileAtomically(opProfilePath, profile);
            !s.ok())
          return failAll(std::string(s.message()));
    } else if (!opProfilePath.empty()) {
      auto buffer = llvm::MemoryBuffer::getFile(opProfilePath);
      if (!buffer)
        return failAll(opProfilePath + ": " + buffer.getError().message());
      profile = (*buffer)->getBuffer().str();
    }
    // Every process predicts and emulates with process 0's times, not with
    // its own profile of the same ops.
    if (processes > 1) {
      absl::StatusOr<std::string> shared = world.broadcast(profile);
      if (!shared.ok())
        return failAll(std::string(shared.status().message()));
      profile = *std::move(shared);
    }
  }
  // Names the profile file in what it got wrong.
  std::string profileSource =
      opProfilePath.empty() || profileOps ? "" : opProfilePath + ": ";
  if (simulate) {
    absl::StatusOr<std::string> text =
        program->simulate(&predictedStep, profile, emulateCompute,
                          &simulatedIdle, &predictedWork);
    if (!text.ok())
      return failAll(profileSource + std::string(text.status().message()));
    if (speaker)
      llvm::outs() << *text;
  }
  if (emulateCompute) {
    if (profile.empty())
      return failAll(profileSource + "the op profile is empty");
    if (absl::Status s = (*session)->emulateCompute(profile); !s.ok())
      return failAll(profileSource + std::string(s.message()));
    if (speaker)
      llvm::outs() << "compute emulated: each profiled compute op waits its "
                      "time; losses and weights are meaningless\n";
  }
  if (printPlan && speaker) {
    llvm::outs() << program->plan();
    // The memory techniques' effect: the same model compiled without them.
    std::vector<std::string> used;
    if (zero > 0)
      used.push_back("--zero " + std::to_string(zero));
    if (!recompute.empty())
      used.push_back("--recompute " + recompute);
    if (!mixedPrecision.empty())
      used.push_back("--mixed-precision " + mixedPrecision);
    if (!offload.empty())
      used.push_back("--offload " + offload);
    if (stateBits != 32)
      used.push_back("--state-bits " + std::to_string(stateBits));
    if (loraRank > 0)
      used.push_back("--lora-rank " + std::to_string(loraRank));
    if (inPlaceUpdates)
      used.push_back("--in-place-updates");
    if (!used.empty()) {
      pc::api::CompileOptions plain = compileOptions;
      plain.zero = 0;
      plain.inPlaceUpdates = false;
      plain.recompute.clear();
      plain.mixedPrecision = {};
      plain.offload = {};
      plain.lora.rank = 0;
      plain.optimizer.stateBits = 32;
      plain.deviceMemory = 0;
      absl::StatusOr<pc::api::Program> before = pc::api::compileSource(
          (*file)->getBuffer().str(), model, plain, graphName);
      llvm::outs() << "predicted peak per device, without -> with "
                   << llvm::join(used, " ") << ":";
      if (!before.ok()) {
        llvm::outs() << " (without: " << std::string(before.status().message())
                     << ")\n";
      } else {
        std::map<int64_t, pc::api::MemoryUse> was = before->predictedMemory();
        auto mib = [](int64_t b) {
          return llvm::formatv("{0:f2} MiB", b / 1048576.0).str();
        };
        for (auto &[rank, now] : program->predictedMemory())
          llvm::outs() << "\n  rank " << rank << ": " << mib(was[rank].peak)
                       << " -> " << mib(now.peak)
                       << llvm::formatv(" ({0:f2}x)",
                                        was[rank].peak
                                            ? double(now.peak) / was[rank].peak
                                            : 0.0)
                              .str();
        llvm::outs() << "\n";
      }
    }
  }

  // Inputs: DIR/<name>.npy (argN for an unnamed one), mapped so that each
  // process reads only its ranks' pieces; else drawn from --seed.
  absl::StatusOr<std::vector<HostTensor>> inputs = program->exampleInputs(seed);
  if (!inputs.ok())
    return failAll(inputs.status().ToString());
  if (!inputsDir.empty() && !llvm::sys::fs::is_directory(inputsDir))
    return failAll("--inputs " + inputsDir + " is not a directory");
  for (const pc::api::Port &port : program->inputs()) {
    if (program->fedByTraining(port.index))
      continue; // the schedule's rate, and the like
    std::string path = inputsDir + "/arg" + std::to_string(port.index) + ".npy";
    if (llvm::sys::fs::exists(inputsDir + "/" + port.name + ".npy"))
      path = inputsDir + "/" + port.name + ".npy";
    absl::Status fed =
        !inputsDir.empty() && llvm::sys::fs::exists(path)
            ? (*session)->feedFile(port.name, path)
            : (*session)->feed(port.name, std::move((*inputs)[port.index]));
    if (!fed.ok())
      return failAll(std::string(fed.message()));
  }

  // A dataset feeds the token and label inputs of every step.
  if (!dataSpec.empty()) {
    if (!train)
      return failAll("--data needs --train");
    pc::api::DataOptions data;
    data.spec = dataSpec;
    data.seed = seed;
    if (absl::Status s = (*session)->setData(data); !s.ok())
      return failAll(std::string(s.message()));
  } else if (evalEvery > 0) {
    return failAll("--eval-every needs --data (a validation split)");
  }

  // Parameters: from --params (weights; optimizer state keeps its
  // initializers when training), or a checkpoint to resume.
  if (!paramsPath.empty())
    if (absl::Status s = (*session)->loadParameters(paramsPath); !s.ok())
      return failAll(s.ToString());
  if (!loadPath.empty())
    if (absl::Status s = (*session)->load(loadPath); !s.ok())
      return failAll(s.ToString());
  if (!loadPath.empty() && speaker)
    for (const std::string &name : (*session)->report().skippedTensors)
      llvm::errs() << "pc-run: warning: " << loadPath << ": tensor '" << name
                   << "' matches no parameter of the program (skipped)\n";

  // A sample of the model's text: the prompt's bytes, then N sampled ones
  // (printable ASCII as it is, other bytes escaped).
  auto sampleText = [&](const std::string &when) -> absl::Status {
    std::vector<int64_t> context;
    for (unsigned char c : std::string(prompt))
      context.push_back(c);
    absl::StatusOr<std::vector<int64_t>> ids =
        (*session)->generate(context, generateTokens, temperature, topK, seed);
    if (!ids.ok())
      return ids.status();
    if (!speaker)
      return absl::OkStatus();
    std::string text = prompt;
    for (int64_t id : *ids)
      text += id == '\n' || (id >= 32 && id < 127)
                  ? std::string(1, static_cast<char>(id))
                  : llvm::formatv("\\x{0:x-2}", id).str();
    llvm::outs() << "sample" << when << ":\n" << text << "\n";
    llvm::outs().flush();
    return absl::OkStatus();
  };
  if (generateTokens > 0 && !train) {
    if (absl::Status s = sampleText(""); !s.ok())
      return failAll(std::string(s.message()));
    return world.agree(absl::OkStatus()).ok() ? 0 : 1;
  }
  if (generateTokens > 0)
    if (absl::Status s = sampleText(" before training"); !s.ok())
      return failAll(std::string(s.message()));

  bool tracing = !tracePath.empty() || !traceSvg.empty();
  llvm::json::Array stepTimes, validation;
  std::optional<double> steadyStep;
  std::map<int64_t, pc::runtime::CommStats> comm;
  std::map<int64_t, int64_t> peaks;
  if (train) {
    pc::tools::TrainFlags flags{steps,      registers,  lr,       warmupSteps,
                                totalSteps, minLr,      schedule, saveFormat,
                                savePath,   saveEvery,  tracing,  stepsPerRun,
                                evalEvery,  evalBatches};
    absl::StatusOr<bool> more = pc::tools::trainLoop(
        **session, flags, stepTimes, validation, comm, peaks);
    if (!more.ok())
      return failAll(std::string(more.status().message()));
    if (!mergeLoraPath.empty())
      if (absl::Status st = pc::tools::exportMergedLora(
              **session, *program, mergeLoraPath, loraAlpha, speaker);
          !st.ok())
        return failAll(std::string(st.message()));
    if (!*more)
      return 0;
    if (generateTokens > 0)
      if (absl::Status s = sampleText(
              absl::StrCat(" after ", (*session)->report().step, " steps"));
          !s.ok())
        return failAll(std::string(s.message()));
  } else {
    if (absl::Status s = pc::tools::injectFault(world, 0); !s.ok())
      return failAll(s.ToString());
    if (absl::Status s = (*session)->run({steps, registers, tracing}); !s.ok())
      return failAll(s.ToString());
    pc::api::Report report = (*session)->report();
    comm = report.comm;
    peaks = report.peakBytes;
    // Steps overlap; a step's time is from the previous step's end to its
    // own (the first includes binding and parameter initialization).
    double previous = 0;
    for (auto [s, doneUs] : llvm::enumerate(report.iterationDoneUs)) {
      double seconds = (doneUs - previous) * 1e-6;
      previous = doneUs;
      stepTimes.push_back(llvm::json::Object{{"step", s}, {"wall_s", seconds}});
      if (speaker)
        llvm::outs() << "step " << s << ": " << llvm::format("%.4f", seconds)
                     << " s\n";
    }
    // Overlapped steps finish unevenly; their rate after the first (which
    // also binds and initializes) is the steady-state step time.
    const std::vector<double> &done = report.iterationDoneUs;
    if (steps > 1 && done.size() == static_cast<size_t>(steps)) {
      steadyStep = (done.back() - done.front()) * 1e-6 / (steps - 1);
      if (speaker)
        llvm::outs() << "steady state: " << llvm::format("%.4f", *steadyStep)
                     << " s per step\n";
    }
  }
  // Process 0 writes; the others only wait for it to be done.
  if (!speaker) {
    absl::Status s = world.agree(absl::OkStatus());
    return s.ok() ? 0 : failAll(s.ToString());
  }

  if (!outputsDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(outputsDir))
      return failAll(outputsDir + ": " + ec.message());
    for (const pc::api::Port &port : program->outputs()) {
      absl::StatusOr<HostTensor> t = (*session)->fetch(port.name);
      if (!t.ok())
        return failAll(t.status().ToString());
      if (absl::Status s =
              pc::runtime::writeNpy(outputsDir + "/" + port.name + ".npy", *t);
          !s.ok())
        return failAll(s.ToString());
    }
  }

  llvm::json::Array ranks;
  std::map<int64_t, pc::api::MemoryUse> predicted = program->predictedMemory();
  for (auto &[rank, stats] : comm) {
    llvm::json::Object calls;
    for (auto &[kind, n] : stats.calls) {
      auto [sent, received] = stats.bytes[kind];
      calls[kind] = llvm::json::Object{
          {"count", n}, {"bytes_sent", sent}, {"bytes_received", received}};
    }
    llvm::json::Object entry{{"rank", rank},
                             {"peak_bytes", peaks[rank]},
                             {"bytes_sent", stats.bytesSent},
                             {"bytes_received", stats.bytesReceived},
                             {"collectives", std::move(calls)}};
    // The memory plan's prediction of one step (docs/memory.md).
    if (auto p = predicted.find(rank); p != predicted.end())
      entry["predicted_memory"] =
          llvm::json::Object{{"peak", p->second.peak},
                             {"parameters", p->second.parameters},
                             {"gradients", p->second.gradients},
                             {"optimizer_state", p->second.optimizerState},
                             {"activations", p->second.activations},
                             {"workspace", p->second.workspace},
                             {"activations_peak", p->second.activationsPeak},
                             {"host_peak", p->second.hostPeak}};
    ranks.push_back(std::move(entry));
    llvm::outs() << "rank " << rank << ": sent " << stats.bytesSent
                 << " B, received " << stats.bytesReceived << " B";
    if (steps > 1)
      llvm::outs() << " in " << steps << " steps";
    llvm::outs() << "\n";
  }
  if (!tracePath.empty())
    if (absl::Status s = pc::api::writeTrace((*session)->report(), tracePath);
        !s.ok())
      return failAll(s.ToString());
  // The measured schedule of the traced step, against the predicted one.
  std::optional<pc::pipeline::Measured> measured;
  if (tracing && program->predictedBubble()) {
    std::vector<pc::pipeline::MeasuredOp> ops;
    for (auto &[rank, events] : (*session)->report().events)
      for (const pc::api::Event &e : events)
        ops.push_back(
            {rank, e.action, e.stream == "compute", e.startUs, e.durationUs});
    measured = pc::pipeline::measureSchedule(ops);
  }
  if (!traceSvg.empty() && speaker) {
    if (!measured)
      return failAll("--trace-svg: @" + graph + " is not pipelined");
    std::error_code ec;
    llvm::raw_fd_ostream out(traceSvg, ec);
    if (ec)
      return failAll(traceSvg + ": " + ec.message());
    out << pc::pipeline::renderSvg(
        measured->timeline,
        llvm::formatv("@{0}: measured, bubble {1:F1}% (predicted {2:F1}%)",
                      graph, 100 * measured->bubble,
                      100 * *program->predictedBubble())
            .str(),
        compileOptions.virtualStages);
  }
  // Pipelined: the predicted bubble, and the measured one when traced.
  auto pipelineReport = [&]() -> llvm::json::Value {
    std::optional<double> predicted = program->predictedBubble();
    if (!predicted)
      return nullptr;
    llvm::json::Object o{{"predicted_bubble", *predicted}};
    if (measured) {
      o["measured_bubble"] = measured->bubble;
      // The schedule replayed with each action's measured compute time:
      // what the stages' imbalance alone leaves idle.
      std::optional<double> replayed =
          program->predictedBubble([&](const std::string &name) {
            std::optional<pc::pipeline::Action> a =
                pc::pipeline::parseShortName(name);
            auto it =
                a ? measured->computeUs.find(*a) : measured->computeUs.end();
            return it == measured->computeUs.end() ? 0.0 : it->second;
          });
      if (replayed)
        o["replayed_bubble"] = *replayed;
    }
    // pc-simulate's, op by op (--simulate).
    if (simulate)
      o["simulated_bubble"] = simulatedIdle;
    // With op times (--profile-ops, --op-profile): the prediction with each
    // action's profiled cost, the stages' imbalance included.
    // The profile parsed already (--simulate or --emulate-compute fail the
    // run when it does not), so an error here cannot be the profile's.
    if (!profile.empty())
      if (absl::StatusOr<std::optional<double>> b =
              program->profiledBubble(profile);
          b.ok() && *b)
        o["profiled_bubble"] = **b;
    return llvm::json::Value(std::move(o));
  };
  auto dataReport = [&]() -> llvm::json::Value {
    if (dataSpec.empty())
      return nullptr;
    pc::api::Report r = (*session)->report();
    return llvm::json::Object{{"spec", dataSpec},
                              {"position", r.dataPosition},
                              {"epoch", r.dataEpoch},
                              {"tokens_per_step", r.tokensPerStep},
                              {"prefetch_s", r.prefetchSeconds}};
  };
  if (!plotPath.empty() && speaker)
    if (absl::Status s = pc::runtime::writeFileAtomically(
            plotPath, pc::tools::lossCurvesSvg(stepTimes, validation,
                                               "@" + graph + ": loss"));
        !s.ok())
      return failAll(std::string(s.message()));
  if (!reportPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream out(reportPath, ec);
    if (ec)
      return failAll(reportPath + ": " + ec.message());
    out << llvm::formatv(
        "{0:2}\n",
        llvm::json::Value(llvm::json::Object{
            {"graph", graph},
            {"devices", numDevices * processes},
            {"processes", processes},
            {"steps", std::move(stepTimes)},
            {"validation", std::move(validation)},
            {"data", dataReport()},
            {"steady_step_s", steadyStep},
            {"predicted_step_s", simulate ? llvm::json::Value(predictedStep)
                                          : llvm::json::Value(nullptr)},
            // The seconds of the host's cores the predicted step keeps
            // busy, where the devices share them (null where not).
            {"predicted_work_s", predictedWork > 0
                                     ? llvm::json::Value(predictedWork)
                                     : llvm::json::Value(nullptr)},
            {"pipeline", pipelineReport()},
            {"emulated_compute", bool(emulateCompute)},
            {"ranks", std::move(ranks)}}));
  }
  // Every process ends here, or none does: a process that failed
  // elsewhere makes this fail too.
  if (absl::Status s = world.agree(absl::OkStatus()); !s.ok())
    return failAll(s.ToString());
  return 0;
}

//===- pc-run.cpp - Compile and run a model on CPU virtual devices --------===//
//
//   pc-run MODEL.mlir [--devices cpu:N] [--inputs DIR] [--dump-outputs DIR]
//          [--params FILE.safetensors] [--seed S] [--steps K]
//          [--report FILE.json] [--trace FILE.json] [--graph NAME]
//
// Compiles a logical graph with --pc-distribute (or takes per-device
// programs as they are), runs it on N CPU virtual devices, and writes the
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

#include "passes/InitAll.h"
#include "runtime/exec/Checkpoint.h"
#include "runtime/exec/CpuExecutor.h"
#include "runtime/exec/Npy.h"
#include "runtime/exec/ProgramInterface.h"
#include "runtime/exec/Safetensors.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/reference/Interpreter.h"
#include "tools/ToolOptions.h"
#include "tools/pc-run/Train.h"

#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include "passes/PassUtils.h"

#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <thread>

using namespace mlir;
using pc::runtime::CommType;
using pc::runtime::HostTensor;
namespace cl = llvm::cl;

namespace {

int fail(const std::string &message) {
  llvm::errs() << "pc-run: " << message << "\n";
  return 1;
}

bool isInteger(CommType t) { return t == CommType::I32 || t == CommType::I64; }

/// An argument of the graph as the user feeds it.
struct Argument {
  RankedTensorType type; // logical, without its layout
  std::string name;      // pc.name, or empty
};

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  pc::tools::hideLibraryOptions();
  cl::OptionCategory runCat("Model and run");
  cl::opt<std::string> model(cl::Positional, cl::desc("<model.mlir>"),
                             cl::Required, cl::cat(runCat));
  cl::opt<std::string> devices(
      "devices",
      cl::desc("cpu:N: N CPU virtual devices (per process under mpirun)"),
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
      cl::desc("BLAS threads per device (default: cores / devices)"),
      cl::init(0), cl::cat(runCat));
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
  pc::registerAllPasses();
  cl::ParseCommandLineOptions(argc, argv, "pc-run: run a model\n");

  int64_t numDevices = 0;
  llvm::StringRef spec(devices);
  if (!spec.consume_front("cpu:") || spec.getAsInteger(10, numDevices) ||
      numDevices < 1)
    return fail("--devices must be cpu:N with N >= 1 (the CUDA backend does "
                "not run programs yet), not '" +
                devices + "'");
  if (steps < (train ? 0 : 1))
    return fail(train ? "--steps must be at least 0"
                      : "--steps must be at least 1");
  if (registers < 1)
    return fail("--registers must be at least 1");
  if (!(timeout > 0))
    return fail("--timeout must be a positive number of seconds");
  if (!train && (!savePath.empty() || saveEvery > 0))
    return fail("--save and --save-every write training checkpoints; they "
                "need --train");

  DialectRegistry registry;
  pc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(model, &context);
  if (!module)
    return 1; // The parser reported why.

  // The graph: a logical func.func, or the pc.graph of per-device programs.
  std::string graph = graphName;
  bool partitioned = false;
  for (auto f : module->getOps<func::FuncOp>())
    if (StringAttr g = pc::attrs::getGraph(f)) {
      partitioned = true;
      if (graph.empty())
        graph = g.getValue().str();
    }
  if (graph.empty())
    for (auto f : module->getOps<func::FuncOp>()) {
      graph = f.getSymName().str();
      break;
    }
  if (graph.empty())
    return fail(model + " has no graph");

  // Training: the loss's gradients and the optimizer join the graph before
  // anything else sees it.
  // A graph that already stores parameters is a training step: its
  // optimizer settings are in the IR, and the flags only feed the rate.
  bool hasStep = false;
  module->walk([&](pc::SetParamOp) { hasStep = true; });
  if (train && !partitioned && !hasStep) {
    auto exact = [](double v) { return llvm::formatv("{0:e16}", v).str(); };
    std::string pipeline = llvm::formatv(
        "pc-autodiff{{graph={0}},pc-optimizer{{kind={1} momentum={2} "
        "weight-decay={3} beta1={4} beta2={5} eps={6} clip-norm={7}}",
        graph, optimizer.getValue(), exact(momentum), exact(weightDecay),
        exact(beta1), exact(beta2), exact(eps), exact(clipNorm));
    PassManager pm = PassManager::on<ModuleOp>(&context);
    if (failed(parsePassPipeline(pipeline, pm)) || failed(pm.run(*module)))
      return 1; // The passes reported why.
  }

  // The arguments: from the logical signature, or from the per-device
  // programs' pc.index / pc.logical_type / pc.name.
  std::vector<HostTensor> inputs;
  std::map<int64_t, Argument> arguments;
  if (!partitioned) {
    auto f = module->lookupSymbol<func::FuncOp>(graph);
    if (!f)
      return fail("no graph @" + graph + " in " + model);
    absl::StatusOr<std::vector<pc::reference::Array>> random =
        pc::reference::randomInputs(*module, graph, seed);
    if (!random.ok())
      return fail(random.status().ToString());
    for (auto [i, arg] : llvm::enumerate(f.getArguments())) {
      Argument &a = arguments[i];
      a.type = cast<RankedTensorType>(arg.getType());
      if (StringAttr name = pc::attrs::getArgName(f, i))
        a.name = name.str();
    }
    // The reference's random inputs (ids within the tables they index).
    std::vector<HostTensor> randomInputs;
    for (auto [i, r] : llvm::enumerate(*random)) {
      absl::StatusOr<CommType> type =
          pc::runtime::commTypeOf(arguments[i].type);
      if (!type.ok())
        return fail(type.status().ToString());
      HostTensor t = HostTensor::zeros(r.shape, *type);
      for (int64_t e = 0; e < t.numel(); ++e)
        t.set(e, r.data[e]);
      randomInputs.push_back(std::move(t));
    }
    std::swap(inputs, randomInputs);
  } else {
    for (auto &[index, port] :
         pc::runtime::interfaceOf(*module, graph).inputs) {
      Argument &a = arguments[index];
      a.type = cast<RankedTensorType>(pc::withSbp(port.logical, {}));
      a.name = port.name;
    }
    // Without the logical graph the tables that ids index are unknown:
    // random floats, and ids of 0, which every table has.
    std::mt19937_64 rng(seed);
    for (auto &[i, a] : arguments) {
      absl::StatusOr<CommType> type = pc::runtime::commTypeOf(a.type);
      if (!type.ok())
        return fail(type.status().ToString());
      std::vector<int64_t> shape(a.type.getShape().begin(),
                                 a.type.getShape().end());
      HostTensor t = HostTensor::zeros(shape, *type);
      if (!isInteger(*type))
        for (int64_t e = 0; e < t.numel(); ++e)
          t.set(e, std::uniform_real_distribution<double>(-1, 1)(rng));
      if (i != static_cast<int64_t>(inputs.size()))
        return fail("the per-device programs of @" + graph +
                    " do not number their inputs 0..N-1");
      inputs.push_back(std::move(t));
    }
  }

  // DIR/<name>.npy for an argument with a pc.name, else DIR/argN.npy; the
  // dtype must be the argument's (i32 and i64 convert to each other; bf16
  // arguments read f32 files, as NumPy has no bf16).
  if (!inputsDir.empty() && !llvm::sys::fs::is_directory(inputsDir))
    return fail("--inputs " + inputsDir + " is not a directory");
  for (auto &[i, a] : arguments) {
    if (inputsDir.empty())
      break;
    std::string path = inputsDir + "/arg" + std::to_string(i) + ".npy";
    if (!a.name.empty() &&
        llvm::sys::fs::exists(inputsDir + "/" + a.name + ".npy"))
      path = inputsDir + "/" + a.name + ".npy";
    if (!llvm::sys::fs::exists(path))
      continue;
    absl::StatusOr<HostTensor> t = pc::runtime::readNpy(path);
    if (!t.ok())
      return fail(t.status().ToString());
    if (t->shape != inputs[i].shape)
      return fail(path + ": shape does not match argument #" +
                  std::to_string(i) + " of @" + graph);
    CommType want = inputs[i].type;
    bool ok = t->type == want || (isInteger(t->type) && isInteger(want)) ||
              (want == CommType::BF16 && t->type == CommType::F32);
    if (!ok)
      return fail(path + ": dtype does not match argument #" +
                  std::to_string(i) + " (the file has " +
                  pc::runtime::nameOf(t->type) + ", the argument is " +
                  pc::runtime::nameOf(want) + ")");
    inputs[i] = t->convert(want);
  }
  if (!partitioned) {
    PassManager pm = PassManager::on<ModuleOp>(&context);
    if (failed(parsePassPipeline("pc-distribute", pm)) ||
        failed(pm.run(*module)))
      return 1; // The passes reported why.
  }

  // The world: this process alone, or the processes of an mpirun/srun
  // launch, each hosting --devices ranks.
  pc::runtime::WorldOptions worldOptions;
  worldOptions.devicesPerProcess = numDevices;
  worldOptions.timeoutSeconds = timeout;
  worldOptions.checkDesync = desyncCheck;
  absl::StatusOr<std::unique_ptr<pc::runtime::World>> world =
      pc::runtime::makeWorld(worldOptions);
  if (!world.ok())
    return fail(world.status().ToString());
  // From here on a failure of this process ends the others' waits too.
  auto failAll = [&](const std::string &message) {
    (*world)->abort(absl::InternalError(message));
    return fail(message);
  };
  int64_t processes = (*world)->processCount();
  bool speaker = (*world)->process() == 0; // process 0 prints and writes

  // Enough devices for every mesh?
  int64_t needed = 0;
  for (auto mesh : module->getOps<pc::MeshOp>())
    for (int64_t p = 0; p < mesh.getNumDevices(); ++p)
      needed = std::max(needed, mesh.getRank(p) + 1);
  if (needed > numDevices * processes)
    return failAll(
        "the model's meshes need " + std::to_string(needed) +
        " devices, but --devices gives " + std::to_string(numDevices) +
        (processes > 1
             ? " per process x " + std::to_string(processes) + " processes"
             : std::string()));

  // Share the cores among the devices (of every process on this node)
  // rather than oversubscribe them.
  int cores = std::max(1u, std::thread::hardware_concurrency());
  int64_t local = 1;
  if (const char *n = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    local = std::max(1, std::atoi(n));
  pc::runtime::cpu::setBlasThreads(
      threadsPerDevice > 0
          ? threadsPerDevice
          : std::max<int64_t>(1, cores / (numDevices * local)));

  // Parameters live in the session across steps; the first step also
  // initializes them.
  pc::runtime::CpuSession session(*module, seed, world->get());
  if (!paramsPath.empty()) {
    auto values = pc::runtime::readSafetensors(paramsPath);
    if (!values.ok())
      return failAll(values.status().ToString());
    // Weights alone are enough: optimizer state starts from its initializer.
    if (absl::Status s =
            session.load(std::move(*values), /*requireAll=*/!train);
        !s.ok())
      return failAll(paramsPath + ": " + std::string(s.message()));
  }
  int64_t firstStep = 0;
  if (!loadPath.empty()) {
    absl::StatusOr<pc::runtime::LoadedCheckpoint> ck =
        pc::runtime::readCheckpoint(loadPath);
    if (!ck.ok())
      return failAll(ck.status().ToString());
    if (absl::Status s = session.load(std::move(ck->tensors)); !s.ok())
      return failAll(loadPath + ": " + std::string(s.message()));
    firstStep = ck->step;
  }

  llvm::json::Array stepTimes;
  std::optional<double> steadyStep;
  absl::StatusOr<pc::runtime::CpuRun> run;
  if (train) {
    pc::tools::TrainFlags flags{
        steps,    registers,  lr,       warmupSteps, totalSteps,        minLr,
        schedule, saveFormat, savePath, saveEvery,   !tracePath.empty()};
    std::optional<int> done = pc::tools::trainLoop(
        *module, session, graph, inputs, firstStep, flags, stepTimes, run);
    if (done)
      return *done;
    if (!speaker) {
      absl::Status s = (*world)->agree(absl::OkStatus());
      return s.ok() ? 0 : failAll(s.ToString());
    }
  } else {
    pc::runtime::CpuRunOptions options;
    options.iterations = steps;
    options.registers = registers;
    options.trace = !tracePath.empty();
    if (absl::Status s = pc::tools::injectFault(**world, 0); !s.ok())
      return failAll(s.ToString());
    run = session.run(graph, inputs, options);
    if (!run.ok())
      return failAll(run.status().ToString());
    if (!speaker) {
      absl::Status s = (*world)->agree(absl::OkStatus());
      return s.ok() ? 0 : failAll(s.ToString());
    }
    // Steps overlap; a step's time is from the previous step's end to its
    // own (the first includes binding and parameter initialization).
    double previous = 0;
    for (auto [s, doneUs] : llvm::enumerate(run->iterationDoneUs)) {
      double seconds = (doneUs - previous) * 1e-6;
      previous = doneUs;
      stepTimes.push_back(llvm::json::Object{{"step", s}, {"wall_s", seconds}});
      llvm::outs() << "step " << s << ": " << llvm::format("%.4f", seconds)
                   << " s\n";
    }
    // Overlapped steps finish unevenly; their rate after the first (which
    // also binds and initializes) is the steady-state step time.
    if (steps > 1) {
      const std::vector<double> &done = run->iterationDoneUs;
      steadyStep = (done.back() - done.front()) * 1e-6 / (steps - 1);
      llvm::outs() << "steady state: " << llvm::format("%.4f", *steadyStep)
                   << " s per step\n";
    }
  }

  if (!outputsDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(outputsDir))
      return failAll(outputsDir + ": " + ec.message());
    // Result names, from the per-device programs (which keep pc.name).
    pc::runtime::ProgramInterface io = pc::runtime::interfaceOf(*module, graph);
    for (auto [i, t] : llvm::enumerate(run->results)) {
      auto port = io.outputs.find(i);
      std::string path =
          outputsDir + "/" +
          (port == io.outputs.end()
               ? "out" + std::to_string(i)
               : pc::runtime::ProgramInterface::nameOf(i, port->second,
                                                       /*input=*/false)) +
          ".npy";
      if (absl::Status s = pc::runtime::writeNpy(path, t); !s.ok())
        return failAll(s.ToString());
    }
  }

  llvm::json::Array ranks;
  for (auto &[rank, stats] : run->comm) {
    llvm::json::Object calls;
    for (auto &[kind, n] : stats.calls) {
      auto [sent, received] = stats.bytes[kind];
      calls[kind] = llvm::json::Object{
          {"count", n}, {"bytes_sent", sent}, {"bytes_received", received}};
    }
    ranks.push_back(llvm::json::Object{{"rank", rank},
                                       {"peak_bytes", run->peakBytes[rank]},
                                       {"bytes_sent", stats.bytesSent},
                                       {"bytes_received", stats.bytesReceived},
                                       {"collectives", std::move(calls)}});
    llvm::outs() << "rank " << rank << ": sent " << stats.bytesSent
                 << " B, received " << stats.bytesReceived << " B";
    if (steps > 1)
      llvm::outs() << " in " << steps << " steps";
    llvm::outs() << "\n";
  }
  if (!tracePath.empty()) {
    // A process per device, a thread per stream; every actor firing is a
    // complete event (µs), with its iteration.
    llvm::json::Array events;
    auto meta = [&](const char *what, int64_t pid, int64_t tid,
                    std::string name) {
      events.push_back(llvm::json::Object{
          {"name", what},
          {"ph", "M"},
          {"pid", pid},
          {"tid", tid},
          {"args", llvm::json::Object{{"name", std::move(name)}}}});
    };
    for (auto &[rank, ops] : run->events) {
      meta("process_name", rank, 0, "rank " + std::to_string(rank));
      meta("thread_name", rank, 0, "compute");
      meta("thread_name", rank, 1, "comm");
      for (const pc::runtime::OpEvent &e : ops)
        events.push_back(llvm::json::Object{
            {"name", e.name},
            {"cat", e.stream},
            {"ph", "X"},
            {"pid", rank},
            {"tid", e.stream == "comm" ? 1 : 0},
            {"ts", e.startUs},
            {"dur", e.durationUs},
            {"args", llvm::json::Object{{"step", e.iteration}}}});
    }
    std::error_code ec;
    llvm::raw_fd_ostream out(tracePath, ec);
    if (ec)
      return failAll(tracePath + ": " + ec.message());
    out << llvm::formatv("{0}\n", llvm::json::Value(llvm::json::Object{
                                      {"traceEvents", std::move(events)}}));
  }
  if (!reportPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream out(reportPath, ec);
    if (ec)
      return failAll(reportPath + ": " + ec.message());
    out << llvm::formatv("{0:2}\n", llvm::json::Value(llvm::json::Object{
                                        {"graph", graph},
                                        {"devices", numDevices * processes},
                                        {"processes", processes},
                                        {"steps", std::move(stepTimes)},
                                        {"steady_step_s", steadyStep},
                                        {"ranks", std::move(ranks)}}));
  }
  // Every process ends here, or none does: a process that failed
  // elsewhere makes this fail too.
  if (absl::Status s = (*world)->agree(absl::OkStatus()); !s.ok())
    return failAll(s.ToString());
  return 0;
}

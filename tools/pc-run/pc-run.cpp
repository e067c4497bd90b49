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
// This first runner executes each device's program in order on one thread
// per device; the actor runtime will take its place behind the same flags.
//
//===----------------------------------------------------------------------===//

#include "passes/InitAll.h"
#include "runtime/exec/CpuExecutor.h"
#include "runtime/exec/Npy.h"
#include "runtime/exec/Safetensors.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/reference/Interpreter.h"

#include "dialect/PcOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <map>
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

bool isFloatType(Type t) {
  return isa<FloatType>(cast<RankedTensorType>(t).getElementType());
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::opt<std::string> model(cl::Positional, cl::desc("<model.mlir>"),
                             cl::Required);
  cl::opt<std::string> devices("devices", cl::desc("cpu:N (default cpu:1)"),
                               cl::init("cpu:1"));
  cl::opt<std::string> inputsDir(
      "inputs", cl::desc("Directory of <name>.npy or argN.npy inputs"));
  cl::opt<std::string> outputsDir("dump-outputs",
                                  cl::desc("Directory for outN.npy outputs"));
  cl::opt<uint64_t> seed("seed", cl::desc("Seed of inputs and parameters"),
                         cl::init(0));
  cl::opt<int> steps("steps", cl::desc("Forward passes to run"), cl::init(1));
  cl::opt<std::string> reportPath("report", cl::desc("JSON report file"));
  cl::opt<std::string> graphName("graph", cl::desc("Graph to run"));
  cl::opt<std::string> paramsPath(
      "params", cl::desc("Parameters from a .safetensors file, by name"));
  cl::opt<std::string> tracePath(
      "trace", cl::desc("Chrome/Perfetto trace of the last step (JSON)"));
  cl::opt<int> threadsPerDevice(
      "threads-per-device",
      cl::desc("BLAS threads per device (default: cores / devices)"),
      cl::init(0));
  pc::registerAllPasses();
  cl::ParseCommandLineOptions(argc, argv, "pc-run: run a model\n");

  int64_t numDevices = 0;
  llvm::StringRef spec(devices);
  if (!spec.consume_front("cpu:") || spec.getAsInteger(10, numDevices) ||
      numDevices < 1)
    return fail("--devices must be cpu:N with N >= 1 (the CUDA backend does "
                "not run programs yet), not '" +
                devices + "'");
  if (steps < 1)
    return fail("--steps must be at least 1");

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
    if (auto g = f->getAttrOfType<StringAttr>("pc.graph")) {
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

  // Inputs, from the logical signature.
  std::vector<HostTensor> inputs;
  if (!partitioned) {
    auto f = module->lookupSymbol<func::FuncOp>(graph);
    if (!f)
      return fail("no graph @" + graph + " in " + model);
    if (!inputsDir.empty() && !llvm::sys::fs::is_directory(inputsDir))
      return fail("--inputs " + inputsDir + " is not a directory");
    absl::StatusOr<std::vector<pc::reference::Array>> random =
        pc::reference::randomInputs(*module, graph, seed);
    if (!random.ok())
      return fail(random.status().ToString());
    for (auto [i, arg] : llvm::enumerate(f.getArguments())) {
      auto type = cast<RankedTensorType>(arg.getType());
      std::vector<int64_t> shape(type.getShape().begin(),
                                 type.getShape().end());
      CommType want = isFloatType(type) ? CommType::F32 : CommType::I64;
      // DIR/<name>.npy for an argument with a pc.name, else DIR/argN.npy.
      std::string path = inputsDir + "/arg" + std::to_string(i) + ".npy";
      if (auto name = f.getArgAttrOfType<StringAttr>(i, "pc.name")) {
        std::string named = inputsDir + "/" + name.str() + ".npy";
        if (llvm::sys::fs::exists(named))
          path = named;
      }
      if (!inputsDir.empty() && llvm::sys::fs::exists(path)) {
        absl::StatusOr<HostTensor> t = pc::runtime::readNpy(path);
        if (!t.ok())
          return fail(t.status().ToString());
        if (t->shape != shape)
          return fail(path + ": shape does not match argument #" +
                      std::to_string(i) + " of @" + graph);
        bool ok = want == CommType::F32
                      ? t->type == CommType::F32
                      : (t->type == CommType::I64 || t->type == CommType::I32);
        if (!ok)
          return fail(
              path + ": dtype does not match argument #" + std::to_string(i) +
              " (" + (want == CommType::F32 ? "f32" : "an integer type") + ")");
        if (t->type == CommType::I32) {
          HostTensor wide = HostTensor::zeros(shape, CommType::I64);
          for (int64_t e = 0; e < wide.numel(); ++e)
            wide.as<int64_t>()[e] = t->as<int32_t>()[e];
          *t = std::move(wide);
        }
        inputs.push_back(std::move(*t));
        continue;
      }
      HostTensor t = HostTensor::zeros(shape, want);
      for (int64_t e = 0; e < t.numel(); ++e) {
        double v = (*random)[i].data[e];
        if (want == CommType::F32)
          t.as<float>()[e] = static_cast<float>(v);
        else
          t.as<int64_t>()[e] = static_cast<int64_t>(v);
      }
      inputs.push_back(std::move(t));
    }
    PassManager pm = PassManager::on<ModuleOp>(&context);
    if (failed(parsePassPipeline("pc-distribute", pm)) ||
        failed(pm.run(*module)))
      return 1; // The passes reported why.
  } else if (!inputsDir.empty()) {
    return fail("per-device programs take their inputs from a logical graph; "
                "give pc-run the logical model");
  }

  // Enough devices for every mesh?
  int64_t needed = 0;
  for (auto mesh : module->getOps<pc::MeshOp>())
    for (int64_t p = 0; p < mesh.getNumDevices(); ++p)
      needed = std::max(needed, mesh.getRank(p) + 1);
  if (needed > numDevices)
    return fail("the model's meshes need " + std::to_string(needed) +
                " devices, but --devices gives " + std::to_string(numDevices));

  // Share the cores among the devices rather than oversubscribe them.
  int cores = std::max(1u, std::thread::hardware_concurrency());
  pc::runtime::cpu::setBlasThreads(
      threadsPerDevice > 0 ? threadsPerDevice
                           : std::max<int64_t>(1, cores / numDevices));

  // Parameters live in the session across steps; the first step also
  // initializes them.
  pc::runtime::CpuSession session(*module, seed);
  if (!paramsPath.empty()) {
    auto values = pc::runtime::readSafetensors(paramsPath);
    if (!values.ok())
      return fail(values.status().ToString());
    if (absl::Status s = session.load(std::move(*values)); !s.ok())
      return fail(paramsPath + ": " + std::string(s.message()));
  }
  llvm::json::Array stepTimes;
  absl::StatusOr<pc::runtime::CpuRun> run;
  for (int s = 0; s < steps; ++s) {
    auto start = std::chrono::steady_clock::now();
    run = session.run(graph, inputs);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!run.ok())
      return fail(run.status().ToString());
    stepTimes.push_back(llvm::json::Object{{"step", s}, {"wall_s", seconds}});
    llvm::outs() << "step " << s << ": " << llvm::format("%.4f", seconds)
                 << " s\n";
  }

  if (!outputsDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(outputsDir))
      return fail(outputsDir + ": " + ec.message());
    // Result names, from the per-device programs (which keep pc.name).
    std::map<int64_t, std::string> names;
    for (auto f : module->getOps<func::FuncOp>()) {
      auto of = f->getAttrOfType<StringAttr>("pc.graph");
      if (!of || of.getValue() != graph)
        continue;
      for (unsigned r = 0; r < f.getNumResults(); ++r) {
        auto index = f.getResultAttrOfType<IntegerAttr>(r, "pc.index");
        auto name = f.getResultAttrOfType<StringAttr>(r, "pc.name");
        if (index && name)
          names[index.getInt()] = name.str();
      }
    }
    for (auto [i, t] : llvm::enumerate(run->results)) {
      std::string path = outputsDir + "/out" + std::to_string(i) + ".npy";
      if (auto it = names.find(i); it != names.end())
        path = outputsDir + "/" + it->second + ".npy";
      if (absl::Status s = pc::runtime::writeNpy(path, t); !s.ok())
        return fail(s.ToString());
    }
  }

  llvm::json::Array ranks;
  for (auto &[rank, stats] : run->comm) {
    llvm::json::Object calls;
    for (auto &[kind, n] : stats.calls)
      calls[kind] = n;
    ranks.push_back(llvm::json::Object{{"rank", rank},
                                       {"peak_bytes", run->peakBytes[rank]},
                                       {"bytes_sent", stats.bytesSent},
                                       {"bytes_received", stats.bytesReceived},
                                       {"collectives", std::move(calls)}});
    llvm::outs() << "rank " << rank << ": sent " << stats.bytesSent
                 << " B, received " << stats.bytesReceived << " B\n";
  }
  if (!tracePath.empty()) {
    // One track per device: every op as a complete event, in microseconds.
    llvm::json::Array events;
    for (auto &[rank, ops] : run->events) {
      events.push_back(llvm::json::Object{
          {"name", "process_name"},
          {"ph", "M"},
          {"pid", rank},
          {"args",
           llvm::json::Object{{"name", "rank " + std::to_string(rank)}}}});
      for (const pc::runtime::OpEvent &e : ops)
        events.push_back(llvm::json::Object{{"name", e.name},
                                            {"ph", "X"},
                                            {"pid", rank},
                                            {"tid", 0},
                                            {"ts", e.startUs},
                                            {"dur", e.durationUs}});
    }
    std::error_code ec;
    llvm::raw_fd_ostream out(tracePath, ec);
    if (ec)
      return fail(tracePath + ": " + ec.message());
    out << llvm::formatv("{0}\n", llvm::json::Value(llvm::json::Object{
                                      {"traceEvents", std::move(events)}}));
  }
  if (!reportPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream out(reportPath, ec);
    if (ec)
      return fail(reportPath + ": " + ec.message());
    out << llvm::formatv("{0:2}\n", llvm::json::Value(llvm::json::Object{
                                        {"graph", graph},
                                        {"devices", numDevices},
                                        {"steps", std::move(stepTimes)},
                                        {"ranks", std::move(ranks)}}));
  }
  return 0;
}

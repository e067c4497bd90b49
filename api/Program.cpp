//===- Program.cpp - Compiling graphs and running them --------------------===//

#include "api/Program.h"

#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "passes/InitAll.h"
#include "runtime/exec/Checkpoint.h"
#include "runtime/exec/CpuExecutor.h"
#include "runtime/exec/ProgramInterface.h"
#include "runtime/exec/Schedule.h"
#include "runtime/kernels/CpuKernels.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <mutex>
#include <thread>

using namespace mlir;

namespace pc::api {

struct Program::Impl {
  std::shared_ptr<MLIRContext> ctx;
  OwningOpRef<ModuleOp> module;
};

std::string Program::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (impl)
    impl->module->print(os);
  return text;
}

std::string Program::plan() const {
  if (!impl)
    return "";
  std::string out;
  llvm::raw_string_ostream os(out);
  ModuleOp m = *impl->module;
  for (auto mesh : m.getOps<MeshOp>()) {
    os << "mesh @" << mesh.getSymName() << " [";
    for (auto [i, axis] : llvm::enumerate(mesh.getAxisNames()))
      os << (i ? ", " : "") << cast<StringAttr>(axis).getValue() << "="
         << mesh.getShape()[i];
    os << "], " << mesh.getNumDevices() << " devices\n";
  }
  for (auto f : m.getOps<func::FuncOp>()) {
    ArrayRef<int64_t> ranks = attrs::getRanks(f);
    if (ranks.empty())
      continue;
    std::map<std::string, int64_t> kinds;
    int64_t ops = 0;
    f.walk([&](Operation *op) {
      ++ops;
      if (!isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
               BroadcastOp, SendOp, RecvOp>(op))
        return;
      // A step over mesh axes of size 1 has one member and moves nothing
      // (the runtime passes its input on): not a collective.
      auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
      auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
      if (mesh && axes) {
        int64_t members = 1;
        for (int64_t a : axes.asArrayRef())
          members *= m.lookupSymbol<MeshOp>(mesh.getAttr()).getShape()[a];
        if (members == 1)
          return;
      }
      ++kinds[op->getName().stripDialect().str()];
    });
    os << "@" << f.getSymName() << " on ranks " << absl::StrJoin(ranks, ",")
       << ": " << ops << " ops";
    for (auto &[kind, n] : kinds)
      os << ", " << n << " " << kind;
    os << "\n";
  }
  return out;
}

namespace {
std::once_flag passesRegistered;

/// Runs `pipeline` on `module`, the diagnostics in the error.
absl::Status runPipeline(ModuleOp module, const std::string &pipeline) {
  std::string diags;
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &d) {
    if (!diags.empty())
      diags += "\n";
    llvm::raw_string_ostream os(diags);
    os << d.getLocation() << ": " << d.str();
    return success();
  });
  PassManager pm = PassManager::on<ModuleOp>(module.getContext());
  if (failed(parsePassPipeline(pipeline, pm)))
    return absl::InternalError("bad pipeline " + pipeline);
  if (failed(pm.run(module)))
    return absl::InvalidArgumentError(
        absl::StrCat("compiling: ", diags.empty() ? "failed" : diags));
  return absl::OkStatus();
}
} // namespace

absl::StatusOr<Program> compile(Graph &graph, const CompileOptions &options) {
  std::call_once(passesRegistered, [] { pc::registerAllPasses(); });
  if (!graph.status().ok())
    return absl::FailedPreconditionError(absl::StrCat(
        "compile: the graph has an error: ", graph.status().message()));
  if (options.stages != 1 || options.microbatches != 1)
    return absl::UnimplementedError(absl::StrCat(
        "compile: pipelines are not built yet (stages = ", options.stages,
        ", microbatches = ", options.microbatches, "); use 1 and 1"));
  ModuleOp source = graph.module();
  Program program;
  program.impl = std::make_shared<Program::Impl>();
  program.impl->ctx = graph.context();
  program.impl->module = OwningOpRef<ModuleOp>(source.clone());
  ModuleOp m = *program.impl->module;
  for (auto &[name, shape] : options.meshShapes) {
    auto mesh = m.lookupSymbol<MeshOp>(name);
    if (!mesh)
      return absl::InvalidArgumentError(
          absl::StrCat("compile: the graph has no mesh '", name, "'"));
    if (shape.size() != mesh.getShape().size())
      return absl::InvalidArgumentError(absl::StrCat(
          "compile: mesh '", name, "' has ", mesh.getShape().size(),
          " axes; the new shape has ", shape.size()));
    mesh.setShape(shape);
  }
  const OptimizerOptions &o = options.optimizer;
  std::string pipeline = "pc-distribute";
  if (options.train) {
    auto exact = [](double v) { return llvm::formatv("{0:e16}", v).str(); };
    pipeline = llvm::formatv(
        "pc-autodiff{{graph={0}},pc-optimizer{{kind={1} momentum={2} "
        "weight-decay={3} beta1={4} beta2={5} eps={6} clip-norm={7}},"
        "pc-distribute",
        graph.name(), o.kind, exact(o.momentum), exact(o.weightDecay),
        exact(o.beta1), exact(o.beta2), exact(o.eps), exact(o.clipNorm));
  }
  if (absl::Status s = runPipeline(m, pipeline); !s.ok())
    return s;
  program.graphName = graph.name();
  program.isTraining = options.train;
  program.opt = o;
  for (auto mesh : m.getOps<MeshOp>())
    for (int64_t p = 0; p < mesh.getNumDevices(); ++p)
      program.devices = std::max(program.devices, mesh.getRank(p) + 1);
  return program;
}

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

Session::~Session() = default;

absl::StatusOr<std::unique_ptr<Session>>
Session::create(const Program &program, const SessionOptions &options) {
  if (!program.impl)
    return absl::InvalidArgumentError("Session::create: an empty program");
  int64_t devices = options.devices ? options.devices : program.numDevices();
  if (devices < program.numDevices())
    return absl::InvalidArgumentError(absl::StrCat(
        "Session::create: the program's meshes need ", program.numDevices(),
        " devices, but the session has ", devices));
  std::unique_ptr<Session> s(new Session());
  s->program = program;
  ModuleOp m = *program.impl->module;
  absl::StatusOr<std::unique_ptr<runtime::World>> world =
      runtime::makeWorld(options.world);
  if (!world.ok())
    return world.status();
  s->world = std::move(*world);
  if (s->world->processCount() > 1 &&
      options.world.devicesPerProcess * s->world->processCount() <
          program.numDevices())
    return absl::InvalidArgumentError(absl::StrCat(
        "Session::create: the program's meshes need ", program.numDevices(),
        " devices, but the MPI world has ", s->world->size()));
  s->cpu =
      std::make_unique<runtime::CpuSession>(m, options.seed, s->world.get());
  int cores = std::max(1u, std::thread::hardware_concurrency());
  runtime::cpu::setBlasThreads(options.threadsPerDevice > 0
                                   ? options.threadsPerDevice
                                   : std::max<int64_t>(1, cores / devices));
  // Names and indices of inputs and outputs, from the per-device programs.
  runtime::ProgramInterface io = runtime::interfaceOf(m, program.graph());
  int64_t numInputs = 0;
  for (auto &[index, port] : io.inputs) {
    s->inputIndex[runtime::ProgramInterface::nameOf(index, port, true)] = index;
    absl::StatusOr<runtime::CommType> type = runtime::commTypeOf(port.logical);
    if (!type.ok())
      return type.status();
    s->inputShapes[index] =
        runtime::HostTensor::zeros(runtime::shapeOf(port.logical), *type);
    numInputs = std::max(numInputs, index + 1);
  }
  for (auto &[index, port] : io.outputs)
    s->outputIndex[runtime::ProgramInterface::nameOf(index, port, false)] =
        index;
  s->lrIndex = io.lr;
  s->lossIndex = io.loss;
  s->inputs.resize(numInputs);
  for (auto &[index, zeros] : s->inputShapes)
    s->inputs[index] = zeros;
  return s;
}

absl::Status Session::usable(const char *call) const {
  if (closed)
    return absl::FailedPreconditionError(
        absl::StrCat("Session::", call, ": the session is closed"));
  return absl::OkStatus();
}

absl::Status Session::feed(const std::string &name, runtime::HostTensor value) {
  if (absl::Status s = usable("feed"); !s.ok())
    return s;
  auto it = inputIndex.find(name);
  if (it == inputIndex.end() || name == "lr")
    return absl::NotFoundError(
        absl::StrCat("Session::feed: the program has no input '", name, "'"));
  const runtime::HostTensor &want = inputShapes.at(it->second);
  if (value.shape != want.shape || value.type != want.type)
    return absl::InvalidArgumentError(absl::StrCat(
        "Session::feed: input '", name, "' is ", runtime::nameOf(want.type),
        " of shape [", absl::StrJoin(want.shape, ", "), "], not ",
        runtime::nameOf(value.type), " of shape [",
        absl::StrJoin(value.shape, ", "), "]"));
  inputs[it->second] = std::move(value);
  fed.insert(it->second);
  return absl::OkStatus();
}

absl::Status Session::runOnce(const char *call) {
  // Every input must have been fed: a zero tensor nobody asked for would
  // be a wrong result, not an error.
  for (auto &[name, index] : inputIndex)
    if (index != lrIndex && !fed.count(index))
      return absl::FailedPreconditionError(
          absl::StrCat("Session::", call, ": input '", name, "' was not fed"));
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<runtime::CpuRun> run = cpu->run(program.graph(), inputs, [] {
    runtime::CpuRunOptions o;
    o.resultsOnEveryProcess = true; // fetch() works on every process
    return o;
  }());
  if (!run.ok())
    return run.status();
  last.wallSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  last.peakBytes = run->peakBytes;
  last.bytesSent.clear();
  last.bytesReceived.clear();
  last.collectives.clear();
  for (auto &[rank, stats] : run->comm) {
    last.bytesSent[rank] = stats.bytesSent;
    last.bytesReceived[rank] = stats.bytesReceived;
    for (auto &[kind, n] : stats.calls)
      last.collectives[kind] += n;
  }
  outputs = std::move(run->results);
  return absl::OkStatus();
}

absl::Status Session::run() {
  if (absl::Status s = usable("run"); !s.ok())
    return s;
  if (program.training())
    return absl::FailedPreconditionError(
        "Session::run: the program is a training step; call trainStep()");
  return runOnce("run");
}

absl::StatusOr<double> Session::trainStep() {
  if (absl::Status s = usable("trainStep"); !s.ok())
    return s;
  if (!program.training() || !lrIndex || !lossIndex)
    return absl::FailedPreconditionError(
        "Session::trainStep: the program was not compiled for training "
        "(CompileOptions::train)");
  const OptimizerOptions &o = program.optimizer();
  absl::StatusOr<runtime::LrSchedule::Kind> kind =
      runtime::LrSchedule::parse(o.schedule);
  if (!kind.ok())
    return kind.status();
  runtime::LrSchedule rates{*kind, o.lr, o.warmupSteps,
                            o.totalSteps ? o.totalSteps : step + 1, o.minLr};
  runtime::HostTensor lr =
      runtime::HostTensor::zeros({}, runtime::CommType::F32);
  lr.as<float>()[0] = static_cast<float>(rates.at(step));
  inputs[*lrIndex] = lr;
  if (absl::Status s = runOnce("trainStep"); !s.ok())
    return s;
  double loss = outputs[*lossIndex].get(0);
  ++step;
  last.step = step;
  last.losses.push_back(loss);
  return loss;
}

absl::StatusOr<runtime::HostTensor>
Session::fetch(const std::string &name) const {
  if (absl::Status s = usable("fetch"); !s.ok())
    return s;
  auto it = outputIndex.find(name);
  if (it == outputIndex.end())
    return absl::NotFoundError(
        absl::StrCat("Session::fetch: the program has no output '", name, "'"));
  if (it->second >= static_cast<int64_t>(outputs.size()))
    return absl::FailedPreconditionError(absl::StrCat(
        "Session::fetch: '", name, "' has no value yet; run first"));
  return outputs[it->second];
}

absl::Status Session::save(const std::string &path, bool sharded) {
  if (absl::Status s = usable("save"); !s.ok())
    return s;
  return runtime::saveCheckpoint(*cpu, path,
                                 sharded ? runtime::CheckpointFormat::Sharded
                                         : runtime::CheckpointFormat::Logical,
                                 step);
}

absl::Status Session::load(const std::string &path) {
  if (absl::Status s = usable("load"); !s.ok())
    return s;
  absl::StatusOr<runtime::LoadedCheckpoint> ck = runtime::readCheckpoint(path);
  if (!ck.ok())
    return ck.status();
  if (absl::Status s = cpu->load(std::move(ck->tensors)); !s.ok())
    return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  step = ck->step;
  return absl::OkStatus();
}

void Session::close() {
  closed = true;
  cpu.reset();
  outputs.clear();
}

} // namespace pc::api

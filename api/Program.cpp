//===- Program.cpp - Compiling graphs into programs -----------------------===//

#include "api/Program.h"

#include "dialect/OpProfile.h"
#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "passes/InitAll.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "passes/partition/MemoryPlan.h"
#include "passes/planning/ProgramSimulator.h"
#include "runtime/device/HostMemory.h"
#include "runtime/exec/KernelRegistry.h"
#include "runtime/exec/OpProfiler.h"
#include "runtime/exec/ProgramInterface.h"
#include "runtime/exec/Schedule.h"
#include "runtime/reference/Interpreter.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/SourceMgr.h"

#include <mutex>
#include <random>

using namespace mlir;

namespace pc::api {

struct Program::Impl {
  std::shared_ptr<MLIRContext> ctx;
  /// The per-device programs.
  OwningOpRef<ModuleOp> module;
  /// The logical graph (the training step, when training) before
  /// distribution; null when the source was per-device programs.
  OwningOpRef<ModuleOp> logical;
};

ModuleOp Program::programs() const { return *impl->module; }

std::string Program::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (impl)
    impl->module->print(os);
  return text;
}

namespace {
/// The schedule of `graph`'s pipeline, gathered from its per-device
/// programs, and its prediction; nothing when it is not pipelined.
struct PipelinePlan {
  pipeline::Schedule schedule;
  pipeline::Prediction prediction;
};

std::optional<PipelinePlan> pipelinePlan(ModuleOp m, StringRef graph) {
  std::map<int64_t, SmallVector<ActionAttr>> byDevice;
  PipelineAttr spec;
  for (auto f : m.getOps<func::FuncOp>()) {
    if (StringAttr g = attrs::getGraph(f); !g || g.getValue() != graph)
      continue;
    std::optional<SmallVector<ActionAttr>> order = attrs::getSchedule(f);
    PipelineAttr p = attrs::getPipeline(f);
    if (!order || !p || order->empty())
      continue;
    spec = p;
    byDevice[order->front().getStage() % p.getStages()] = *order;
  }
  if (!spec)
    return std::nullopt;
  PipelinePlan plan;
  plan.schedule.spec = spec.getSpec();
  for (int64_t d = 0; d < spec.getStages(); ++d) {
    plan.schedule.perDevice.emplace_back();
    for (ActionAttr a : byDevice[d])
      plan.schedule.perDevice.back().push_back(a.asAction());
  }
  if (!pipeline::checkSchedule(plan.schedule,
                               pipeline::chainDependencies(plan.schedule.spec),
                               {}, plan.prediction)
           .empty())
    return std::nullopt;
  return plan;
}

} // namespace

std::vector<Parameter> Program::parameters() const {
  std::vector<Parameter> out;
  if (!impl)
    return out;
  for (auto p : programs().getOps<ParamOp>()) {
    Parameter param;
    param.name = p.getSymName().str();
    auto type = cast<RankedTensorType>(p.getType());
    param.shape.assign(type.getShape().begin(), type.getShape().end());
    if (absl::StatusOr<runtime::CommType> t = runtime::commTypeOf(type); t.ok())
      param.type = *t;
    if (SbpAttr sbp = getSbp(type)) {
      llvm::raw_string_ostream os(param.layout);
      os << sbp;
    }
    param.trainable = p.getTrainable();
    param.optimizerState = attrs::isOptimizerState(p);
    out.push_back(std::move(param));
  }
  return out;
}

bool Program::fedByTraining(int64_t index) const {
  if (!isTraining)
    return false;
  if (index == lrIndex)
    return true;
  return llvm::any_of(inputPorts, [&](const Port &p) {
    return p.index == index && p.name == attrs::kInjectOverflowInput;
  });
}

std::map<int64_t, MemoryUse> Program::predictedMemory() const {
  std::map<int64_t, MemoryUse> out;
  if (!impl)
    return out;
  for (auto f : programs().getOps<func::FuncOp>()) {
    StringAttr g = attrs::getGraph(f);
    std::optional<attrs::MemoryUse> use = attrs::getMemoryUse(f);
    if (!g || g.getValue() != graphName || !use)
      continue;
    for (int64_t rank : attrs::getRanks(f))
      out[rank] = {use->peak,
                   use->parameters,
                   use->gradients,
                   use->optimizerState,
                   use->activations,
                   use->workspace,
                   use->activationsPeak,
                   use->hostPeak};
  }
  return out;
}

absl::StatusOr<std::string>
Program::simulate(double *step, const std::string &opProfile,
                  bool emulatedCompute, double *idle, double *work) const {
  if (step)
    *step = 0;
  if (idle)
    *idle = 0;
  if (work)
    *work = 0;
  if (!impl)
    return absl::FailedPreconditionError("no program");
  std::optional<OpProfile> profile;
  if (!opProfile.empty()) {
    llvm::Expected<OpProfile> p = parseOpProfile(opProfile, "op profile");
    if (!p)
      return absl::InvalidArgumentError(llvm::toString(p.takeError()));
    profile = *std::move(p);
  }
  attrs::CostModel rates = costModelOf(*impl->module);
  if (emulatedCompute) {
    rates.concurrentDevices = 0; // a core per device: waits hold none
    rates.kernelInStep = 0;      // a wait of exactly the profiled time
  }
  Simulation s = simulatePrograms(*impl->module, graphName,
                                  profile ? &*profile : nullptr, &rates);
  if (!s.error.empty())
    return absl::FailedPreconditionError("pc-simulate: " + s.error);
  if (step)
    *step = s.step;
  if (idle)
    *idle = s.idle;
  if (work)
    *work = s.work.total;
  return formatSimulation(s);
}

absl::StatusOr<std::string> Program::profileOps(int threads) const {
  if (!impl)
    return absl::FailedPreconditionError("no program");
  runtime::OpProfilerOptions options;
  options.threads = threads;
  options.graph = graphName;
  absl::StatusOr<OpProfile> p = runtime::profileOps(*impl->module, options);
  if (!p.ok())
    return p.status();
  return formatOpProfile(*p);
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
    StringAttr g = attrs::getGraph(f);
    // The step's programs; the forward passes for evaluation and
    // generation run on the same ranks, and are named below.
    if (ranks.empty() || (g && g.getValue() != graphName))
      continue;
    std::map<std::string, int64_t> kinds;
    int64_t ops = 0;
    f.walk([&](Operation *op) {
      ++ops;
      if (!isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
               BroadcastOp, SendOp, RecvOp, RedistributeOp>(op))
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
    if (std::optional<attrs::MemoryUse> use = attrs::getMemoryUse(f))
      os << "  memory: " << describeMemory(*use) << "\n";
    if (std::optional<SmallVector<ActionAttr>> order = attrs::getSchedule(f)) {
      os << "  schedule:";
      for (ActionAttr a : *order)
        os << " " << pipeline::shortName(a.asAction());
      os << "\n";
    }
  }
  std::optional<PipelinePlan> pipe = pipelinePlan(m, graphName);
  if (pipe) {
    const pipeline::ScheduleSpec &spec = pipe->schedule.spec;
    os << "pipeline: " << pipeline::scheduleName(spec.kind)
       << (spec.backward ? "" : " (forward only)") << ", " << spec.devices
       << " stages";
    if (spec.virtualStages > 1)
      os << " x " << spec.virtualStages << " virtual";
    os << ", " << spec.microBatches << " micro-batches; predicted bubble "
       << llvm::format("%.1f%%", 100 * pipe->prediction.bubble)
       << ", micro-batches in flight per stage ["
       << absl::StrJoin(pipe->prediction.peakInFlight, ", ") << "]\n";
  }
  if (!evalGraph.empty() || !logitsGraph.empty()) {
    os << "also on these ranks:";
    if (!evalGraph.empty())
      os << " @" << evalGraph << " (the forward pass, for the validation loss)";
    if (!logitsGraph.empty())
      os << (evalGraph.empty() ? " @" : ", @") << logitsGraph
         << " (the forward pass to the logits, for generation)";
    os << "\n";
  }
  return out;
}

std::optional<double> Program::predictedBubble(
    const std::function<double(const std::string &)> &cost) const {
  if (!impl)
    return std::nullopt;
  std::optional<PipelinePlan> pipe = pipelinePlan(*impl->module, graphName);
  if (!pipe)
    return std::nullopt;
  if (!cost)
    return pipe->prediction.bubble;
  pipeline::ActionCosts costs;
  costs.of = [&](const pipeline::Action &a) {
    return cost(pipeline::shortName(a));
  };
  pipeline::Prediction replay;
  if (!pipeline::checkSchedule(pipe->schedule,
                               pipeline::chainDependencies(pipe->schedule.spec),
                               costs, replay)
           .empty())
    return std::nullopt;
  return replay.bubble;
}

absl::StatusOr<std::optional<double>>
Program::profiledBubble(const std::string &opProfile) const {
  if (!impl)
    return std::nullopt;
  llvm::Expected<OpProfile> profile = parseOpProfile(opProfile, "op profile");
  if (!profile)
    return absl::InvalidArgumentError(llvm::toString(profile.takeError()));
  // Per action: the most any one program spends in its compute ops.
  std::map<std::string, double> seconds;
  for (auto f : impl->module->getOps<func::FuncOp>()) {
    if (StringAttr g = attrs::getGraph(f); !g || g.getValue() != graphName)
      continue;
    std::map<std::string, double> mine;
    f.walk([&](Operation *op) {
      ActionAttr a = attrs::getAction(op);
      double t = a ? profile->lookup(op) : -1;
      if (t > 0)
        mine[pipeline::shortName(a.asAction())] += t;
    });
    for (auto &[action, t] : mine)
      seconds[action] = std::max(seconds[action], t);
  }
  return predictedBubble([&](const std::string &action) {
    auto it = seconds.find(action);
    return it == seconds.end() ? 0.0 : it->second;
  });
}

std::string Program::scheduleSvg() const {
  if (!impl)
    return "";
  std::optional<PipelinePlan> pipe = pipelinePlan(*impl->module, graphName);
  if (!pipe)
    return "";
  const pipeline::ScheduleSpec &spec = pipe->schedule.spec;
  std::string title = absl::StrCat(
      "@", graphName, ": ", std::string(pipeline::scheduleName(spec.kind)),
      ", p = ", spec.devices, ", m = ", spec.microBatches,
      spec.virtualStages > 1 ? absl::StrCat(", v = ", spec.virtualStages) : "",
      " (predicted, bubble ",
      absl::StrFormat("%.1f%%", 100 * pipe->prediction.bubble), ")");
  return pipeline::renderSvg(pipe->prediction.timeline, title,
                             spec.virtualStages);
}

namespace {
std::once_flag passesRegistered;

/// Collects the diagnostics of a scope, for an error's message.
class Diagnostics {
public:
  explicit Diagnostics(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &d) {
          append(d);
          for (Diagnostic &note : d.getNotes())
            append(note);
          return success();
        }) {}
  std::string take(const char *otherwise) {
    return text.empty() ? otherwise : std::move(text);
  }

private:
  /// As compilers print them: FILE:LINE:COL: error: MESSAGE.
  void append(Diagnostic &d) {
    if (!text.empty())
      text += "\n";
    llvm::raw_string_ostream os(text);
    if (auto file = dyn_cast<FileLineColLoc>(d.getLocation()))
      os << file.getFilename().getValue() << ":" << file.getLine() << ":"
         << file.getColumn() << ": ";
    else if (!isa<UnknownLoc>(d.getLocation()))
      os << d.getLocation() << ": ";
    switch (d.getSeverity()) {
    case DiagnosticSeverity::Error:
      os << "error: ";
      break;
    case DiagnosticSeverity::Warning:
      os << "warning: ";
      break;
    case DiagnosticSeverity::Note:
      os << "note: ";
      break;
    case DiagnosticSeverity::Remark:
      os << "remark: ";
      break;
    }
    os << d.str();
  }

  std::string text;
  ScopedDiagnosticHandler handler;
};

/// A copy of `graph` in `m` named `graph`.`suffix`, to compile beside it
/// (sharing its parameters); null when the name is taken. A pipelined
/// graph is split before it is copied (splitStages), so the copy keeps its
/// stages, their meshes and its micro-batches: it runs on the same devices
/// and reads the same pieces of the parameters.
func::FuncOp cloneGraph(ModuleOp m, const std::string &graph,
                        llvm::StringRef suffix) {
  auto f = m.lookupSymbol<func::FuncOp>(graph);
  std::string name = (graph + "." + suffix).str();
  if (!f || m.lookupSymbol(name))
    return {};
  OpBuilder b(f);
  auto copy = cast<func::FuncOp>(b.clone(*f));
  copy.setSymName(name);
  return copy;
}

/// Adds `graph`'s forward pass as `graph`.eval, for a training step to
/// evaluate its loss with (Session::evaluate): the same parameters, no
/// gradients, no update. Returns its name, or "" (cloneGraph).
std::string addEvalGraph(ModuleOp m, const std::string &graph) {
  func::FuncOp eval = cloneGraph(m, graph, "eval");
  return eval ? eval.getSymName().str() : "";
}

/// Adds `graph`'s forward pass up to its logits as `graph`.logits, for
/// Session::generate: the graph's one cross-entropy's logits become its
/// result, and what only the loss needed goes. Returns its name, or ""
/// when the graph has no single cross-entropy (or cloneGraph refuses).
std::string addLogitsGraph(ModuleOp m, const std::string &graph,
                           std::vector<int64_t> &kept) {
  auto f = m.lookupSymbol<func::FuncOp>(graph);
  int losses = 0;
  if (f)
    f.walk([&](CrossEntropyOp) { ++losses; });
  if (losses != 1)
    return "";
  func::FuncOp logits = cloneGraph(m, graph, "logits");
  if (!logits)
    return "";
  CrossEntropyOp ce;
  logits.walk([&](CrossEntropyOp op) { ce = op; });
  Operation *ret = logits.getBody().front().getTerminator();
  ret->setOperands(ce.getLogits());
  // The results' attributes were the loss's.
  logits.setType(FunctionType::get(m.getContext(),
                                   logits.getFunctionType().getInputs(),
                                   {ce.getLogits().getType()}));
  logits.removeResAttrsAttr();
  // What fed only the loss, from the end back.
  Block &body = logits.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (&op != ret && op.use_empty() && isMemoryEffectFree(&op))
      op.erase();
  // Inputs only the loss read (the labels) go too: nothing would decide
  // their layout on a module of several meshes (pipeline stages).
  // `kept` maps its inputs to the graph's.
  llvm::BitVector unused(logits.getNumArguments());
  kept.clear();
  for (BlockArgument arg : logits.getArguments()) {
    if (arg.use_empty())
      unused.set(arg.getArgNumber());
    else
      kept.push_back(arg.getArgNumber());
  }
  if (failed(logits.eraseArguments(unused)))
    return "";
  // A pipeline stage that only computed the loss would have no work left:
  // such a graph cannot generate (its devices would run nothing).
  if (PipelineAttr pipe = attrs::getPipeline(logits)) {
    llvm::SmallDenseSet<int64_t> used;
    for (Operation &op : body)
      if (isa<SbpOpInterface>(op))
        used.insert(attrs::getStage(&op).value_or(0));
    if (int64_t(used.size()) < pipe.getStages() * pipe.getVirtualStages()) {
      logits.erase();
      return "";
    }
  }
  return logits.getSymName().str();
}

/// Runs the passes `add` puts in a pass manager on `module`, the
/// diagnostics in the error.
absl::Status runPasses(ModuleOp module,
                       llvm::function_ref<void(PassManager &)> add) {
  Diagnostics diags(module.getContext());
  PassManager pm = PassManager::on<ModuleOp>(module.getContext());
  add(pm);
  if (failed(pm.run(module)))
    return absl::InvalidArgumentError(
        absl::StrCat("compiling: ", diags.take("failed")));
  return absl::OkStatus();
}

/// Runs the compile pipeline on `module`.
absl::Status runPipeline(ModuleOp module,
                         const CompilePipelineOptions &options) {
  return runPasses(module,
                   [&](PassManager &pm) { buildCompilePipeline(pm, options); });
}

/// --pc-pipeline-split alone: the graph's stages, their meshes and its
/// micro-batch count, before anything copies the graph.
absl::Status splitStages(ModuleOp module, const PipelineSplitOptions &options) {
  return runPasses(module, [&](PassManager &pm) {
    pm.addPass(createPipelineSplit(options));
  });
}

absl::Status setMeshShapes(ModuleOp m, const CompileOptions &options) {
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
  return absl::OkStatus();
}

/// The ports of `ports` (by logical index), numbered 0..N-1.
absl::StatusOr<std::vector<Port>>
portsOf(const std::map<int64_t, runtime::Port> &ports, bool input,
        const std::string &graph) {
  std::vector<Port> out;
  for (auto &[index, port] : ports) {
    if (index != static_cast<int64_t>(out.size()))
      return absl::InvalidArgumentError(absl::StrCat(
          "the per-device programs of @", graph, " do not number their ",
          input ? "inputs" : "outputs", " 0..N-1"));
    absl::StatusOr<runtime::CommType> type = runtime::commTypeOf(port.logical);
    if (!type.ok())
      return type.status();
    out.push_back({runtime::ProgramInterface::nameOf(index, port, input), index,
                   runtime::shapeOf(port.logical), *type});
  }
  return out;
}
} // namespace

absl::StatusOr<Program> Program::build(std::shared_ptr<Impl> impl,
                                       const std::string &graphName,
                                       const CompileOptions &options) {
  std::call_once(passesRegistered, [] { pc::registerAllPasses(); });
  const OptimizerOptions &o = options.optimizer;
  if (options.train)
    if (absl::StatusOr<runtime::LrSchedule::Kind> kind =
            runtime::LrSchedule::parse(o.schedule);
        !kind.ok())
      return kind.status();
  ModuleOp m = *impl->module;
  // Per-device programs run as they are; a logical graph is compiled, and
  // trained unless it is a training step already (it stores parameters).
  bool partitioned = false;
  for (auto f : m.getOps<func::FuncOp>())
    partitioned |= static_cast<bool>(attrs::getGraph(f));
  if (partitioned && !options.meshShapes.empty())
    return absl::InvalidArgumentError(
        "compile: the source is per-device programs, partitioned for their "
        "meshes; new mesh shapes need the logical graph");
  if (absl::Status s = setMeshShapes(m, options); !s.ok())
    return s;
  if (partitioned) {
    // Hand-written or edited per-device programs: their pipeline schedules
    // are checked together before anything runs.
    MemoryPlanOptions memory;
    memory.deviceMemory = options.deviceMemory;
    memory.inPlaceUpdates = options.inPlaceUpdates;
    if (absl::Status s = runPasses(m,
                                   [&](PassManager &pm) {
                                     pm.addPass(createPipelineSchedule());
                                     pm.addPass(createMemoryPlan(memory));
                                   });
        !s.ok())
      return s;
  }
  std::string evalGraph, logitsGraph;
  std::vector<int64_t> logitsInputs; // per logits input, the step's index
  if (!partitioned) {
    bool hasStep = false;
    m.walk([&](SetParamOp) { hasStep = true; });
    CompilePipelineOptions logical;
    logical.train = options.train && !hasStep;
    logical.distribute = false;
    logical.pipeline.stages = options.stages;
    logical.pipeline.virtualStages = options.virtualStages;
    logical.pipeline.microBatches = options.microbatches;
    logical.pipeline.schedule = options.schedule;
    // Auto-parallel places the parameters the graph leaves unannotated,
    // each on its stage's mesh.
    logical.pipeline.replicateParams = !options.autoParallel;
    logical.autodiff.graph = graphName;
    logical.optimizer.kind = o.kind;
    logical.optimizer.momentum = o.momentum;
    logical.optimizer.weightDecay = o.weightDecay;
    logical.optimizer.beta1 = o.beta1;
    logical.optimizer.beta2 = o.beta2;
    logical.optimizer.eps = o.eps;
    logical.optimizer.clipNorm = o.clipNorm;
    logical.optimizer.stateBits = o.stateBits;
    logical.optimizer.zero = options.zero;
    logical.optimizer.zeroAxis = options.zeroAxis;
    logical.cluster = options.cluster;
    if (options.autoParallel) {
      // Its budget holds the optimizer as it will be: its state, ZeRO,
      // offload.
      AutoParallelOptions ap;
      ap.deviceMemory = options.deviceMemory;
      ap.optimizerStates = o.kind == "sgd" ? (o.momentum != 0 ? 1 : 0) : 2;
      ap.stateBits = o.stateBits;
      ap.zero = options.zero;
      ap.zeroAxis = options.zeroAxis;
      ap.offloadOptimizer = options.offload.optimizer;
      ap.recompute = options.recompute;
      ap.inPlaceUpdates = options.inPlaceUpdates;
      logical.autoParallel = ap;
    }
    // Pipeline stages are cut first, so that the eval and logits copies of
    // the graph are cut as it is (a no-op without stages or micro-batches).
    if (!hasStep) {
      // LoRA adapters first: every copy of the graph reads them.
      if (options.lora.rank > 0)
        if (absl::Status s = runPasses(
                m,
                [&](PassManager &pm) {
                  pm.addPass(createLora({options.lora.rank, options.lora.alpha,
                                         options.lora.targets}));
                });
            !s.ok())
          return s;
      // Mixed precision next: the eval and logits copies compute in the
      // same types as the step.
      if (!options.mixedPrecision.dtype.empty()) {
        const CompileOptions::MixedPrecision &mp = options.mixedPrecision;
        MixedPrecisionOptions pass;
        pass.dtype = mp.dtype;
        pass.f32Ops.assign(mp.f32Ops.begin(), mp.f32Ops.end());
        pass.lossScale = mp.lossScale;
        pass.initScale = mp.initScale;
        pass.growthInterval = mp.growthInterval;
        pass.injectOverflow = mp.injectOverflow && options.train;
        if (absl::Status s = runPasses(m,
                                       [&](PassManager &pm) {
                                         pm.addPass(createMixedPrecision(pass));
                                       });
            !s.ok())
          return s;
      }
      if (absl::Status s = splitStages(m, logical.pipeline); !s.ok())
        return s;
      if (options.train)
        evalGraph = addEvalGraph(m, graphName);
      logitsGraph = addLogitsGraph(m, graphName, logitsInputs);
    }
    // Also for a forward pass: pipeline stages and micro-batches are
    // decided on the logical graph.
    if (absl::Status s = runPipeline(m, logical); !s.ok())
      return s;
    // The logical step, for inputs that fit it (ids within their tables).
    impl->logical = OwningOpRef<ModuleOp>(m.clone());
    CompilePipelineOptions distribute;
    distribute.memory.deviceMemory = options.deviceMemory;
    distribute.memory.inPlaceUpdates = options.inPlaceUpdates;
    distribute.recompute = options.recompute;
    distribute.offload.optimizer = options.offload.optimizer;
    distribute.offload.parameters = options.offload.parameters;
    if (absl::Status s = runPipeline(m, distribute); !s.ok())
      return s;
  }
  Program program;
  program.impl = std::move(impl);
  program.graphName = graphName;
  program.isTraining = options.train;
  program.inPlace = options.inPlaceUpdates;
  program.opt = o;
  for (auto mesh : m.getOps<MeshOp>())
    for (int64_t p = 0; p < mesh.getNumDevices(); ++p)
      program.devices = std::max(program.devices, mesh.getRank(p) + 1);
  runtime::ProgramInterface io = runtime::interfaceOf(m, graphName);
  if (io.inputs.empty() && io.outputs.empty())
    return absl::NotFoundError(
        absl::StrCat("no per-device programs of @", graphName));
  absl::StatusOr<std::vector<Port>> inputs =
      portsOf(io.inputs, true, graphName);
  if (!inputs.ok())
    return inputs.status();
  absl::StatusOr<std::vector<Port>> outputs =
      portsOf(io.outputs, false, graphName);
  if (!outputs.ok())
    return outputs.status();
  program.inputPorts = *std::move(inputs);
  program.outputPorts = *std::move(outputs);
  program.lossIndex = io.loss;
  program.lrIndex = io.lr;
  // The ids' bounds, from the logical graph (its arguments are the ports).
  if (program.impl->logical)
    if (auto f = program.impl->logical->lookupSymbol<func::FuncOp>(graphName))
      for (BlockArgument arg : f.getArguments())
        if (arg.getArgNumber() < program.inputPorts.size() &&
            !isa<FloatType>(
                cast<RankedTensorType>(arg.getType()).getElementType()))
          program.inputPorts[arg.getArgNumber()].idBound =
              reference::idBound(arg);
  if (!logitsGraph.empty()) {
    runtime::ProgramInterface io = runtime::interfaceOf(m, logitsGraph);
    if (io.outputs.size() == 1) {
      program.logitsGraph = logitsGraph;
      absl::StatusOr<std::vector<Port>> in =
          portsOf(io.inputs, true, logitsGraph);
      if (in.ok()) {
        program.logitsPorts = *std::move(in);
        // Named as the step's inputs they are, whatever they are called.
        for (auto [i, port] : llvm::enumerate(program.logitsPorts))
          if (i < logitsInputs.size() &&
              logitsInputs[i] < int64_t(program.inputPorts.size()))
            port.name = program.inputPorts[logitsInputs[i]].name;
      } else
        program.logitsGraph.clear();
    }
  }
  if (!evalGraph.empty()) {
    runtime::ProgramInterface eval = runtime::interfaceOf(m, evalGraph);
    program.evalGraph = evalGraph;
    // The forward pass returns the graph's results, the loss where the
    // step has it; its inputs are the step's but the rate, which the
    // optimizer appended last (the session numbers them so).
    bool rateLast = io.lr &&
                    *io.lr + 1 == static_cast<int64_t>(io.inputs.size()) &&
                    eval.inputs.size() + 1 == io.inputs.size();
    if (rateLast && io.loss && eval.outputs.count(*io.loss))
      program.evalLossIndex = io.loss;
    else
      program.evalGraph.clear();
  }
  return program;
}

absl::StatusOr<Program> compile(Graph &graph, const CompileOptions &options) {
  if (!graph.status().ok())
    return absl::FailedPreconditionError(absl::StrCat(
        "compile: the graph has an error: ", graph.status().message()));
  auto impl = std::make_shared<Program::Impl>();
  impl->ctx = graph.context();
  impl->module = OwningOpRef<ModuleOp>(graph.module().clone());
  return Program::build(std::move(impl), graph.name(), options);
}

absl::StatusOr<Program> compileSource(const std::string &source,
                                      const std::string &bufferName,
                                      const CompileOptions &options,
                                      const std::string &graph) {
  auto impl = std::make_shared<Program::Impl>();
  DialectRegistry registry;
  pc::registerAllDialects(registry);
  impl->ctx = std::make_shared<MLIRContext>(registry);
  impl->ctx->loadAllAvailableDialects();
  // Errors carry the diagnostic, not a dump of the whole module.
  impl->ctx->printOpOnDiagnostic(false);
  {
    Diagnostics diags(impl->ctx.get());
    llvm::SourceMgr sources;
    sources.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(source, bufferName),
        llvm::SMLoc());
    impl->module = parseSourceFile<ModuleOp>(sources, impl->ctx.get());
    if (!impl->module)
      return absl::InvalidArgumentError(diags.take("not a pc module"));
  }
  // The graph: the one named, the pc.graph of per-device programs, or the
  // first func.func.
  std::string name = graph;
  for (auto f : impl->module->getOps<func::FuncOp>())
    if (StringAttr g = attrs::getGraph(f); g && name.empty())
      name = g.getValue().str();
  if (name.empty())
    for (auto f : impl->module->getOps<func::FuncOp>()) {
      name = f.getSymName().str();
      break;
    }
  if (name.empty())
    return absl::InvalidArgumentError(bufferName + " has no graph");
  bool found = false;
  for (auto f : impl->module->getOps<func::FuncOp>())
    found |= f.getSymName() == name ||
             (attrs::getGraph(f) && attrs::getGraph(f).getValue() == name);
  if (!found)
    return absl::NotFoundError("no graph @" + name + " in " + bufferName);
  return Program::build(std::move(impl), name, options);
}

absl::StatusOr<std::vector<runtime::HostTensor>>
Program::exampleInputs(uint64_t seed) const {
  std::vector<runtime::HostTensor> out;
  if (!impl)
    return absl::FailedPreconditionError(
        "Program::exampleInputs: an empty program");
  // Drawn in double, then stored: both must fit, for all inputs at once.
  int64_t bytes = 0;
  for (const Port &port : inputPorts)
    bytes += pc::product(port.shape) * (8 + runtime::sizeOf(port.type));
  if (absl::Status s =
          runtime::checkHostMemory(bytes, "drawing the example inputs");
      !s.ok())
    return s;
  if (impl->logical) {
    absl::StatusOr<std::vector<reference::Array>> random =
        reference::randomInputs(*impl->logical, graphName, seed);
    if (!random.ok())
      return random.status();
    if (random->size() != inputPorts.size())
      return absl::InternalError("the logical graph's inputs do not match "
                                 "the per-device programs'");
    for (auto [port, r] : llvm::zip(inputPorts, *random)) {
      runtime::HostTensor t = runtime::HostTensor::zeros(r.shape, port.type);
      for (int64_t e = 0; e < t.numel(); ++e)
        t.set(e, r.data[e]);
      out.push_back(std::move(t));
    }
    return out;
  }
  // Without the logical graph the tables that ids index are unknown:
  // random floats, and ids of 0, which every table has.
  std::mt19937_64 rng(seed);
  for (const Port &port : inputPorts) {
    runtime::HostTensor t = runtime::HostTensor::zeros(port.shape, port.type);
    if (port.type != runtime::CommType::I32 &&
        port.type != runtime::CommType::I64)
      for (int64_t e = 0; e < t.numel(); ++e)
        t.set(e, std::uniform_real_distribution<double>(-1, 1)(rng));
    out.push_back(std::move(t));
  }
  return out;
}

} // namespace pc::api

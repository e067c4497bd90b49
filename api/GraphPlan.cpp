//===- GraphPlan.cpp - Planning a pc graph on a cluster -------------------===//

#include "api/GraphPlan.h"
#include "dialect/PcOps.h"
#include "passes/InitAll.h"
#include "passes/PassUtils.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <tuple>

using namespace mlir;

namespace pc::api {

absl::StatusOr<std::pair<std::string, std::vector<int64_t>>>
parseMeshShape(const std::string &text) {
  llvm::StringRef t(text);
  auto [name, sizes] = t.split('=');
  name = name.trim();
  name.consume_front("@");
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text,
                     "' is not NAME=AxB (a mesh and its axis "
                     "sizes, each from 1 to 2^20)"));
  };
  if (name.empty() || sizes.trim().empty())
    return bad();
  std::vector<int64_t> shape;
  for (llvm::StringRef s : llvm::split(sizes.trim(), 'x')) {
    int64_t n = 0;
    if (s.trim().getAsInteger(10, n) || n < 1 || n > (int64_t(1) << 20))
      return bad();
    shape.push_back(n);
  }
  return std::make_pair(name.str(), shape);
}

std::string GraphPlan::str() const {
  std::vector<std::string> parts;
  for (size_t i = 0; i < axes.size(); ++i)
    parts.push_back(absl::StrCat(axes[i], "=", shape[i]));
  if (stages > 1)
    parts.push_back(absl::StrCat("pp=", stages));
  if (virtualStages > 1)
    parts.push_back(absl::StrCat("v=", virtualStages));
  if (microbatches > 1)
    parts.push_back(absl::StrCat("m=", microbatches));
  if (!schedule.empty())
    parts.push_back(schedule);
  if (zero > 0)
    parts.push_back(absl::StrCat("zero", zero, "(", zeroAxis, ")"));
  if (!recompute.empty())
    parts.push_back("recompute=" + recompute);
  if (!precision.empty())
    parts.push_back(precision);
  return absl::StrJoin(parts, ",");
}

CompileOptions
GraphPlan::compileOptions(const GraphPlanOptions &options) const {
  CompileOptions c;
  c.meshShapes[mesh] = shape;
  c.stages = stages;
  c.virtualStages = virtualStages;
  c.microbatches = microbatches;
  c.schedule = schedule;
  c.train = true;
  c.optimizer = options.optimizer;
  c.autoParallel = options.autoParallel;
  c.cluster = options.cluster;
  c.deviceMemory = options.deviceMemory;
  c.zero = zero;
  if (zero > 0)
    c.zeroAxis = zeroAxis;
  c.recompute = recompute;
  c.mixedPrecision.dtype = precision;
  return c;
}

std::vector<std::string>
GraphPlan::runOptions(const GraphPlanOptions &options) const {
  std::vector<std::string> o = {"--train", "--cluster", options.cluster};
  if (!options.runDevices.empty()) {
    o.push_back("--devices");
    o.push_back(options.runDevices);
  }
  std::vector<std::string> sizes;
  for (int64_t s : shape)
    sizes.push_back(std::to_string(s));
  o.push_back("--mesh-shape");
  o.push_back(mesh + "=" + absl::StrJoin(sizes, "x"));
  if (options.autoParallel)
    o.push_back("--auto-parallel");
  if (stages > 1) {
    o.push_back("--stages");
    o.push_back(std::to_string(stages));
  }
  if (virtualStages > 1) {
    o.push_back("--virtual-stages");
    o.push_back(std::to_string(virtualStages));
  }
  if (microbatches > 1) {
    o.push_back("--micro-batches");
    o.push_back(std::to_string(microbatches));
  }
  if (!schedule.empty()) {
    o.push_back("--pipeline-schedule");
    o.push_back(schedule);
  }
  if (zero > 0) {
    o.push_back("--zero");
    o.push_back(std::to_string(zero));
    o.push_back("--zero-axis");
    o.push_back(zeroAxis);
  }
  if (!recompute.empty()) {
    o.push_back("--recompute");
    o.push_back(recompute);
  }
  if (!precision.empty()) {
    o.push_back("--mixed-precision");
    o.push_back(precision);
  }
  if (options.deviceMemory > 0) {
    o.push_back("--device-memory");
    o.push_back(std::to_string(options.deviceMemory));
  }
  return o;
}

namespace {

/// The graph's one mesh: its name and axes.
absl::StatusOr<GraphPlan> meshOf(const std::string &source,
                                 const std::string &bufferName) {
  DialectRegistry registry;
  pc::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  std::string errors;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    llvm::raw_string_ostream os(errors);
    os << d.getLocation() << ": " << d << "\n";
    return success();
  });
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, bufferName), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sources, &ctx);
  if (!module)
    return absl::InvalidArgumentError(
        errors.empty() ? bufferName + ": not a pc module" : errors);
  auto meshes = llvm::to_vector(module->getOps<MeshOp>());
  if (meshes.size() != 1)
    return absl::InvalidArgumentError(
        absl::StrCat(bufferName,
                     ": pc-plan lays out graphs on one mesh, which it resizes "
                     "and copies per pipeline stage; the module declares ",
                     meshes.size()));
  MeshOp mesh = meshes.front();
  if (mesh.getRanks())
    return absl::InvalidArgumentError(absl::StrCat(
        bufferName, ": mesh @", mesh.getSymName().str(),
        " lists its ranks; pc-plan places meshes on ranks 0..N-1 itself"));
  GraphPlan plan;
  plan.mesh = mesh.getSymName().str();
  for (Attribute a : mesh.getAxisNames())
    plan.axes.push_back(cast<StringAttr>(a).getValue().str());
  return plan;
}

/// Every way to give `axes` axes the sizes whose product is `devices`.
std::vector<std::vector<int64_t>> shapesOf(int64_t devices, size_t axes) {
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> shape;
  std::function<void(int64_t)> rec = [&](int64_t left) {
    if (shape.size() + 1 == axes) {
      shape.push_back(left);
      out.push_back(shape);
      shape.pop_back();
      return;
    }
    for (int64_t d = 1; d <= left; ++d)
      if (left % d == 0) {
        shape.push_back(d);
        rec(left / d);
        shape.pop_back();
      }
  };
  if (axes > 0)
    rec(devices);
  return out;
}

/// The candidates: one stage, and pipelines of every stage count that
/// divides the devices, with 1, 2 and 4 micro-batches per stage and every
/// schedule; each for every assignment of a stage's devices to the axes.
std::vector<GraphPlan> candidates(const GraphPlan &base, int64_t devices,
                                  int64_t maxStages) {
  std::vector<GraphPlan> out;
  for (int64_t pp = 1; pp <= std::min(devices, maxStages); ++pp) {
    if (devices % pp)
      continue;
    for (const std::vector<int64_t> &shape :
         shapesOf(devices / pp, base.axes.size())) {
      GraphPlan p = base;
      p.shape = shape;
      p.stages = pp;
      if (pp == 1) {
        out.push_back(p);
        continue;
      }
      for (int64_t m : {pp, 2 * pp, 4 * pp}) {
        p.microbatches = m;
        for (const char *s : {"gpipe", "1f1b", "zb-h1"}) {
          p.schedule = s;
          out.push_back(p);
        }
        GraphPlan v = p;
        v.schedule = "interleaved";
        v.virtualStages = 2;
        out.push_back(v);
      }
    }
  }
  return out;
}

std::string firstLine(const absl::Status &s) {
  std::string m(s.message());
  m = m.substr(0, m.find('\n'));
  return m.size() > 240 ? m.substr(0, 237) + "..." : m;
}

/// Compiles and simulates `p` in place; false when rejected, with
/// `*overBudget` set when the compiler found it needs more memory than
/// the budget (auto-parallel's or the memory plan's error).
bool evaluate(GraphPlan &p, const std::string &source,
              const std::string &bufferName, const GraphPlanOptions &options,
              bool *overBudget = nullptr) {
  absl::StatusOr<Program> program = compileSource(
      source, bufferName, p.compileOptions(options), options.graph);
  if (!program.ok()) {
    p.rejected = firstLine(program.status());
    absl::string_view m = program.status().message();
    if (overBudget)
      *overBudget = absl::StrContains(m, "more than the device memory") ||
                    absl::StrContains(m, "no layout fits device-memory");
    return false;
  }
  absl::StatusOr<std::string> sim = program->simulate(&p.stepSeconds);
  if (!sim.ok()) {
    p.rejected = firstLine(sim.status());
    return false;
  }
  for (const auto &[rank, use] : program->predictedMemory())
    p.peakMemory = std::max(p.peakMemory, use.peak);
  return true;
}

/// The ways to fit `p` into the budget when it does not, as the seed's
/// guide orders them: ZeRO 1-3 over each axis of more than one device,
/// recompute, bf16, and all three at once; a single stage may also
/// accumulate gradients over micro-batches (a fraction of the activations
/// each).
std::vector<GraphPlan> remedies(const GraphPlan &p) {
  std::vector<GraphPlan> out;
  auto add = [&](auto change) {
    GraphPlan r = p;
    r.rejected.clear();
    change(r);
    out.push_back(r);
  };
  for (size_t a = 0; a < p.axes.size(); ++a)
    if (p.shape[a] > 1)
      for (int64_t z : {1, 2, 3})
        add([&](GraphPlan &r) {
          r.zero = z;
          r.zeroAxis = p.axes[a];
        });
  for (const char *r : {"selective", "full"})
    add([&](GraphPlan &q) { q.recompute = r; });
  add([](GraphPlan &r) { r.precision = "bf16"; });
  if (p.stages == 1)
    for (int64_t m : {2, 4, 8})
      add([&](GraphPlan &r) { r.microbatches = m; });
  for (size_t a = 0; a < p.axes.size(); ++a)
    if (p.shape[a] > 1)
      add([&](GraphPlan &r) {
        r.zero = 3;
        r.zeroAxis = p.axes[a];
        r.recompute = "full";
        r.precision = "bf16";
      });
  return out;
}

} // namespace

absl::StatusOr<GraphPlanResult> planGraph(const std::string &source,
                                          const std::string &bufferName,
                                          const GraphPlanOptions &options) {
  auto begin = std::chrono::steady_clock::now();
  if (options.cluster.empty())
    return absl::InvalidArgumentError("planGraph: give a cluster spec");
  if (options.devices < 1 || options.devices > (int64_t(1) << 20))
    return absl::InvalidArgumentError(absl::StrCat(
        "planGraph: ", options.devices, " devices (from 1 to 2^20)"));
  absl::StatusOr<GraphPlan> base = meshOf(source, bufferName);
  if (!base.ok())
    return base.status();
  GraphPlanResult result;
  // The devices' 16-bit peak, as the compiled programs' cost model has it.
  llvm::Expected<attrs::CostModel> rates =
      costModelFromSpec(options.cluster, "f32");
  if (!rates)
    return absl::InvalidArgumentError(llvm::toString(rates.takeError()));
  bool halfIsFaster = rates->halfPeakFlops > 1.5 * rates->peakFlops;
  for (GraphPlan &p : candidates(*base, options.devices,
                                 std::max<int64_t>(1, options.maxStages))) {
    bool overBudget = false;
    bool ok = evaluate(p, source, bufferName, options, &overBudget);
    // A plan that does not fit the budget may fit with a memory technique:
    // the fastest that fits stands for it, one that keeps the numbers
    // (ZeRO, recompute, accumulation) before one that does not (bf16).
    if (!ok && overBudget) {
      std::optional<GraphPlan> best;
      auto before = [](const GraphPlan &a, const GraphPlan &b) {
        return std::make_tuple(!a.precision.empty(), a.stepSeconds) <
               std::make_tuple(!b.precision.empty(), b.stepSeconds);
      };
      for (GraphPlan &r : remedies(p))
        if (evaluate(r, source, bufferName, options) &&
            (!best || before(r, *best)))
          best = std::move(r);
      if (best)
        result.plans.push_back(std::move(*best));
    }
    // Where the devices' 16-bit peak is above f32's (GPUs), mixed
    // precision is a speed choice too: bf16 beside every plan that fits.
    if (ok && halfIsFaster && p.precision.empty()) {
      GraphPlan half = p;
      half.precision = "bf16";
      if (evaluate(half, source, bufferName, options))
        result.plans.push_back(std::move(half));
    }
    (ok ? result.plans : result.rejected).push_back(std::move(p));
  }
  // Fastest first; a tie goes to the plan that needs less memory, then to
  // the plainer one (fewer stages and micro-batches).
  std::stable_sort(result.plans.begin(), result.plans.end(),
                   [](const GraphPlan &a, const GraphPlan &b) {
                     return std::make_tuple(a.stepSeconds, a.peakMemory,
                                            a.stages, a.microbatches) <
                            std::make_tuple(b.stepSeconds, b.peakMemory,
                                            b.stages, b.microbatches);
                   });
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
          .count();
  if (result.plans.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        bufferName, ": no plan on ", options.devices, " devices compiles; ",
        result.rejected.empty()
            ? std::string("none was tried")
            : absl::StrCat("the first: ", result.rejected.front().str(), ": ",
                           result.rejected.front().rejected)));
  return result;
}

} // namespace pc::api

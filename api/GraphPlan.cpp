//===- GraphPlan.cpp - Planning a pc graph on a cluster -------------------===//

#include "api/GraphPlan.h"
#include "dialect/PcOps.h"
#include "passes/InitAll.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <chrono>
#include <functional>
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

/// Compiles and simulates `p` in place; false when rejected.
bool evaluate(GraphPlan &p, const std::string &source,
              const std::string &bufferName, const GraphPlanOptions &options) {
  absl::StatusOr<Program> program = compileSource(
      source, bufferName, p.compileOptions(options), options.graph);
  if (!program.ok()) {
    p.rejected = firstLine(program.status());
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
  for (GraphPlan &p : candidates(*base, options.devices,
                                 std::max<int64_t>(1, options.maxStages))) {
    bool ok = evaluate(p, source, bufferName, options);
    // A single stage that does not fit may fit by accumulating gradients
    // over micro-batches, which store a fraction of the activations.
    if (!ok && p.stages == 1 && options.deviceMemory > 0)
      for (int64_t m : {2, 4, 8}) {
        GraphPlan acc = p;
        acc.rejected.clear();
        acc.microbatches = m;
        if (evaluate(acc, source, bufferName, options)) {
          result.plans.push_back(acc);
          break;
        }
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

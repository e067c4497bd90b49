//===- pc-plan.cpp - Which strategy for which model and cluster -----------===//
//
//   pc-plan MODEL --cluster SPEC --global-batch B [--nodes N] [--top K]
//   pc-plan MODEL --cluster SPEC --global-batch B --strategy dp=..,tp=..
//   pc-plan MODEL.mlir --cluster SPEC [--device-memory M] [--max-stages P]
//
// Searches every strategy (mesh shape, micro-batches, schedule, ZeRO,
// recompute, sequence parallelism, precision, offload) for a GPT-style
// MODEL on the cluster of SPEC, simulates the best over the cost model, and
// prints them with their predicted step time, MFU, memory per device and a
// breakdown that says why each beat the next. --strategy simulates one
// strategy instead. --options writes the best plan as pc-run options (pass
// them as @FILE); --svg draws its pipeline timeline. A pc graph is planned
// by compiling every candidate instead (PlanGraph.h). docs/planning.md
// explains the model and the output.
//
//===----------------------------------------------------------------------===//

#include "planner/Search.h"
#include "tools/ToolOptions.h"
#include "tools/pc-plan/PlanGraph.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace pc::planner;
namespace cl = llvm::cl;

namespace {

int fail(const llvm::Twine &message) {
  llvm::errs() << "pc-plan: " << message << "\n";
  return 1;
}

/// A path as given, or a shipped spec's name ("dgx-a100") looked up next
/// to the binary.
std::string findSpec(llvm::StringRef given, const char *argv0) {
  if (llvm::sys::fs::exists(given) || given.contains('/') ||
      given.ends_with(".json"))
    return given.str();
  std::string exe = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&findSpec));
  llvm::SmallString<256> path(llvm::sys::path::parent_path(exe));
  llvm::sys::path::append(path, "..", "share", "pc", "clusters");
  llvm::sys::path::append(path, given + ".json");
  return std::string(path);
}

llvm::Expected<Strategy> parseStrategy(llvm::StringRef text,
                                       int64_t globalBatch) {
  Strategy s;
  auto bad = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--strategy: " + why);
  };
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',', -1, false);
  for (llvm::StringRef part : parts) {
    auto [key, value] = part.split('=');
    key = key.trim();
    value = value.trim();
    int64_t n = 0;
    bool isInt = !value.getAsInteger(10, n);
    auto integer = [&](int64_t &out) -> llvm::Error {
      if (!isInt || n < 0 || n > 1000000)
        return bad("'" + part + "' is not key=integer from 0 to 10^6");
      out = n;
      return llvm::Error::success();
    };
    llvm::Error e = llvm::Error::success();
    if (key == "dp")
      e = integer(s.dp);
    else if (key == "tp")
      e = integer(s.tp);
    else if (key == "pp")
      e = integer(s.pp);
    else if (key == "v")
      e = integer(s.virtualStages);
    else if (key == "mbs")
      e = integer(s.microBatchSize);
    else if (key == "zero")
      e = integer(s.zero);
    else if (key == "sp" || key == "offload") {
      int64_t flag = 0;
      e = integer(flag);
      (key == "sp" ? s.sequenceParallel : s.offloadOptimizer) = flag != 0;
    } else if (key == "schedule") {
      auto kind = pc::pipeline::parseScheduleKind(value);
      if (!kind)
        return bad("unknown schedule '" + value +
                   "' (gpipe, 1f1b, interleaved, zb-h1)");
      s.schedule = *kind;
    } else if (key == "recompute") {
      if (value == "none")
        s.recompute = Recompute::None;
      else if (value == "selective")
        s.recompute = Recompute::Selective;
      else if (value == "full")
        s.recompute = Recompute::Full;
      else
        return bad("unknown recompute '" + value + "' (none, selective, full)");
    } else if (key == "dtype") {
      if (value != "bf16" && value != "f16" && value != "f32")
        return bad("unknown dtype '" + value + "' (bf16, f16, f32)");
      s.dtype = value.str();
    } else
      return bad("unknown key '" + key +
                 "' (dp, tp, pp, v, mbs, schedule, zero, recompute, sp, "
                 "dtype, offload)");
    if (e)
      return std::move(e);
  }
  int64_t perStep = s.dp * s.microBatchSize;
  if (perStep < 1 || globalBatch % perStep)
    return bad("the global batch " + llvm::Twine(globalBatch) +
               " does not divide into dp x mbs = " + llvm::Twine(perStep));
  s.microBatches = globalBatch / perStep;
  return s;
}

std::string gb(double bytes) {
  return llvm::formatv("{0:F1} GB", bytes / 1e9).str();
}

/// The categories of the critical stage's time, for "why".
std::map<std::string, double> breakdown(const Simulation &s) {
  return s.stages[s.critical].time;
}

void printWhy(llvm::raw_ostream &os, const Simulation &a, const Simulation &b,
              int ia, int ib) {
  if (!b.fits) {
    os << "  #" << ia << " beats #" << ib << ": #" << ib << " needs "
       << gb(b.peakMemory) << " per device, over the " << gb(b.memoryBudget)
       << " budget\n";
    return;
  }
  std::map<std::string, double> x = breakdown(a), y = breakdown(b);
  std::vector<std::pair<double, std::string>> diffs;
  for (const auto &kv : y)
    diffs.push_back({x[kv.first] - kv.second, kv.first});
  for (const auto &kv : x)
    if (!y.count(kv.first))
      diffs.push_back({kv.second, kv.first});
  std::sort(diffs.begin(), diffs.end(), [](const auto &l, const auto &r) {
    return std::abs(l.first) > std::abs(r.first);
  });
  if (b.stepTime < a.stepTime) {
    os << llvm::formatv("  #{0} is {1:F2}% slower than #{2} but plainer "
                        "(fewer parallel axes, ZeRO stages, recompute)\n",
                        ia, 100 * (a.stepTime / b.stepTime - 1), ib);
    return;
  }
  os << llvm::formatv("  #{0} beats #{1} by {2:F3} s:", ia, ib,
                      b.stepTime - a.stepTime);
  int shown = 0;
  for (const auto &[d, name] : diffs) {
    if (shown == 3 || std::abs(d) < 5e-4)
      break;
    os << (shown++ ? "," : "")
       << llvm::formatv(" {0} {1}{2:F3} s", name, d > 0 ? "+" : "", d);
  }
  if (!shown)
    os << " equal prediction; the plainer strategy wins";
  os << "\n";
}

void printPlans(llvm::raw_ostream &os, const std::vector<Simulation> &plans,
                size_t top) {
  os << llvm::formatv("{0,3}  {1,-58} {2,9} {3,6} {4,10}  {5,8} {6,8} {7,8} "
                      "{8,8} {9,8}\n",
                      "#", "strategy", "step (s)", "MFU", "mem/device",
                      "compute", "tp comm", "pp comm", "dp comm", "idle");
  for (size_t i = 0; i < std::min(top, plans.size()); ++i) {
    const Simulation &s = plans[i];
    auto t = breakdown(s);
    os << llvm::formatv("{0,3}  {1,-58} {2,9:F3} {3,5:F1}% {4,10}  {5,8:F3} "
                        "{6,8:F3} {7,8:F3} {8,8:F3} {9,8:F3}{10}\n",
                        i + 1, s.strategy.str(), s.stepTime, 100 * s.mfu,
                        gb(s.peakMemory), t["compute"], t["tp comm"],
                        t["pp comm"], t["dp comm"], t["idle"],
                        s.fits ? "" : "  (does not fit)");
  }
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  pc::tools::hideLibraryOptions();
  cl::OptionCategory modelCat("Model and cluster");
  cl::OptionCategory searchCat("Search");
  cl::OptionCategory outCat("Output");
  cl::opt<std::string> model(
      cl::Positional, cl::Required,
      cl::desc("<model: a preset such as gpt3-175b, "
               "layers=..,hidden=..,heads=..[,seq=..,vocab=..,ffn=..], or a "
               "pc graph (MODEL.mlir)>"),
      cl::cat(modelCat));
  cl::opt<std::string> cluster(
      "cluster", cl::Required,
      cl::desc("Cluster spec: a JSON file (docs/planning.md), or a shipped "
               "one by name: dgx-a100, dgx-h100, dgx-h200, pcie-a100, "
               "cpu-virtual"),
      cl::cat(modelCat));
  cl::opt<int> nodes("nodes",
                     cl::desc("Nodes of the cluster (default: the spec's)"),
                     cl::init(0), cl::cat(modelCat));
  cl::opt<int> devicesPerNode(
      "devices-per-node",
      cl::desc("Devices of each node to use (default: the spec's)"),
      cl::init(0), cl::cat(modelCat));
  cl::opt<int> globalBatch(
      "global-batch",
      cl::desc("Sequences per training step (a transformer's shape; a "
               "graph's batch is in its inputs)"),
      cl::cat(modelCat));
  cl::opt<std::string> deviceMemory(
      "device-memory",
      cl::desc("Memory a plan of a graph may use per device, e.g. 512MiB "
               "(default: the spec's usable memory)"),
      cl::cat(modelCat));
  cl::opt<std::string> strategyText(
      "strategy",
      cl::desc("Simulate this strategy instead of searching: dp=,tp=,pp=,v=,"
               "mbs= (micro-batch size),schedule=,zero=,recompute=,sp=0|1,"
               "dtype=,offload=0|1"),
      cl::cat(searchCat));
  cl::opt<int> top("top", cl::desc("Plans to print"), cl::init(5),
                   cl::cat(searchCat));
  cl::opt<int> maxStages(
      "max-stages",
      cl::desc("A graph's longest pipeline: stages up to this many"),
      cl::init(8), cl::cat(searchCat));
  cl::opt<int> simulateCount(
      "simulate", cl::desc("Candidates simulated in full after the estimate"),
      cl::init(48), cl::cat(searchCat));
  cl::opt<std::string> dtypes("dtypes",
                              cl::desc("Precisions to search, comma-separated"),
                              cl::init("bf16,f32"), cl::cat(searchCat));
  cl::opt<std::string> optionsPath(
      "options",
      cl::desc("Write the best plan's pc-run options to this file (pass it "
               "as @FILE)"),
      cl::cat(outCat));
  cl::opt<std::string> svgPath(
      "svg", cl::desc("Draw the best plan's pipeline timeline as an SVG"),
      cl::cat(outCat));
  cl::ParseCommandLineOptions(
      argc, argv,
      "pc-plan: which strategy for which model and cluster\n\n"
      "Searches data, tensor and pipeline parallel sizes, micro-batches, "
      "schedules, ZeRO, recompute, sequence parallelism, precision and "
      "offload, and prints the best plans with their predicted step time, "
      "MFU, memory and communication. Given a pc graph (MODEL.mlir), "
      "compiles and simulates every mesh shape, pipeline, micro-batch count "
      "and schedule with auto-parallel's layouts instead.\n");

  bool graphModel = llvm::StringRef(model).ends_with(".mlir");
  llvm::Expected<TransformerSpec> m =
      graphModel ? llvm::Expected<TransformerSpec>(TransformerSpec())
                 : parseModel(model);
  if (!m)
    return fail(llvm::toString(m.takeError()));
  std::string specPath = findSpec(cluster, argv[0]);
  llvm::Expected<ClusterSpec> spec = loadClusterSpec(specPath);
  if (!spec)
    return fail(llvm::toString(spec.takeError()));
  if (nodes < 0)
    return fail("--nodes must be positive");
  if (nodes > 0)
    spec->nodes = nodes;
  if (devicesPerNode < 0)
    return fail("--devices-per-node must be positive");
  if (devicesPerNode > 0)
    spec->devicesPerNode = devicesPerNode;
  if (spec->devicesPerNode > 1 && spec->intraNode.bandwidth <= 0)
    return fail("cluster '" + spec->name + "' has " +
                llvm::Twine(spec->devicesPerNode) +
                " devices per node but no 'intra_node' link");
  if (spec->nodes > 1 && spec->interNode.bandwidth <= 0)
    return fail("cluster '" + spec->name + "' has " + llvm::Twine(spec->nodes) +
                " nodes but no 'inter_node' link");
  if (graphModel) {
    pc::tools::PlanGraphArgs args;
    args.model = model;
    args.clusterPath = specPath;
    args.optionsPath = optionsPath;
    args.svgPath = svgPath;
    args.spec = *spec;
    args.top = top;
    args.maxStages = maxStages;
    if (!deviceMemory.empty()) {
      llvm::Expected<double> bytes = parseBytes(deviceMemory);
      if (!bytes)
        return fail("--device-memory: " + llvm::toString(bytes.takeError()));
      if (*bytes < 1)
        return fail("--device-memory must be positive");
      args.deviceMemory = *bytes;
    }
    if (maxStages < 1)
      return fail("--max-stages must be positive");
    if (!strategyText.empty() || globalBatch.getNumOccurrences())
      return fail("--strategy and --global-batch are for a transformer's "
                  "shape; a graph's batch is in its inputs");
    return pc::tools::planGraphMain(args);
  }
  if (!deviceMemory.empty())
    return fail("--device-memory is for a graph (MODEL.mlir); a "
                "transformer's budget is the spec's memory");
  if (globalBatch < 1)
    return fail("--global-batch must be positive (a transformer's shape "
                "needs it)");
  Simulator sim(*spec);

  llvm::outs() << llvm::formatv(
      "pc-plan: {0} ({1:F2}B parameters, {2} layers, hidden {3}, seq {4}) on "
      "{5}: {6} node(s) x {7} = {8} devices; global batch {9}\n",
      m->name, double(m->parameters()) / 1e9, m->layers, m->hidden, m->seq,
      spec->name, spec->nodes, spec->devicesPerNode, spec->devices(),
      int(globalBatch));

  std::vector<Simulation> plans;
  if (!strategyText.empty()) {
    llvm::Expected<Strategy> st = parseStrategy(strategyText, globalBatch);
    if (!st)
      return fail(llvm::toString(st.takeError()));
    llvm::Expected<Simulation> s = sim.simulate(*m, *st);
    if (!s)
      return fail(llvm::toString(s.takeError()));
    plans.push_back(std::move(*s));
  } else {
    SearchOptions opts;
    opts.globalBatch = globalBatch;
    opts.simulate = std::max(1, int(simulateCount));
    opts.dtypes.clear();
    for (llvm::StringRef d : llvm::split(dtypes, ',')) {
      d = d.trim();
      if (!spec->peakFlops.count(d.str()))
        return fail("--dtypes: the cluster spec gives no peak for '" + d + "'");
      opts.dtypes.push_back(d.str());
    }
    llvm::Expected<SearchResult> r = search(*m, sim, opts);
    if (!r)
      return fail(llvm::toString(r.takeError()));
    llvm::outs() << llvm::formatv(
        "searched {0} strategies ({1} valid, {2} fit in memory) in {3:F2} s; "
        "simulated the best {4}\n\n",
        r->considered, r->valid, r->fitting, r->seconds, r->best.size());
    plans = std::move(r->best);
  }

  const size_t shown = size_t(std::max(1, int(top)));
  printPlans(llvm::outs(), plans, shown);
  if (plans.size() > 1) {
    llvm::outs() << "\nwhy:\n";
    for (size_t i = 0; i + 1 < std::min(shown, plans.size()); ++i)
      printWhy(llvm::outs(), plans[i], plans[i + 1], i + 1, i + 2);
  }
  const Simulation &best = plans.front();
  llvm::outs() << "\nplan #1: " << best.strategy.str() << " ("
               << best.strategy.family() << ")\n"
               << llvm::formatv("  step {0:F3} s, MFU {1:F1}%, bubble {2:F1}%, "
                                "{3:F1} PFLOP per step\n",
                                best.stepTime, 100 * best.mfu,
                                100 * best.bubble, best.modelFlops / 1e15)
               << formatSimulation(best);
  if (!best.fits)
    llvm::outs() << "  no strategy fits: the best needs " << gb(best.peakMemory)
                 << " per device, over the " << gb(best.memoryBudget)
                 << " budget\n";
  llvm::outs() << "  mesh: dp " << best.strategy.dp << " x tp "
               << best.strategy.tp << " (the model's pc.mesh; "
               << "bench/gen_gpt.py --mesh " << best.strategy.dp << "x"
               << best.strategy.tp << ")\n  pc-run options:";
  for (const std::string &o : best.strategy.runOptions())
    llvm::outs() << " " << o;
  llvm::outs() << "\n";
  if (best.strategy.sequenceParallel)
    llvm::outs() << "  sequence parallelism: split the norms' and dropouts' "
                    "activations S(1) over tp in the model's annotations\n";

  if (!optionsPath.empty()) {
    std::error_code ec;
    llvm::ToolOutputFile out(optionsPath, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return fail(optionsPath + ": " + ec.message());
    for (const std::string &o : best.strategy.runOptions())
      out.os() << o << "\n";
    out.keep();
  }
  if (!svgPath.empty()) {
    std::error_code ec;
    llvm::ToolOutputFile out(svgPath, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return fail(svgPath + ": " + ec.message());
    out.os() << pc::pipeline::renderSvg(best.timeline,
                                        m->name + ": " + best.strategy.str(),
                                        best.strategy.virtualStages);
    out.keep();
  }
  return 0;
}

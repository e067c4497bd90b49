//===- PlanGraph.cpp - pc-plan MODEL.mlir ---------------------------------===//

#include "tools/pc-plan/PlanGraph.h"
#include "api/GraphPlan.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

namespace pc::tools {
namespace {

int fail(const llvm::Twine &message) {
  llvm::errs() << "pc-plan: " << message << "\n";
  return 1;
}

std::string mib(double bytes) {
  if (bytes < 1048576.0)
    return llvm::formatv("{0:F1} KiB", bytes / 1024.0).str();
  return llvm::formatv("{0:F1} MiB", bytes / 1048576.0).str();
}

void printPlans(llvm::raw_ostream &os, const api::GraphPlanResult &r,
                size_t top) {
  os << llvm::formatv("{0,3}  {1,-40} {2,12} {3,12}\n", "#", "plan",
                      "step (ms)", "mem/device");
  for (size_t i = 0; i < std::min(top, r.plans.size()); ++i) {
    const api::GraphPlan &p = r.plans[i];
    os << llvm::formatv("{0,3}  {1,-40} {2,12:F3} {3,12}\n", i + 1, p.str(),
                        1e3 * p.stepSeconds, mib(p.peakMemory));
  }
  if (r.plans.size() > 1) {
    const api::GraphPlan &a = r.plans[0], &b = r.plans[1];
    os << llvm::formatv("\n#1 beats #2 by {0:F3} ms ({1:F1}%)\n",
                        1e3 * (b.stepSeconds - a.stepSeconds),
                        100 * (b.stepSeconds / a.stepSeconds - 1));
  }
  if (!r.rejected.empty()) {
    os << "\nrejected: " << r.rejected.size() << " plans";
    size_t shown = std::min<size_t>(top, r.rejected.size());
    if (shown < r.rejected.size())
      os << " (the first " << shown << ")";
    os << "\n";
    for (size_t i = 0; i < shown; ++i)
      os << "  " << r.rejected[i].str() << ": " << r.rejected[i].rejected
         << "\n";
  }
}

} // namespace

int planGraphMain(const PlanGraphArgs &args) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(args.model);
  if (!file)
    return fail(args.model + ": " + file.getError().message());
  api::GraphPlanOptions options;
  options.cluster = args.clusterPath;
  options.devices = args.spec.devices();
  options.maxStages = args.maxStages;
  // CPU virtual devices share a host's memory; anything else is a GPU, one
  // process per node under mpirun.
  bool cpu = args.spec.intraNodeKind == "shared-memory";
  options.runDevices = cpu ? "cpu:" + std::to_string(options.devices)
                           : "cuda:" + std::to_string(args.spec.devicesPerNode);
  double budget = args.deviceMemory > 0
                      ? args.deviceMemory
                      : args.spec.memoryBytes * args.spec.usableMemory;
  options.deviceMemory = int64_t(budget);
  llvm::outs() << llvm::formatv(
      "pc-plan: {0} on {1}: {2} node(s) x {3} = {4} devices, {5} per "
      "device\n",
      args.model, args.spec.name, args.spec.nodes, args.spec.devicesPerNode,
      options.devices, mib(budget));
  std::string source = (*file)->getBuffer().str();
  absl::StatusOr<api::GraphPlanResult> r =
      api::planGraph(source, args.model, options);
  if (!r.ok())
    return fail(std::string(r.status().message()));
  llvm::outs() << llvm::formatv(
      "compiled and simulated {0} plans ({1} rejected) in {2:F2} s\n\n",
      r->plans.size() + r->rejected.size(), r->rejected.size(), r->seconds);
  printPlans(llvm::outs(), *r, size_t(std::max(1, args.top)));
  const api::GraphPlan &best = r->plans.front();
  std::vector<std::string> run = best.runOptions(options);
  llvm::outs() << "\nplan #1: " << best.str() << "\n  pc-run options:";
  for (const std::string &o : run)
    llvm::outs() << " " << o;
  llvm::outs() << "\n";
  if (!cpu && args.spec.nodes > 1)
    llvm::outs() << "  (one process per node: mpirun -np " << args.spec.nodes
                 << " pc-run ...)\n";

  if (!args.optionsPath.empty()) {
    std::error_code ec;
    llvm::ToolOutputFile out(args.optionsPath, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return fail(args.optionsPath + ": " + ec.message());
    for (const std::string &o : run)
      out.os() << o << "\n";
    out.keep();
  }
  if (!args.svgPath.empty()) {
    if (best.stages == 1)
      return fail("--svg: plan #1 has no pipeline to draw");
    absl::StatusOr<api::Program> program =
        api::compileSource(source, args.model, best.compileOptions(options));
    if (!program.ok())
      return fail(std::string(program.status().message()));
    std::error_code ec;
    llvm::ToolOutputFile out(args.svgPath, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return fail(args.svgPath + ": " + ec.message());
    out.os() << program->scheduleSvg();
    out.keep();
  }
  return 0;
}

} // namespace pc::tools

//===- pc-check.cpp - Check a compiled model against its logical graph ----===//
//
//   pc-check MODEL.mlir [--graph NAME] [--pipeline PASSES] [--seed S]
//
// Runs the graph as a logical program on one simulated device and, after
// the pipeline (default pc-distribute), as per-device programs on simulated
// devices, with the reference interpreter; prints the largest relative
// difference and the bytes each rank received, and exits non-zero when the
// results differ by more than --tolerance.
//
//===----------------------------------------------------------------------===//

#include "passes/InitAll.h"
#include "runtime/reference/Interpreter.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "tools/ToolOptions.h"

using namespace mlir;
namespace cl = llvm::cl;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  pc::tools::hideLibraryOptions();
  cl::OptionCategory checkCat("Checking a compiled graph against its logical "
                              "graph");
  cl::opt<std::string> model(cl::Positional, cl::desc("<model.mlir>"),
                             cl::Required, cl::cat(checkCat));
  cl::opt<std::string> graph("graph",
                             cl::desc("The graph to check (default: "
                                      "the first func.func)"),
                             cl::cat(checkCat));
  cl::opt<std::string> pipeline("pipeline", cl::desc("The passes to run"),
                                cl::init("pc-distribute"), cl::cat(checkCat));
  cl::opt<uint64_t> seed("seed", cl::desc("Seed of inputs and parameters"),
                         cl::init(1), cl::cat(checkCat));
  cl::opt<double> tolerance("tolerance",
                            cl::desc("Largest relative difference accepted"),
                            cl::init(1e-6), cl::cat(checkCat));
  pc::registerAllPasses();
  cl::ParseCommandLineOptions(argc, argv, "pc-check: compiled vs logical\n");

  DialectRegistry registry;
  pc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(model);
  if (!buffer) {
    llvm::errs() << "pc-check: cannot read " << model << "\n";
    return 1;
  }
  std::string source = (*buffer)->getBuffer().str();
  if (graph.empty()) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    if (!module)
      return 1;
    auto funcs = module->getOps<func::FuncOp>();
    if (funcs.empty()) {
      llvm::errs() << "pc-check: " << model << " has no func.func\n";
      return 1;
    }
    graph = (*funcs.begin()).getSymName().str();
  }
  absl::StatusOr<pc::reference::CheckResult> result =
      pc::reference::checkCompiled(context, source, graph, pipeline, seed);
  if (!result.ok()) {
    llvm::errs() << "pc-check: " << result.status().ToString() << "\n";
    return 1;
  }
  double error = result->maxRelativeError;
  const pc::reference::Traffic &traffic = result->traffic;
  llvm::outs() << "@" << graph << ": max relative difference " << error
               << " (tolerance " << tolerance << ")\n";
  for (auto &[kind, n] : traffic.collectives)
    llvm::outs() << "  " << kind << ": " << n << " calls\n";
  for (auto &[rank, bytes] : traffic.bytesReceived)
    llvm::outs() << "  rank " << rank << " received " << bytes << " B\n";
  return error <= tolerance ? 0 : 2;
}

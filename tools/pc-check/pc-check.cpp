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
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
namespace cl = llvm::cl;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::opt<std::string> model(cl::Positional, cl::desc("<model.mlir>"),
                             cl::Required);
  cl::opt<std::string> graph("graph", cl::desc("The graph to check (default: "
                                               "the first func.func)"));
  cl::opt<std::string> pipeline("pipeline", cl::desc("The passes to run"),
                                cl::init("pc-distribute"));
  cl::opt<uint64_t> seed("seed", cl::desc("Seed of inputs and parameters"),
                         cl::init(1));
  cl::opt<double> tolerance("tolerance",
                            cl::desc("Largest relative difference accepted"),
                            cl::init(1e-6));
  pc::registerAllPasses();
  cl::ParseCommandLineOptions(argc, argv, "pc-check: compiled vs logical\n");

  DialectRegistry registry;
  pc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sources;
  OwningOpRef<ModuleOp> logical = parseSourceFile<ModuleOp>(model, &context);
  if (!logical)
    return 1;
  if (graph.empty()) {
    auto funcs = logical->getOps<func::FuncOp>();
    if (funcs.empty()) {
      llvm::errs() << "pc-check: " << model << " has no func.func\n";
      return 1;
    }
    graph = (*funcs.begin()).getSymName().str();
  }
  absl::StatusOr<std::vector<pc::reference::Array>> inputs =
      pc::reference::randomInputs(*logical, graph, seed);
  if (!inputs.ok()) {
    llvm::errs() << "pc-check: " << inputs.status().ToString() << "\n";
    return 1;
  }
  auto expected = pc::reference::runLogical(*logical, graph, *inputs, seed);
  if (!expected.ok()) {
    llvm::errs() << "pc-check: logical run: " << expected.status().ToString()
                 << "\n";
    return 1;
  }

  OwningOpRef<ModuleOp> compiled = parseSourceFile<ModuleOp>(model, &context);
  PassManager pm = PassManager::on<ModuleOp>(&context);
  if (failed(parsePassPipeline(pipeline, pm)) || failed(pm.run(*compiled)))
    return 1;
  pc::reference::Traffic traffic;
  auto actual =
      pc::reference::runDistributed(*compiled, graph, *inputs, seed, &traffic);
  if (!actual.ok()) {
    llvm::errs() << "pc-check: distributed run: " << actual.status().ToString()
                 << "\n";
    return 1;
  }
  absl::StatusOr<double> error =
      pc::reference::maxRelativeError(*actual, *expected);
  if (!error.ok()) {
    llvm::errs() << "pc-check: " << error.status().ToString() << "\n";
    return 1;
  }
  llvm::outs() << "@" << graph << ": max relative difference " << *error
               << " (tolerance " << tolerance << ")\n";
  for (auto &[kind, n] : traffic.collectives)
    llvm::outs() << "  " << kind << ": " << n << " calls\n";
  for (auto &[rank, bytes] : traffic.bytesReceived)
    llvm::outs() << "  rank " << rank << " received " << bytes << " B\n";
  return *error <= tolerance ? 0 : 2;
}

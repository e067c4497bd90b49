//===- IrFuzzer.cpp - Fuzzes the IR parser, verifier and --pc-distribute --===//
//
// Any bytes as a .mlir file: parsing and verifying it, then compiling a
// verified module with --pc-distribute (propagation, partition, boxing),
// ends in a module or in diagnostics, never a crash. Each input gets a
// fresh context, so that one input cannot change how the next is read.
//
//===----------------------------------------------------------------------===//

#include "passes/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  pc::registerAllPasses();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const mlir::DialectRegistry registry = [] {
    mlir::DialectRegistry r;
    pc::registerAllDialects(r);
    return r;
  }();
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  // Diagnostics are the expected outcome of most inputs: swallowed.
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  // MLIR's lexer needs a NUL after the text, as a file's buffer has; the
  // fuzzer's bytes have none.
  std::string source(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module)
    return 0;
  mlir::PassManager pm = mlir::PassManager::on<mlir::ModuleOp>(&context);
  if (mlir::failed(mlir::parsePassPipeline("pc-distribute", pm)))
    std::abort(); // the pipeline itself is broken, not the input
  (void)pm.run(*module);
  return 0;
}

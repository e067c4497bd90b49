//===- pc-opt.cpp - The pc optimizer driver -------------------------------===//
//
// Reads pc IR, runs the passes named on the command line and prints the
// result, in the manner of mlir-opt.
//
//===----------------------------------------------------------------------===//

#include "passes/InitAll.h"
#include "tools/ToolOptions.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  // What --help lists: mlir-opt's own options and pc's passes, not LLVM's
  // internal flags.
  pc::tools::hideLibraryOptions();
  mlir::DialectRegistry registry;
  pc::registerAllDialects(registry);
  pc::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "pc optimizer driver: logical graphs to per-device programs\n",
      registry));
}

//===- InitAll.cpp - The one registration point of pc ---------------------===//

#include "passes/InitAll.h"

#include "dialect/PcDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "passes/Passes.h"

void pc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<pc::PcDialect, mlir::func::FuncDialect>();
}

void pc::registerAllPasses() {
  mlir::registerTransformsPasses();
  pc::registerPCPasses();
  pc::registerDistributePipeline();
}

//===- ProgramInterface.cpp - The inputs and outputs of a compiled graph --===//

#include "runtime/exec/ProgramInterface.h"
#include "dialect/ProgramAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace pc::runtime {

ProgramInterface interfaceOf(ModuleOp module, llvm::StringRef graph) {
  ProgramInterface io;
  for (auto f : module.getOps<func::FuncOp>()) {
    StringAttr of = attrs::getGraph(f);
    if (!of || of.getValue() != graph)
      continue;
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      int64_t index = attrs::getArgIndex(f, i).value_or(-1);
      Port port{attrs::getArgLogicalType(f, i), ""};
      if (StringAttr name = attrs::getArgName(f, i))
        port.name = name.str();
      if (port.name == "lr")
        io.lr = index;
      io.inputs[index] = port;
    }
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      int64_t index = attrs::getResultIndex(f, i).value_or(-1);
      Port port{attrs::getResultLogicalType(f, i), ""};
      if (StringAttr name = attrs::getResultName(f, i))
        port.name = name.str();
      if (attrs::isLoss(f, i))
        io.loss = index;
      if (port.name == "grad_norm")
        io.gradNorm = index;
      io.outputs[index] = port;
    }
  }
  return io;
}

} // namespace pc::runtime

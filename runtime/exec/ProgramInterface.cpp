//===- ProgramInterface.cpp - The inputs and outputs of a compiled graph --===//

#include "runtime/exec/ProgramInterface.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace pc::runtime {

ProgramInterface interfaceOf(ModuleOp module, llvm::StringRef graph) {
  ProgramInterface io;
  for (auto f : module.getOps<func::FuncOp>()) {
    auto of = f->getAttrOfType<StringAttr>("pc.graph");
    if (!of || of.getValue() != graph)
      continue;
    auto portOf = [](DictionaryAttr attrs, int64_t &index) {
      index = cast<IntegerAttr>(attrs.get("pc.index")).getInt();
      Port port{cast<TypeAttr>(attrs.get("pc.logical_type")).getValue(), ""};
      if (auto name = dyn_cast_or_null<StringAttr>(attrs.get("pc.name")))
        port.name = name.str();
      return port;
    };
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      int64_t index;
      Port port = portOf(f.getArgAttrDict(i), index);
      if (port.name == "lr")
        io.lr = index;
      io.inputs[index] = port;
    }
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      int64_t index;
      Port port = portOf(f.getResultAttrDict(i), index);
      if (f.getResultAttr(i, "pc.loss"))
        io.loss = index;
      if (port.name == "grad_norm")
        io.gradNorm = index;
      io.outputs[index] = port;
    }
  }
  return io;
}

} // namespace pc::runtime

//===- PassUtils.cpp - Helpers shared by the pc passes --------------------===//

#include "passes/PassUtils.h"

#include "dialect/ProgramAttrs.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace pc {

RankedTensorType withSbp(Type type, SbpAttr sbp) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(), tensor.getElementType(), sbp);
}

std::string ranksText(func::FuncOp f) {
  std::string out = "ranks [";
  llvm::raw_string_ostream os(out);
  llvm::interleaveComma(attrs::getRanks(f), os);
  os << "]";
  return out;
}

SbpAttr makeSbp(MLIRContext *context, FlatSymbolRefAttr mesh,
                ArrayRef<SbpEntry> entries) {
  return SbpAttr::get(context, mesh, entries);
}

} // namespace pc

//===- PassUtils.cpp - Helpers shared by the pc passes --------------------===//

#include "passes/PassUtils.h"

using namespace mlir;

namespace pc {

RankedTensorType withSbp(Type type, SbpAttr sbp) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(), tensor.getElementType(), sbp);
}

SbpAttr makeSbp(MLIRContext *context, FlatSymbolRefAttr mesh,
                ArrayRef<SbpEntry> entries) {
  return SbpAttr::get(context, mesh, entries);
}

} // namespace pc

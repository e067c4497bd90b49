//===- LayoutOps.cpp - pc.to_sbp and pc.boxing ----------------------------===//

#include "dialect/PcOps.h"
#include "dialect/ShapeInference.h"

using namespace mlir;
using namespace pc;

/// A layout change keeps the logical value: the shape and element type.
static LogicalResult verifySameLogicalType(Operation *op, Type in, Type out) {
  auto a = cast<RankedTensorType>(in), b = cast<RankedTensorType>(out);
  if (a.getShape() != b.getShape() || a.getElementType() != b.getElementType())
    return op->emitOpError()
           << "changes the logical type from " << a << " to " << b
           << "; a layout change keeps the shape and element type";
  return success();
}

LogicalResult ToSbpOp::verify() {
  if (!getSbp(getResult().getType()))
    return emitOpError() << "result type " << getResult().getType()
                         << " has no #pc.sbp layout; pc.to_sbp constrains a "
                            "value to the layout of its result type";
  return verifySameLogicalType(*this, getInput().getType(),
                               getResult().getType());
}

LogicalResult BoxingOp::verify() {
  if (!getSbp(getInput().getType()))
    return emitOpError() << "operand type " << getInput().getType()
                         << " has no #pc.sbp layout; boxing converts between "
                            "decided layouts";
  if (!getSbp(getResult().getType()))
    return emitOpError() << "result type " << getResult().getType()
                         << " has no #pc.sbp layout; boxing converts between "
                            "decided layouts";
  return verifySameLogicalType(*this, getInput().getType(),
                               getResult().getType());
}

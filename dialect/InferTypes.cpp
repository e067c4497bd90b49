//===- InferTypes.cpp - Result types the op builders infer ----------------===//

#include "dialect/InferTypes.h"
#include "dialect/ShapeInference.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace pc::infer {
namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

Type elemOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// Builders do not report: the verifier does, with the same rule.
InFlightDiagnostic silent() { return InFlightDiagnostic(); }

/// A tensor of `shape` and `elem`, or the type of `fallback` (without
/// layout) when the rule failed.
Type make(FailureOr<shape::Shape> shape, Type elem, Value fallback) {
  if (failed(shape))
    return sameAs(fallback);
  return RankedTensorType::get(*shape, elem);
}

} // namespace

Type sameAs(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return RankedTensorType::get(t.getShape(), t.getElementType());
}

Type broadcast(Value lhs, Value rhs) {
  return make(shape::broadcast(shapeOf(lhs), shapeOf(rhs), silent), elemOf(lhs),
              lhs);
}

Type matmul(Value lhs, Value rhs, bool transposeLhs, bool transposeRhs) {
  return make(shape::matmul(shapeOf(lhs), shapeOf(rhs), transposeLhs,
                            transposeRhs, silent),
              elemOf(lhs), lhs);
}

Type reduce(Value input, ArrayRef<int64_t> axes, bool keepdim) {
  return make(shape::reduce(shapeOf(input), axes, keepdim, silent),
              elemOf(input), input);
}

Type transpose(Value input, ArrayRef<int64_t> perm) {
  return make(shape::transpose(shapeOf(input), perm, silent), elemOf(input),
              input);
}

Type slice(Value input, ArrayRef<int64_t> start, ArrayRef<int64_t> limit) {
  return make(shape::slice(shapeOf(input), start, limit, silent), elemOf(input),
              input);
}

Type concat(ValueRange inputs, int64_t axis) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : inputs)
    shapes.push_back(shapeOf(v));
  return make(shape::concat(shapes, axis, silent), elemOf(inputs.front()),
              inputs.front());
}

Type embedding(Value ids, Value table) {
  return make(shape::embedding(shapeOf(ids), shapeOf(table), silent),
              elemOf(table), table);
}

Type crossEntropy(Value logits, Value labels) {
  return make(shape::crossEntropy(shapeOf(logits), shapeOf(labels), silent),
              elemOf(logits), logits);
}

} // namespace pc::infer

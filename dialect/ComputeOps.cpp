//===- ComputeOps.cpp - Verifiers of the logical compute ops --------------===//
//
// Each verifier checks the operands and attributes through the shared shape
// rules of ShapeInference.h, then that the written result shape and element
// type are the inferred ones. The SBP encodings are not compared here: which
// layouts an op accepts is its SBP signature, checked by propagation.
//
//===----------------------------------------------------------------------===//

#include "dialect/PcOps.h"
#include "dialect/ShapeInference.h"

#include <cmath>

using namespace mlir;
using namespace pc;

namespace {
ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
Type elemOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// The result of `op` must have `shape` and `elem`.
LogicalResult verifyResult(Operation *op, FailureOr<shape::Shape> shape,
                           Type elem) {
  if (failed(shape))
    return failure();
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  if (result.getShape() != ArrayRef<int64_t>(*shape))
    return op->emitOpError()
           << "result shape " << shape::str(result.getShape())
           << " does not match the inferred shape " << shape::str(*shape);
  if (result.getElementType() != elem)
    return op->emitOpError()
           << "result element type " << result.getElementType() << " should be "
           << elem;
  return success();
}

/// All of `values` have one element type.
LogicalResult verifySameElementType(Operation *op, ValueRange values) {
  for (auto [i, v] : llvm::enumerate(values))
    if (elemOf(v) != elemOf(values.front()))
      return op->emitOpError()
             << "operand #" << i << " has element type " << elemOf(v)
             << " but operand #0 has " << elemOf(values.front());
  return success();
}

template <typename UnaryOp> LogicalResult verifyUnary(UnaryOp op) {
  return verifyResult(op, shape::Shape(shapeOf(op.getInput())),
                      elemOf(op.getInput()));
}

template <typename BinaryOp> LogicalResult verifyBinary(BinaryOp op) {
  if (failed(verifySameElementType(op, {op.getLhs(), op.getRhs()})))
    return failure();
  return verifyResult(op,
                      shape::broadcast(shapeOf(op.getLhs()),
                                       shapeOf(op.getRhs()),
                                       [&] { return op.emitOpError(); }),
                      elemOf(op.getLhs()));
}

template <typename SoftmaxOp> LogicalResult verifySoftmax(SoftmaxOp op) {
  if (failed(shape::normalizeAxis(op.getAxis(), shapeOf(op.getInput()).size(),
                                  "axis", [&] { return op.emitOpError(); })))
    return failure();
  return verifyUnary(op);
}

template <typename ReduceOp> LogicalResult verifyReduce(ReduceOp op) {
  return verifyResult(op,
                      shape::reduce(shapeOf(op.getInput()), op.getAxes(),
                                    op.getKeepdim(),
                                    [&] { return op.emitOpError(); }),
                      elemOf(op.getInput()));
}

LogicalResult verifyEpsilon(Operation *op, double epsilon) {
  if (!(epsilon > 0))
    return op->emitOpError() << "epsilon must be positive, not " << epsilon;
  return success();
}
} // namespace

LogicalResult MatmulOp::verify() {
  if (failed(verifySameElementType(*this, getOperands())))
    return failure();
  if (!std::isfinite(getScale()))
    return emitOpError("alpha must be finite");
  if (failed(verifyResult(*this,
                          shape::matmul(shapeOf(getLhs()), shapeOf(getRhs()),
                                        getTransposeLhs(), getTransposeRhs(),
                                        [&] { return emitOpError(); }),
                          elemOf(getLhs()))))
    return failure();
  if (Value addend = getAddend())
    if (!shape::broadcastsTo(shapeOf(addend), shapeOf(getResult())))
      return emitOpError() << "addend shape " << shape::str(shapeOf(addend))
                           << " does not broadcast to the result shape "
                           << shape::str(shapeOf(getResult()));
  return success();
}

LogicalResult AddOp::verify() { return verifyBinary(*this); }
LogicalResult SubOp::verify() { return verifyBinary(*this); }
LogicalResult MulOp::verify() { return verifyBinary(*this); }
LogicalResult DivOp::verify() { return verifyBinary(*this); }

LogicalResult NegOp::verify() { return verifyUnary(*this); }
LogicalResult ExpOp::verify() { return verifyUnary(*this); }
LogicalResult LogOp::verify() { return verifyUnary(*this); }
LogicalResult TanhOp::verify() { return verifyUnary(*this); }
LogicalResult ReluOp::verify() { return verifyUnary(*this); }
LogicalResult SigmoidOp::verify() { return verifyUnary(*this); }
LogicalResult GeluOp::verify() { return verifyUnary(*this); }
LogicalResult SqrtOp::verify() { return verifyUnary(*this); }
LogicalResult ErfOp::verify() { return verifyUnary(*this); }
LogicalResult CompareOp::verify() { return verifyBinary(*this); }

LogicalResult OneHotOp::verify() {
  ArrayRef<int64_t> labels = shapeOf(getLabels()),
                    result = cast<RankedTensorType>(getType()).getShape();
  if (result.size() != labels.size() + 1 ||
      result.drop_back() != ArrayRef<int64_t>(labels))
    return emitOpError() << "result shape " << shape::str(result)
                         << " should be the labels' shape "
                         << shape::str(labels) << " and a class dim";
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  ArrayRef<int64_t> ids = shapeOf(getIds()), grad = shapeOf(getGrad()),
                    result = cast<RankedTensorType>(getType()).getShape();
  if (grad.size() != ids.size() + 1 ||
      grad.drop_back() != ArrayRef<int64_t>(ids))
    return emitOpError() << "grad shape " << shape::str(grad)
                         << " should be the ids' shape " << shape::str(ids)
                         << " and a row width";
  if (result.size() != 2 || result[1] != grad.back())
    return emitOpError() << "result shape " << shape::str(result)
                         << " should be [rows, " << grad.back() << "]";
  if (elemOf(getGrad()) != cast<RankedTensorType>(getType()).getElementType())
    return emitOpError() << "result element type should be "
                         << elemOf(getGrad());
  return success();
}
LogicalResult AfterOp::verify() { return verifyUnary(*this); }
LogicalResult CopyOp::verify() {
  if (getInput().getType() != getType())
    return emitOpError() << "moves a value without changing it: the result "
                            "type must be the input's, "
                         << getInput().getType();
  return success();
}

LogicalResult SelectOp::verify() {
  if (shapeOf(getCondition()).size() != 0)
    return emitOpError() << "condition must be 0-d, not "
                         << shape::str(shapeOf(getCondition()));
  auto t = cast<RankedTensorType>(getType());
  for (Value v : {getOnTrue(), getOnFalse()}) {
    auto vt = cast<RankedTensorType>(v.getType());
    if (vt.getShape() != t.getShape() ||
        vt.getElementType() != t.getElementType())
      return emitOpError() << "picks between tensors of the result's shape "
                              "and element type "
                           << t << ", not " << vt;
  }
  return success();
}
LogicalResult CausalMaskOp::verify() {
  if (shapeOf(getInput()).size() < 2)
    return emitOpError() << "needs rank >= 2 ([..., query, key]), not "
                         << shape::str(shapeOf(getInput()));
  return verifyUnary(*this);
}

/// A causal softmax (or its gradient) normalizes the last dim of matrices.
static LogicalResult verifyCausal(Operation *op, bool causal, int64_t axis,
                                  int64_t rank) {
  if (!causal)
    return success();
  if (rank < 2)
    return op->emitOpError()
           << "is causal, which needs [query, key] matrices in the last two "
              "dims, but its operand has rank "
           << rank;
  if (axis != -1 && axis != rank - 1)
    return op->emitOpError() << "is causal, which normalizes the last dim (the "
                                "keys), but its axis is "
                             << axis;
  return success();
}

LogicalResult SoftmaxOp::verify() {
  if (failed(verifySoftmax(*this)))
    return failure();
  return verifyCausal(*this, getCausal(), getAxis(),
                      shapeOf(getInput()).size());
}

/// A fused gradient: operands of one shape and element type, and a result
/// of that type.
static LogicalResult verifyGrad(Operation *op, Value grad, Value other) {
  if (failed(verifySameElementType(op, {grad, other})))
    return failure();
  if (shapeOf(grad) != shapeOf(other))
    return op->emitOpError()
           << "operands have shapes " << shape::str(shapeOf(grad)) << " and "
           << shape::str(shapeOf(other)) << "; they must be the same";
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  if (result.getShape() != shapeOf(grad) ||
      result.getElementType() != elemOf(grad))
    return op->emitOpError() << "result must have the operands' type";
  return success();
}

/// Adam's decay rates, of pc.adam_update and pc.adam8_update.
template <typename AdamOp> static LogicalResult verifyBetas(AdamOp op) {
  double b1 = op.getBeta1().convertToDouble(),
         b2 = op.getBeta2().convertToDouble();
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1))
    return op.emitOpError("beta1 and beta2 must be in [0, 1)");
  return success();
}

LogicalResult AdamUpdateOp::verify() {
  ArrayRef<int64_t> shape = shapeOf(getWeight());
  for (auto [i, v] : llvm::enumerate(getOperands())) {
    if (!elemOf(v).isF32())
      return emitOpError() << "operand #" << i << " must be f32, not "
                           << elemOf(v);
    if (i < 4 && shapeOf(v) != shape)
      return emitOpError() << "operand #" << i << " has shape "
                           << shape::str(shapeOf(v)) << "; the weight's is "
                           << shape::str(shape);
    if (i >= 4 && !shapeOf(v).empty())
      return emitOpError() << "operand #" << i << " must be a scalar (rank 0)";
  }
  for (Value r : getResults())
    if (shapeOf(r) != shape || !elemOf(r).isF32())
      return emitOpError("results must have the weight's type");
  return verifyBetas(*this);
}

LogicalResult Adam8UpdateOp::verify() {
  SmallVector<int64_t> shape(shapeOf(getWeight()));
  if (shape.empty())
    return emitOpError("needs a weight of rank >= 1");
  SmallVector<int64_t> scales(shape);
  scales.back() = (scales.back() + 255) / 256;
  auto check = [&](Value v, ArrayRef<int64_t> want, bool codes,
                   StringRef what) -> LogicalResult {
    bool typeOk = codes ? elemOf(v).isUnsignedInteger(8) : elemOf(v).isF32();
    if (!typeOk || shapeOf(v) != want)
      return emitOpError() << what << " must be " << (codes ? "ui8" : "f32")
                           << " of shape " << shape::str(want) << ", not "
                           << v.getType();
    return success();
  };
  if (failed(check(getWeight(), shape, false, "the weight")) ||
      failed(check(getGrad(), shape, false, "the gradient")) ||
      failed(check(getM(), shape, true, "m")) ||
      failed(check(getV(), shape, true, "v")) ||
      failed(check(getMScale(), scales, false, "m_scale (one per block)")) ||
      failed(check(getVScale(), scales, false, "v_scale (one per block)")) ||
      failed(check(getLr(), {}, false, "lr")) ||
      failed(check(getBiasCorrection1(), {}, false, "bias_correction1")) ||
      failed(check(getBiasCorrection2(), {}, false, "bias_correction2")))
    return failure();
  for (auto [r, o] :
       llvm::zip(getResults(), ValueRange{getWeight(), getM(), getMScale(),
                                          getV(), getVScale()}))
    if (shapeOf(r) != shapeOf(o) || elemOf(r) != elemOf(o))
      return emitOpError("results must have the types of the weight, m, "
                         "m_scale, v and v_scale");
  return verifyBetas(*this);
}

LogicalResult GeluGradOp::verify() {
  return verifyGrad(*this, getGrad(), getInput());
}

LogicalResult SoftmaxGradOp::verify() {
  if (failed(shape::normalizeAxis(getAxis(), shapeOf(getGrad()).size(), "axis",
                                  [&] { return emitOpError(); })))
    return failure();
  if (failed(verifyCausal(*this, getCausal(), getAxis(),
                          shapeOf(getGrad()).size())))
    return failure();
  return verifyGrad(*this, getGrad(), getOutput());
}
LogicalResult LogSoftmaxOp::verify() { return verifySoftmax(*this); }

LogicalResult LayerNormOp::verify() {
  auto emit = [&] { return emitOpError(); };
  if (failed(
          verifySameElementType(*this, {getInput(), getGamma(), getBeta()})) ||
      failed(verifyEpsilon(*this, getEpsilon().convertToDouble())) ||
      failed(shape::normalizedDims(shapeOf(getInput()), getAxis(),
                                   shapeOf(getGamma()), "gamma", emit)) ||
      failed(shape::normalizedDims(shapeOf(getInput()), getAxis(),
                                   shapeOf(getBeta()), "beta", emit)))
    return failure();
  return verifyUnary(*this);
}

LogicalResult LayerNormGradOp::verify() {
  auto emit = [&] { return emitOpError(); };
  if (failed(verifyGrad(*this, getGrad(), getInput())) ||
      failed(verifySameElementType(*this, {getGrad(), getGamma()})) ||
      failed(verifyEpsilon(*this, getEpsilon().convertToDouble())) ||
      failed(shape::normalizedDims(shapeOf(getInput()), getAxis(),
                                   shapeOf(getGamma()), "gamma", emit)))
    return failure();
  return success();
}

LogicalResult LayerNormScaleGradOp::verify() {
  auto emit = [&] { return emitOpError(); };
  if (failed(verifySameElementType(*this, {getGrad(), getInput()})) ||
      failed(verifyEpsilon(*this, getEpsilon().convertToDouble())))
    return failure();
  if (shapeOf(getGrad()) != shapeOf(getInput()))
    return emitOpError() << "operands have shapes "
                         << shape::str(shapeOf(getGrad())) << " and "
                         << shape::str(shapeOf(getInput()))
                         << "; they must be the same";
  if (elemOf(getResult()) != elemOf(getGrad()))
    return emitOpError("result must have the operands' element type");
  if (failed(shape::normalizedDims(shapeOf(getInput()), getAxis(),
                                   shapeOf(getResult()), "result", emit)))
    return failure();
  return success();
}

LogicalResult RmsNormOp::verify() {
  auto emit = [&] { return emitOpError(); };
  if (failed(verifySameElementType(*this, {getInput(), getGamma()})) ||
      failed(verifyEpsilon(*this, getEpsilon().convertToDouble())) ||
      failed(shape::normalizedDims(shapeOf(getInput()), getAxis(),
                                   shapeOf(getGamma()), "gamma", emit)))
    return failure();
  return verifyUnary(*this);
}

LogicalResult ReduceSumOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMeanOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMaxOp::verify() { return verifyReduce(*this); }

LogicalResult ReshapeOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "cannot reshape " << shape::str(in.getShape())
                         << " (" << in.getNumElements() << " elements) to "
                         << shape::str(out.getShape()) << " ("
                         << out.getNumElements() << " elements)";
  return verifyResult(*this, shape::Shape(out.getShape()), in.getElementType());
}

LogicalResult TransposeOp::verify() {
  return verifyResult(*this,
                      shape::transpose(shapeOf(getInput()), getPerm(),
                                       [&] { return emitOpError(); }),
                      elemOf(getInput()));
}

LogicalResult BroadcastToOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  if (!shape::broadcastsTo(in, out))
    return emitOpError() << "operand shape " << shape::str(in)
                         << " does not broadcast to the result shape "
                         << shape::str(out);
  return verifyResult(*this, shape::Shape(out), elemOf(getInput()));
}

LogicalResult SliceOp::verify() {
  return verifyResult(*this,
                      shape::slice(shapeOf(getInput()), getStart(), getLimit(),
                                   [&] { return emitOpError(); }),
                      elemOf(getInput()));
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  if (failed(verifySameElementType(*this, getInputs())))
    return failure();
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : getInputs())
    shapes.push_back(shapeOf(v));
  return verifyResult(
      *this, shape::concat(shapes, getAxis(), [&] { return emitOpError(); }),
      elemOf(getInputs().front()));
}

LogicalResult EmbeddingOp::verify() {
  return verifyResult(*this,
                      shape::embedding(shapeOf(getIds()), shapeOf(getTable()),
                                       [&] { return emitOpError(); }),
                      elemOf(getTable()));
}

LogicalResult CrossEntropyOp::verify() {
  return verifyResult(*this,
                      shape::crossEntropy(shapeOf(getLogits()),
                                          shapeOf(getLabels()),
                                          [&] { return emitOpError(); }),
                      elemOf(getLogits()));
}

LogicalResult CastOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (in.getShape() != out.getShape())
    return emitOpError() << "changes the shape from "
                         << shape::str(in.getShape()) << " to "
                         << shape::str(out.getShape())
                         << "; a cast keeps the shape";
  return success();
}

LogicalResult ConstantOp::verify() {
  auto valueType = cast<ShapedType>(getValue().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (valueType.getShape() != result.getShape() ||
      valueType.getElementType() != result.getElementType())
    return emitOpError() << "value of type " << valueType
                         << " does not match the result type " << result;
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

ParseResult ConstantOp::parse(OpAsmParser &parser, OperationState &result) {
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr;
  // An elements literal parses its own `: type`, here the result type.
  if (parser.parseAttribute(attr) ||
      parser.parseOptionalAttrDict(result.attributes))
    return failure();
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return parser.emitError(loc, "expected a dense elements literal, such as "
                                 "dense<0.0> : tensor<4xf32>");
  auto type = dyn_cast<RankedTensorType>(dense.getType());
  if (!type)
    return parser.emitError(loc, "expected a ranked tensor type");
  auto logical = RankedTensorType::get(type.getShape(), type.getElementType());
  result.addAttribute(getValueAttrName(result.name), dense.reshape(logical));
  result.addTypes(type);
  return success();
}

void ConstantOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printAttributeWithoutType(getValue());
  // After the type: the parser reads `dense<...> : type` as one literal.
  p << " : " << getType();
  p.printOptionalAttrDict((*this)->getAttrs(), {getValueAttrName()});
}

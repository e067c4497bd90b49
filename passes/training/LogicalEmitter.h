//===- LogicalEmitter.h - Building logical ops from passes ------*- C++ -*-===//
//
// Shorthand for passes that write logical ops (autodiff's gradient rules,
// the optimizer): one builder and location, the ops' own result-type
// inference, and scalar constants that are either undecided or, when
// `scalarLayout` is set, in that layout (the optimizer replicates its
// scalars so that propagation has nothing to choose for them).
//
//===----------------------------------------------------------------------===//

#ifndef PC_PASSES_LOGICALEMITTER_H
#define PC_PASSES_LOGICALEMITTER_H

#include "dialect/PcOps.h"
#include "passes/PassUtils.h"

#include "mlir/IR/Builders.h"

namespace pc {

class LogicalEmitter {
public:
  LogicalEmitter(mlir::OpBuilder &b, mlir::Location loc,
                 SbpAttr scalarLayout = {})
      : b(b), loc(loc), scalarLayout(scalarLayout) {}

  static mlir::RankedTensorType typeOf(mlir::Value v) {
    return mlir::cast<mlir::RankedTensorType>(v.getType());
  }
  static mlir::Type elemOf(mlir::Value v) { return typeOf(v).getElementType(); }

  /// A tensor of `shape` filled with `v`, in `elem`, without a layout.
  mlir::Value fill(double v, llvm::ArrayRef<int64_t> shape, mlir::Type elem) {
    auto t = mlir::RankedTensorType::get(shape, elem);
    return ConstantOp::create(
        b, loc, t,
        mlir::DenseElementsAttr::get(
            t, llvm::ArrayRef<mlir::Attribute>{mlir::FloatAttr::get(elem, v)}));
  }
  /// A 0-d `v` in `elem`, in `scalarLayout` when set.
  mlir::Value scalar(double v, mlir::Type elem) {
    auto plain = mlir::RankedTensorType::get({}, elem);
    auto t = mlir::cast<mlir::RankedTensorType>(withSbp(plain, scalarLayout));
    return ConstantOp::create(b, loc, t,
                              mlir::DenseElementsAttr::get(
                                  plain, llvm::ArrayRef<mlir::Attribute>{
                                             mlir::FloatAttr::get(elem, v)}));
  }
  mlir::Value scalarLike(double v, mlir::Value like) {
    return scalar(v, elemOf(like));
  }
  /// `x`, a scalar in some layout, moved to `scalarLayout` if it differs.
  mlir::Value here(mlir::Value x) {
    SbpAttr s = getSbp(x.getType());
    if (!s || !scalarLayout || s == scalarLayout)
      return x;
    return ToSbpOp::create(b, loc, withSbp(x.getType(), scalarLayout), x);
  }

  mlir::Value add(mlir::Value x, mlir::Value y) {
    return AddOp::create(b, loc, x, y);
  }
  mlir::Value sub(mlir::Value x, mlir::Value y) {
    return SubOp::create(b, loc, x, y);
  }
  mlir::Value mul(mlir::Value x, mlir::Value y) {
    return MulOp::create(b, loc, x, y);
  }
  mlir::Value div(mlir::Value x, mlir::Value y) {
    return DivOp::create(b, loc, x, y);
  }
  mlir::Value neg(mlir::Value x) { return NegOp::create(b, loc, x); }
  mlir::Value exp(mlir::Value x) { return ExpOp::create(b, loc, x); }
  mlir::Value log(mlir::Value x) { return LogOp::create(b, loc, x); }
  mlir::Value tanh(mlir::Value x) { return TanhOp::create(b, loc, x); }
  mlir::Value sqrt(mlir::Value x) { return SqrtOp::create(b, loc, x); }
  mlir::Value erf(mlir::Value x) { return ErfOp::create(b, loc, x); }
  mlir::Value relu(mlir::Value x) { return ReluOp::create(b, loc, x); }
  mlir::Value scale(mlir::Value x, double k) {
    return mul(x, scalarLike(k, x));
  }
  mlir::Value matmul(mlir::Value x, mlir::Value y, bool tx, bool ty,
                     double alpha = 1.0) {
    return MatmulOp::create(b, loc, x, y, tx, ty, alpha);
  }
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape) {
    if (typeOf(x).getShape() == shape)
      return x;
    return ReshapeOp::create(b, loc,
                             mlir::RankedTensorType::get(shape, elemOf(x)), x);
  }
  mlir::Value broadcastTo(mlir::Value x, llvm::ArrayRef<int64_t> shape) {
    if (typeOf(x).getShape() == shape)
      return x;
    return BroadcastToOp::create(
        b, loc, mlir::RankedTensorType::get(shape, elemOf(x)), x);
  }
  mlir::Value sum(mlir::Value x, llvm::ArrayRef<int64_t> axes, bool keepdim) {
    return ReduceSumOp::create(b, loc, x, axes, keepdim);
  }
  /// The sum of every element, 0-d.
  mlir::Value sumAll(mlir::Value x) {
    llvm::SmallVector<int64_t> axes;
    for (int64_t d = 0; d < typeOf(x).getRank(); ++d)
      axes.push_back(d);
    return axes.empty() ? x : sum(x, axes, /*keepdim=*/false);
  }
  mlir::Value mean(mlir::Value x, llvm::ArrayRef<int64_t> axes) {
    return ReduceMeanOp::create(b, loc, x, axes, /*keepdim=*/true);
  }
  mlir::Value max(mlir::Value x, llvm::ArrayRef<int64_t> axes) {
    return ReduceMaxOp::create(b, loc, x, axes, /*keepdim=*/true);
  }
  mlir::Value compare(mlir::Value x, mlir::Value y, Comparison p) {
    return CompareOp::create(b, loc, x, y, p);
  }
  mlir::Value slice(mlir::Value x, llvm::ArrayRef<int64_t> start,
                    llvm::ArrayRef<int64_t> limit) {
    return SliceOp::create(b, loc, x, start, limit);
  }
  mlir::Value concat(mlir::ValueRange xs, int64_t axis) {
    return ConcatOp::create(b, loc, xs, axis);
  }

  mlir::OpBuilder &b;
  mlir::Location loc;
  SbpAttr scalarLayout;
};

} // namespace pc

#endif // PC_PASSES_LOGICALEMITTER_H

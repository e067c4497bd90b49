//===- GradientRules.h - The gradient of each logical op --------*- C++ -*-===//
//
// Reverse-mode rules for --pc-autodiff: given an op and the gradients of
// its results, build the gradients of its operands out of logical ops, so
// that SBP propagation and boxing see the backward pass like any other
// graph. Rules work on logical values before propagation: the values they
// create carry no layout.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PASSES_GRADIENTRULES_H
#define PC_PASSES_GRADIENTRULES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

#include <functional>

namespace pc {

/// What a rule sees: the op, its result gradients (null where a result has
/// none), which operands need one, and a builder placed where the backward
/// ops go.
struct GradientContext {
  mlir::OpBuilder &builder;
  mlir::Operation *op;
  llvm::ArrayRef<mlir::Value> resultGrads;
  std::function<bool(unsigned operand)> needsGrad;
};

/// Fills `operandGrads` (one per operand, null where none is needed or the
/// operand is not differentiable), or fails with a diagnostic on the op
/// when it has no gradient rule.
llvm::LogicalResult
buildGradients(GradientContext &context,
               llvm::SmallVectorImpl<mlir::Value> &operandGrads);

/// `grad` summed over the dims that broadcasting added or stretched, so
/// that it has `shape` (the operand's shape before broadcasting).
mlir::Value sumToShape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                       llvm::ArrayRef<int64_t> shape);

} // namespace pc

#endif // PC_PASSES_GRADIENTRULES_H

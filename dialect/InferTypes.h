//===- InferTypes.h - Result types the op builders infer --------*- C++ -*-===//
//
// The builders of the logical ops that can infer their result type use
// these: the shape from dialect/ShapeInference.h, the operand's element
// type, and no layout (propagation decides it). When the operands break a
// shape rule, the inferred type falls back to the first operand's, and the
// verifier then reports the rule.
//
//===----------------------------------------------------------------------===//

#ifndef PC_DIALECT_INFERTYPES_H
#define PC_DIALECT_INFERTYPES_H

#include "mlir/IR/Value.h"
#include "mlir/IR/ValueRange.h"

namespace pc::infer {

mlir::Type sameAs(mlir::Value v);
mlir::Type broadcast(mlir::Value lhs, mlir::Value rhs);
mlir::Type matmul(mlir::Value lhs, mlir::Value rhs, bool transposeLhs,
                  bool transposeRhs);
mlir::Type reduce(mlir::Value input, llvm::ArrayRef<int64_t> axes,
                  bool keepdim);
mlir::Type transpose(mlir::Value input, llvm::ArrayRef<int64_t> perm);
mlir::Type slice(mlir::Value input, llvm::ArrayRef<int64_t> start,
                 llvm::ArrayRef<int64_t> limit);
mlir::Type concat(mlir::ValueRange inputs, int64_t axis);
mlir::Type embedding(mlir::Value ids, mlir::Value table);
mlir::Type crossEntropy(mlir::Value logits, mlir::Value labels);

} // namespace pc::infer

#endif // PC_DIALECT_INFERTYPES_H

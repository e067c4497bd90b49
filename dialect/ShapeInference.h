//===- ShapeInference.h - Result shapes of the logical ops ------*- C++ -*-===//
//
// The shape rules of the logical ops, shared by their verifiers and by the
// C++ graph-building API (which builds result types from them). Each rule
// reports a violation through `emitError`, naming the operand and the value,
// and returns failure.
//
//===----------------------------------------------------------------------===//

#ifndef PC_DIALECT_SHAPEINFERENCE_H
#define PC_DIALECT_SHAPEINFERENCE_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallVector.h"

namespace pc::shape {

using Shape = llvm::SmallVector<int64_t, 4>;
using EmitErrorFn = llvm::function_ref<mlir::InFlightDiagnostic()>;

/// "8x64", or "a scalar" for rank 0.
std::string str(llvm::ArrayRef<int64_t> shape);

/// `axis` in [0, rank) for `axis` in [-rank, rank); `what` names the
/// attribute in the diagnostic.
llvm::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                       llvm::StringRef what,
                                       EmitErrorFn emitError);

/// NumPy broadcasting of two shapes.
llvm::FailureOr<Shape> broadcast(llvm::ArrayRef<int64_t> lhs,
                                 llvm::ArrayRef<int64_t> rhs,
                                 EmitErrorFn emitError);

/// True when `from` broadcasts to exactly `to`.
bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

llvm::FailureOr<Shape> matmul(llvm::ArrayRef<int64_t> lhs,
                              llvm::ArrayRef<int64_t> rhs, bool transposeLhs,
                              bool transposeRhs, EmitErrorFn emitError);

/// Also returns the normalized axes through `normalized` when non-null.
llvm::FailureOr<Shape>
reduce(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> axes,
       bool keepdim, EmitErrorFn emitError,
       llvm::SmallVectorImpl<int64_t> *normalized = nullptr);

llvm::FailureOr<Shape> transpose(llvm::ArrayRef<int64_t> input,
                                 llvm::ArrayRef<int64_t> perm,
                                 EmitErrorFn emitError);

llvm::FailureOr<Shape> slice(llvm::ArrayRef<int64_t> input,
                             llvm::ArrayRef<int64_t> start,
                             llvm::ArrayRef<int64_t> limit,
                             EmitErrorFn emitError);

llvm::FailureOr<Shape> concat(llvm::ArrayRef<llvm::ArrayRef<int64_t>> inputs,
                              int64_t axis, EmitErrorFn emitError);

llvm::FailureOr<Shape> embedding(llvm::ArrayRef<int64_t> ids,
                                 llvm::ArrayRef<int64_t> table,
                                 EmitErrorFn emitError);

llvm::FailureOr<Shape> crossEntropy(llvm::ArrayRef<int64_t> logits,
                                    llvm::ArrayRef<int64_t> labels,
                                    EmitErrorFn emitError);

/// Checks that `param` (gamma or beta, named by `what`) has the shape of the
/// trailing dims of `input` from `axis` on, and returns the normalized axis.
llvm::FailureOr<int64_t> normalizedDims(llvm::ArrayRef<int64_t> input,
                                        int64_t axis,
                                        llvm::ArrayRef<int64_t> param,
                                        llvm::StringRef what,
                                        EmitErrorFn emitError);

} // namespace pc::shape

#endif // PC_DIALECT_SHAPEINFERENCE_H

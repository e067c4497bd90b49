//===- BoxingLowering.h - Emitting planned boxing steps as ops --*- C++ -*-===//

#ifndef PC_PASSES_BOXINGLOWERING_H
#define PC_PASSES_BOXINGLOWERING_H

#include "passes/PassUtils.h"

#include "mlir/IR/Builders.h"

namespace pc {

/// Emits the step ops of `plan` on `mesh`, starting from `input`, and
/// returns the last value (`input` when the plan is empty).
mlir::Value emitPlan(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                     mlir::FlatSymbolRefAttr mesh, const boxing::Plan &plan);

/// Emits one step whose result has type `resultType`: the logical type in
/// the layout `step.after`, or, in a per-device program, the local type.
mlir::Value emitStep(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                     mlir::Type resultType, mlir::FlatSymbolRefAttr mesh,
                     const boxing::Step &step);

} // namespace pc

#endif // PC_PASSES_BOXINGLOWERING_H

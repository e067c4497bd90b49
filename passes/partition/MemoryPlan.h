//===- MemoryPlan.h - Predicted device memory of a program ------*- C++ -*-===//
//
// The analysis behind --pc-memory-plan (MemoryPlan.cpp): a per-device
// program's peak device memory, and what is live at it, predicted before
// anything runs.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PASSES_MEMORYPLAN_H
#define PC_PASSES_MEMORYPLAN_H

#include "dialect/ProgramAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace pc {

/// `program`'s predicted peak and its breakdown (a per-device program).
attrs::MemoryUse predictMemory(mlir::func::FuncOp program);
/// The ops of `f` in the order the runtime runs them. An actor fires once
/// its inputs are there; the ordered ones (communication, and in a
/// pipelined program everything, by its schedule's actions) also after the
/// ordered one before them. Ready ops go first come, first served: a
/// compute op that needs only parameters or constants runs at the start,
/// however late the program lists it, and its result waits there for its
/// users.
llvm::SmallVector<mlir::Operation *> runOrder(mlir::func::FuncOp f);
/// "64.0 MiB".
std::string formatBytes(int64_t bytes);
/// "peak 80.3 MiB: parameters 10.0 MiB, gradients ..., workspace ...".
std::string describeMemory(const attrs::MemoryUse &use);

} // namespace pc

#endif // PC_PASSES_MEMORYPLAN_H

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
/// "64.0 MiB".
std::string formatBytes(int64_t bytes);
/// "peak 80.3 MiB: parameters 10.0 MiB, gradients ..., workspace ...".
std::string describeMemory(const attrs::MemoryUse &use);

} // namespace pc

#endif // PC_PASSES_MEMORYPLAN_H

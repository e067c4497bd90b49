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
/// With `inPlaceUpdates` a piece that is stored over goes after its last
/// reader (CpuSession::setInPlaceUpdates); otherwise it stays to the step's
/// end beside the new one (the step's transaction).
attrs::MemoryUse predictMemory(mlir::func::FuncOp program,
                               bool inPlaceUpdates = false);
/// The ops of `f` in the order the runtime runs them. An actor fires once
/// its inputs are there; the ordered ones (communication, and in a
/// pipelined program everything, by its schedule's actions) also after the
/// ordered one before them. Ready ops go first come, first served: a
/// compute op that needs only parameters or constants runs at the start,
/// however late the program lists it, and its result waits there for its
/// users.
/// Which ready op runs first: the one that became ready first (the
/// runtime's dispatcher, as ops become ready one by one), the first in
/// the program (its choice among ops ready together: when a collective's
/// result comes late, what waited on it and what became ready meanwhile),
/// or the first ready compute op, communication only when no compute is
/// ready (the communication stream as far behind as the program lets it
/// fall: its members wait for each other, the compute stream goes on).
enum class ReadyPick { FirstReady, FirstInProgram, CommunicationLast };
llvm::SmallVector<mlir::Operation *>
runOrder(mlir::func::FuncOp f, ReadyPick pick = ReadyPick::FirstReady);
/// "64.0 MiB".
std::string formatBytes(int64_t bytes);
/// "peak 80.3 MiB: parameters 10.0 MiB, gradients ..., workspace ...".
std::string describeMemory(const attrs::MemoryUse &use);

} // namespace pc

#endif // PC_PASSES_MEMORYPLAN_H

//===- PassUtils.h - Helpers shared by the pc passes ------------*- C++ -*-===//

#ifndef PC_PASSES_PASSUTILS_H
#define PC_PASSES_PASSUTILS_H

#include "boxing/MeshCache.h"
#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Error.h"

namespace pc {

/// `type` with its encoding replaced by `sbp` (or dropped when null).
mlir::RankedTensorType withSbp(mlir::Type type, SbpAttr sbp);

SbpAttr makeSbp(mlir::MLIRContext *context, mlir::FlatSymbolRefAttr mesh,
                llvm::ArrayRef<SbpEntry> entries);

/// "ranks [0, 1]": the ranks of per-device program `f`, for messages.
/// A ranked tensor type of floats.
bool isFloatTensor(mlir::Type t);
/// The element type `op` computes in: its first operand's (null: none, or
/// not a ranked tensor).
mlir::Type computeElementType(mlir::Operation *op);

/// `f`'s loss by pc-autodiff's rule: the first result marked {pc.loss}, or
/// else its only result when that is a 0-d float tensor.
std::optional<unsigned> lossResult(mlir::func::FuncOp f);

/// Bytes of a ranked tensor type (0 for anything else).
int64_t tensorBytes(mlir::Type type);

/// Whether the runtime runs `op` on the communication stream, whose ops
/// keep their program order (the ops registerCpuCommKernels binds there).
bool isCommOp(mlir::Operation *op);

/// Ops made for `user` run in its pipeline stage and action (and are
/// backward work when it is).
void copyPlacement(mlir::Operation *user, mlir::Operation *op);

/// The optimizer's ops in `f`: those that read optimizer state or the
/// learning rate, and everything computed from them. The loss scale is
/// optimizer state that the backward pass reads too (its seed), so it does
/// not count: only what the update does with it.
llvm::DenseSet<mlir::Operation *> optimizerOps(mlir::func::FuncOp f);

std::string ranksText(mlir::func::FuncOp f);

/// The module's cost model (pc-cost-model), or the rates of this machine's
/// CPU virtual devices (planner/clusters/cpu-virtual.json) when it has none.
attrs::CostModel costModelOf(mlir::ModuleOp module);

/// The rates of the cluster spec at `path` (planner/ClusterSpec.h) as the
/// module records them (pc-cost-model), with `dtype`'s peak.
llvm::Expected<attrs::CostModel> costModelFromSpec(llvm::StringRef path,
                                                   llvm::StringRef dtype);

/// Calls `fn` on every func.func of `module` with a body, in order.
template <typename Fn> void forEachGraph(mlir::ModuleOp module, Fn fn) {
  for (auto f : module.getOps<mlir::func::FuncOp>())
    if (!f.isExternal())
      fn(f);
}

} // namespace pc

#endif // PC_PASSES_PASSUTILS_H

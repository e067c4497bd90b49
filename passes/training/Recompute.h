//===- Recompute.h - What pc-recompute makes again -------------*- C++ -*-===//
//
// The segments of a training graph that --pc-recompute makes again for
// the backward pass (Recompute.cpp), for the passes that plan around it
// (pc-auto-parallel's memory replay).
//
//===----------------------------------------------------------------------===//

#ifndef PC_PASSES_TRAINING_RECOMPUTE_H
#define PC_PASSES_TRAINING_RECOMPUTE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

namespace pc {

/// The forward pass: the ops the loss depends on; none when the graph has
/// no loss. The rest of the body is the backward pass and the update.
llvm::DenseSet<mlir::Operation *> forwardOps(mlir::func::FuncOp f);

/// Full recompute's segments: runs of forward ops (program order) with
/// one key, the user's pc.segment when any op has one, else the layer of
/// the parameters read (`h0.attn.q` -> `h0`).
llvm::SmallVector<llvm::SmallVector<mlir::Operation *>>
layerSegments(mlir::func::FuncOp f,
              const llvm::DenseSet<mlir::Operation *> &forward);

/// Selective recompute's segments, the attention cores: each pc.softmax
/// that feeds a pc.matmul, with the ops of its shape before it, back to
/// the pc.matmul of its scores.
llvm::SmallVector<llvm::SmallVector<mlir::Operation *>>
attentionCores(mlir::func::FuncOp f,
               const llvm::DenseSet<mlir::Operation *> &forward);

} // namespace pc

#endif // PC_PASSES_TRAINING_RECOMPUTE_H

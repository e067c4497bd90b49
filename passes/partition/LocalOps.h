//===- LocalOps.h - One device's form of a logical op -----------*- C++ -*-===//

#ifndef PC_PASSES_LOCALOPS_H
#define PC_PASSES_LOCALOPS_H

#include "passes/PassUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace pc {

/// What one global rank sees of a module: its position on each mesh.
class RankView {
public:
  RankView(MeshCache &meshes, int64_t rank) : meshes(meshes), rank(rank) {}

  int64_t getRank() const { return rank; }
  /// The rank's mesh coordinates on `mesh`, or nullopt when it is not on it.
  std::optional<llvm::SmallVector<int64_t, 4>>
  coords(mlir::FlatSymbolRefAttr mesh);
  /// The rank's local type of a value of logical `type`, or nullopt when the
  /// value does not live on the rank.
  std::optional<mlir::RankedTensorType> localType(mlir::Type type);
  /// The extent along `dim` of the piece of every member of the rank's group
  /// over `axes`, in group order, for a tensor of `shape` laid out by `sbp`.
  llvm::SmallVector<int64_t> memberExtents(llvm::ArrayRef<int64_t> shape,
                                           SbpAttr sbp,
                                           llvm::ArrayRef<int64_t> axes,
                                           int64_t dim);
  MeshCache &getMeshes() { return meshes; }

private:
  MeshCache &meshes;
  int64_t rank;
  llvm::DenseMap<mlir::Attribute, std::optional<llvm::SmallVector<int64_t, 4>>>
      coordCache;
};

/// Emits the rank's form of `op` at `b`, mapping operands through `map` and
/// recording its results there. Ops whose values do not live on the rank
/// emit nothing.
mlir::LogicalResult emitLocalOp(mlir::Operation *op, mlir::OpBuilder &b,
                                mlir::IRMapping &map, RankView &view,
                                boxing::Planner &planner);

} // namespace pc

#endif // PC_PASSES_LOCALOPS_H

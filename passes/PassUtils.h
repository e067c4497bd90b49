//===- PassUtils.h - Helpers shared by the pc passes ------------*- C++ -*-===//

#ifndef PC_PASSES_PASSUTILS_H
#define PC_PASSES_PASSUTILS_H

#include "dialect/PcOps.h"
#include "passes/BoxingPlanner.h"

#include "llvm/ADT/DenseMap.h"

namespace pc {

/// Finds the meshes of a module by name, once each.
class MeshCache {
public:
  explicit MeshCache(mlir::ModuleOp module) : module(module) {}
  /// The mesh named `name`, or null.
  MeshOp lookup(mlir::FlatSymbolRefAttr name);
  MeshOp lookup(SbpAttr sbp) { return lookup(sbp.getMesh()); }
  /// The module's only mesh, or null when it has none or several.
  MeshOp onlyMesh();
  /// The position of global rank `rank` on `mesh`, or -1 when it is not on
  /// it. Constant time: explicit rank lists are indexed once.
  int64_t positionOf(mlir::FlatSymbolRefAttr mesh, int64_t rank);

private:
  mlir::ModuleOp module;
  llvm::DenseMap<mlir::StringAttr, MeshOp> meshes;
  llvm::DenseMap<mlir::StringAttr, llvm::DenseMap<int64_t, int64_t>> positions;
};

/// Bytes per element of `type`'s element type.
int64_t elementBytes(mlir::Type type);

/// `type` with its encoding replaced by `sbp` (or dropped when null).
mlir::RankedTensorType withSbp(mlir::Type type, SbpAttr sbp);

SbpAttr makeSbp(mlir::MLIRContext *context, mlir::FlatSymbolRefAttr mesh,
                llvm::ArrayRef<SbpEntry> entries);

/// The planner's view of a mesh.
boxing::MeshInfo meshInfo(MeshOp mesh);

/// The boxing cost of converting a value of `type` from `src` to `dst`
/// (0 when equal), on one mesh or between two.
double conversionCost(boxing::Planner &planner, MeshCache &meshes,
                      mlir::Type type, SbpAttr src, SbpAttr dst);

/// Calls `fn` on every func.func of `module` with a body, in order.
template <typename Fn> void forEachGraph(mlir::ModuleOp module, Fn fn) {
  for (auto f : module.getOps<mlir::func::FuncOp>())
    if (!f.isExternal())
      fn(f);
}

} // namespace pc

#endif // PC_PASSES_PASSUTILS_H

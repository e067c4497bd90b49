//===- MeshCache.h - Meshes of a module, for the planner --------*- C++ -*-===//
//
// The IR side of the boxing library: a module's meshes by name and the
// position of a rank on each, and the planner's (boxing/BoxingPlanner.h)
// view of them. The passes plan boxing with it; the runtime derives the
// groups of its collectives and the plans of its transfers with the same
// code, so the two cannot disagree.
//
//===----------------------------------------------------------------------===//

#ifndef PC_BOXING_MESHCACHE_H
#define PC_BOXING_MESHCACHE_H

#include "boxing/BoxingPlanner.h"
#include "dialect/PcOps.h"

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
  mlir::ModuleOp getModule() const { return module; }

private:
  mlir::ModuleOp module;
  llvm::DenseMap<mlir::StringAttr, MeshOp> meshes;
  llvm::DenseMap<mlir::StringAttr, llvm::DenseMap<int64_t, int64_t>> positions;
};

/// Bytes per element of `type`'s element type.
int64_t elementBytes(mlir::Type type);

/// The planner's view of a mesh.
boxing::MeshInfo meshInfo(MeshOp mesh);

/// The boxing planner's costs for `module`: from its pc.cost_model (the
/// link's latency in bytes it could have moved meanwhile), else the
/// defaults. Every planner of the compiler and the runtime is made with
/// these, so that they plan alike.
boxing::CostParams costParams(mlir::ModuleOp module);

/// The boxing cost of converting a value of `type` from `src` to `dst`
/// (0 when equal), on one mesh or between two.
double conversionCost(boxing::Planner &planner, MeshCache &meshes,
                      mlir::Type type, SbpAttr src, SbpAttr dst);

} // namespace pc

#endif // PC_BOXING_MESHCACHE_H

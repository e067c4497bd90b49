//===- MeshCache.cpp - Meshes of a module, for the planner ----------------===//

#include "boxing/MeshCache.h"
#include "dialect/ProgramAttrs.h"

using namespace mlir;

namespace pc {

boxing::CostParams costParams(ModuleOp module) {
  boxing::CostParams params;
  if (std::optional<attrs::CostModel> m = attrs::getCostModel(module))
    params.latencyBytes = m->linkLatency * m->linkBandwidth;
  return params;
}

MeshOp MeshCache::lookup(FlatSymbolRefAttr name) {
  auto it = meshes.find(name.getAttr());
  if (it != meshes.end())
    return it->second;
  auto mesh =
      dyn_cast_or_null<MeshOp>(SymbolTable::lookupSymbolIn(module, name));
  meshes[name.getAttr()] = mesh;
  return mesh;
}

MeshOp MeshCache::onlyMesh() {
  auto all = module.getOps<MeshOp>();
  if (std::distance(all.begin(), all.end()) != 1)
    return {};
  return *all.begin();
}

int64_t MeshCache::positionOf(FlatSymbolRefAttr name, int64_t rank) {
  MeshOp mesh = lookup(name);
  std::optional<ArrayRef<int64_t>> ranks = mesh.getRanks();
  if (!ranks)
    return rank >= 0 && rank < mesh.getNumDevices() ? rank : -1;
  auto [it, inserted] = positions.try_emplace(name.getAttr());
  if (inserted)
    for (auto [p, r] : llvm::enumerate(*ranks))
      it->second[r] = p;
  auto found = it->second.find(rank);
  return found == it->second.end() ? -1 : found->second;
}

int64_t elementBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return (tensor.getElementTypeBitWidth() + 7) / 8;
}

boxing::MeshInfo meshInfo(MeshOp mesh) {
  boxing::MeshInfo info;
  info.shape.assign(mesh.getShape().begin(), mesh.getShape().end());
  for (int64_t i = 0, n = mesh.getNumDevices(); i < n; ++i)
    info.ranks.push_back(mesh.getRank(i));
  return info;
}

double conversionCost(boxing::Planner &planner, MeshCache &meshes, Type type,
                      SbpAttr src, SbpAttr dst) {
  if (src == dst)
    return 0;
  auto tensor = cast<RankedTensorType>(type);
  MeshOp a = meshes.lookup(src), b = meshes.lookup(dst);
  if (src.getMesh() == dst.getMesh())
    return planner.cost(tensor.getShape(), elementBytes(type), a.getShape(),
                        src.getEntries(), dst.getEntries());
  return planner
      .planTransfer(tensor.getShape(), elementBytes(type), meshInfo(a),
                    src.getEntries(), meshInfo(b), dst.getEntries())
      .cost;
}

} // namespace pc

//===- BoxingPlanner.h - Collective sequences between SBPs ------*- C++ -*-===//
//
// Plans the conversion of a tensor from one nd-SBP to another on one mesh as
// the cheapest sequence of steps (collectives and local ops), and between two
// meshes as point-to-point transfers framed by such sequences.
//
// The search is a shortest path over nd-SBP states. A step changes the
// entries of a contiguous range of mesh axes, all equal before and all equal
// after, by one 1-D transition:
//
//   P -> B all-reduce     P -> S reduce-scatter   S -> B all-gather
//   S(i) -> S(j) all-to-all    B -> S local slice
//   B -> P, S -> P local (identity elsewhere)
//
// Chains of such steps can move more than must move: an axis swap on a 2x2
// mesh, [S(0), S(1)] -> [S(1), S(0)], takes all-to-alls moving 1.75x the
// bytes the off-diagonal positions lack. So the planner also weighs the
// direct move: collectives that remove the source's partial entries, one
// redistribution (an all-to-all-v of boxes in which every position receives
// exactly what it lacks), then local steps to the target's partials.
//
// Because nd-SBPs apply hierarchically, a step is valid only when no mesh
// axis after the range splits a tensor dim the step touches; otherwise the
// pieces of later axes would be cut differently before and after. This is
// what upstream MLIR misses for [S(0), S(0)] -> [B, B], which takes an
// all-gather over the inner axis first.
//
//===----------------------------------------------------------------------===//

#ifndef PC_BOXING_BOXINGPLANNER_H
#define PC_BOXING_BOXINGPLANNER_H

#include "boxing/CostModel.h"

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace pc::boxing {

/// A sequence of steps on one mesh; empty when the layouts are equal.
struct Plan {
  std::vector<Step> steps;
  double cost = 0;
  int64_t numCollectives() const;
};

/// One mesh as the planner sees it: its shape and the global rank of each
/// position.
struct MeshInfo {
  std::vector<int64_t> shape;
  std::vector<int64_t> ranks;
};

/// A point-to-point copy of a box of the logical tensor, between mesh
/// positions of two meshes.
struct Transfer {
  int64_t srcPosition = 0;
  int64_t dstPosition = 0;
  Box box;
  /// True when both positions are the same global rank: a local copy.
  bool local = false;
};

/// A layout change between two meshes: `pre` on the source mesh removes the
/// partial entries, `transfers` move the pieces each destination position
/// needs, `post` on the destination mesh adds its partial entries.
struct TransferPlan {
  Plan pre;
  std::vector<SbpEntry> sent;     // the layout `pre` leaves on the source
  std::vector<SbpEntry> received; // the layout on the destination mesh
  std::vector<Transfer> transfers;
  Plan post;
  double cost = 0;
};

/// Plans boxings and caches the plans; one instance per compilation.
class Planner {
public:
  explicit Planner(CostParams params = {}) : params(params) {}

  /// The cheapest plan from `src` to `dst` for a tensor of `shape` on a mesh
  /// of `meshShape`. Both SBPs must be valid for the shape and mesh.
  const Plan &plan(std::span<const int64_t> shape, int64_t elemBytes,
                   std::span<const int64_t> meshShape,
                   std::span<const SbpEntry> src,
                   std::span<const SbpEntry> dst);

  /// The cost of plan(...), cached.
  double cost(std::span<const int64_t> shape, int64_t elemBytes,
              std::span<const int64_t> meshShape, std::span<const SbpEntry> src,
              std::span<const SbpEntry> dst) {
    return plan(shape, elemBytes, meshShape, src, dst).cost;
  }

  /// The cheapest transfer between two meshes.
  TransferPlan planTransfer(std::span<const int64_t> shape, int64_t elemBytes,
                            const MeshInfo &srcMesh,
                            std::span<const SbpEntry> src,
                            const MeshInfo &dstMesh,
                            std::span<const SbpEntry> dst);

  const CostParams &getParams() const { return params; }

private:
  /// The best plan: the collectives' or a direct redistribution's.
  Plan search(std::span<const int64_t> shape, int64_t elemBytes,
              std::span<const int64_t> meshShape, std::span<const SbpEntry> src,
              std::span<const SbpEntry> dst);
  /// The cheapest sequence of 1-D steps (a shortest path), cached.
  const Plan &collectivePlan(std::span<const int64_t> shape, int64_t elemBytes,
                             std::span<const int64_t> meshShape,
                             std::span<const SbpEntry> src,
                             std::span<const SbpEntry> dst);
  Plan collectives(std::span<const int64_t> shape, int64_t elemBytes,
                   std::span<const int64_t> meshShape,
                   std::span<const SbpEntry> src,
                   std::span<const SbpEntry> dst);

  CostParams params;
  std::unordered_map<std::string, Plan> cache, collectiveCache;
};

/// The per-rank bytes of every step of `plan`, summed.
RankBytes planBytes(const Plan &plan, std::span<const int64_t> shape,
                    int64_t elemBytes, std::span<const int64_t> meshShape,
                    std::span<const int64_t> coords);

} // namespace pc::boxing

#endif // PC_BOXING_BOXINGPLANNER_H

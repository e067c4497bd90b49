//===- CostModel.h - The cost of boxing steps -------------------*- C++ -*-===//
//
// The boxing cost model: bytes that one device receives, plus a fixed latency
// term per collective. The formulas are those of the OneFlow paper (MLSys'22,
// Table 2), per device; docs/sbp.md derives them.
//
// Two figures exist for each step:
//  - the *planning cost*, which the planner minimizes: the formula applied to
//    the largest group (the one holding mesh position 0). It is exact for
//    even splits and needs no per-rank work, so planning time does not grow
//    with the mesh.
//  - the *exact bytes* of each rank, for the cost report and for the tests
//    that compare executed collectives with the plan.
//
//===----------------------------------------------------------------------===//

#ifndef PC_BOXING_COSTMODEL_H
#define PC_BOXING_COSTMODEL_H

#include "dialect/Sharding.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace pc::boxing {

/// The kinds of step a boxing lowers to: the 1-D transitions.
using StepKind = TransitionKind;

inline const char *stringifyStepKind(StepKind kind) {
  return stringifyTransitionKind(kind);
}

/// True for the steps that communicate.
inline bool isCollective(StepKind k) {
  return k != StepKind::LocalSlice && k != StepKind::LocalPartial;
}

/// The position that sends `receiver` a piece in a redistribution, among
/// the positions `holders` (ascending) that hold that piece: the receiver
/// itself when it is one of them (a local copy), else one chosen by the
/// receiver's index so that receivers spread over the holders. The
/// planner, the runtime and the checker all pair pieces through it.
int64_t designatedHolder(std::span<const int64_t> holders, int64_t receiver);

struct CostParams {
  /// Added once per collective, in bytes: the fixed cost of a launch and a
  /// synchronization, as OneFlow's planner charges it.
  double latencyBytes = 1.65e4;
  /// Charged for a local step, so that among equal paths the shorter wins.
  double localStepCost = 1;
  /// Whether plans may use the direct same-mesh redistribution
  /// (StepKind::Redistribute) besides the 1-D collectives.
  bool redistribute = true;
};

/// One step of a boxing plan: the entries of `axes` (a contiguous, ascending
/// range of mesh axes, which form the groups) change from `before` to
/// `after`; every other entry is kept. A redistribution runs over all axes
/// and may change every entry.
struct Step {
  StepKind kind = StepKind::LocalSlice;
  std::vector<int64_t> axes;
  std::vector<SbpEntry> before;
  std::vector<SbpEntry> after;

  /// The entry being replaced and its replacement (the same on all `axes`;
  /// meaningless for a redistribution).
  SbpEntry from() const { return before[axes.front()]; }
  SbpEntry to() const { return after[axes.front()]; }
  /// "all-gather(dim 0) over axes [1]: [S(0), S(0)] -> [S(0), B]".
  std::string str() const;
};

/// The bytes one rank receives in one step.
struct RankBytes {
  int64_t received = 0;
  int64_t sent = 0;
};

/// The planning cost of `step` on a tensor of `shape` with `elemBytes`-byte
/// elements on a mesh of `meshShape`.
double planningCost(const Step &step, std::span<const int64_t> shape,
                    int64_t elemBytes, std::span<const int64_t> meshShape,
                    const CostParams &params);

/// The box two boxes of one tensor share (sizes 0 where they do not meet).
Box intersect(const Box &a, const Box &b);

/// The elements two boxes of one tensor share.
int64_t overlapVolume(const Box &a, const Box &b);

/// The elements the position `coords` lacks to go from `before` to `after`
/// (layouts without partial entries): those of its new piece outside its
/// old one. No plan can make it receive fewer.
int64_t lackingElements(std::span<const int64_t> shape,
                        std::span<const int64_t> meshShape,
                        std::span<const SbpEntry> before,
                        std::span<const SbpEntry> after,
                        std::span<const int64_t> coords);

/// The exact bytes the mesh position `coords` receives and sends in `step`.
RankBytes exactBytes(const Step &step, std::span<const int64_t> shape,
                     int64_t elemBytes, std::span<const int64_t> meshShape,
                     std::span<const int64_t> coords);

} // namespace pc::boxing

#endif // PC_BOXING_COSTMODEL_H

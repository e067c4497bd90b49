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

struct CostParams {
  /// Added once per collective, in bytes: the fixed cost of a launch and a
  /// synchronization, as OneFlow's planner charges it.
  double latencyBytes = 1.65e4;
  /// Charged for a local step, so that among equal paths the shorter wins.
  double localStepCost = 1;
};

/// One step of a boxing plan: the entries of `axes` (a contiguous, ascending
/// range of mesh axes, which form the groups) change from `before` to
/// `after`; every other entry is kept.
struct Step {
  StepKind kind = StepKind::LocalSlice;
  std::vector<int64_t> axes;
  std::vector<SbpEntry> before;
  std::vector<SbpEntry> after;

  /// The entry being replaced and its replacement (the same on all `axes`).
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

/// The elements two boxes of one tensor share.
int64_t overlapVolume(const Box &a, const Box &b);

/// The exact bytes the mesh position `coords` receives and sends in `step`.
RankBytes exactBytes(const Step &step, std::span<const int64_t> shape,
                     int64_t elemBytes, std::span<const int64_t> meshShape,
                     std::span<const int64_t> coords);

} // namespace pc::boxing

#endif // PC_BOXING_COSTMODEL_H

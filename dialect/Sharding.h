//===- Sharding.h - SBP entries and the sharding arithmetic -----*- C++ -*-===//
//
// The arithmetic every layer of pc shares: the compiler (verifiers, boxing
// planner, partitioner) and the runtime (kernels, collectives, checkpoints).
// It depends on nothing but the C++ standard library so that the runtime can
// use it without MLIR.
//
// Conventions, documented in docs/sbp.md:
//  - Mesh coordinates are row-major: the last mesh axis varies fastest.
//  - An nd-SBP is applied hierarchically, in mesh-axis order: entry 0 splits
//    the logical tensor among the groups of axis 0, entry 1 splits each of
//    those pieces among axis 1, and so on. Two entries may split one dim.
//  - Uneven splits: n items over p parts give the first (n mod p) parts one
//    extra item, so part i holds floor(n/p) + (i < n mod p ? 1 : 0).
//
//===----------------------------------------------------------------------===//

#ifndef PC_DIALECT_SHARDING_H
#define PC_DIALECT_SHARDING_H

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace pc {

/// How a P (partial) value is reduced to its logical value.
enum class ReduceKind : uint8_t { Sum, Max, Min, Avg };

/// Returns "sum", "max", "min" or "avg".
const char *stringifyReduceKind(ReduceKind kind);
/// Parses the spelling of stringifyReduceKind.
std::optional<ReduceKind> symbolizeReduceKind(std::string_view name);

/// One SBP entry: how a tensor is laid out along one mesh axis.
struct SbpEntry {
  enum class Kind : uint8_t { Split, Broadcast, Partial };

  Kind kind = Kind::Broadcast;
  /// The reduction of a Partial entry; Sum otherwise.
  ReduceKind reduce = ReduceKind::Sum;
  /// The split tensor dim of a Split entry; 0 otherwise.
  int32_t dim = 0;

  static SbpEntry split(int32_t dim) {
    return {Kind::Split, ReduceKind::Sum, dim};
  }
  static SbpEntry broadcast() { return {}; }
  static SbpEntry partial(ReduceKind reduce = ReduceKind::Sum) {
    return {Kind::Partial, reduce, 0};
  }

  bool isSplit() const { return kind == Kind::Split; }
  bool isBroadcast() const { return kind == Kind::Broadcast; }
  bool isPartial() const { return kind == Kind::Partial; }

  friend bool operator==(const SbpEntry &, const SbpEntry &) = default;

  /// "S(0)", "B", "P" (sum) or "P(max)", exactly as the IR spells it.
  std::string str() const;
};

/// "[S(0), B]".
std::string formatNdSbp(std::span<const SbpEntry> sbp);

/// A half-open range [offset, offset + size) of one tensor dim.
struct Range {
  int64_t offset = 0;
  int64_t size = 0;
  friend bool operator==(const Range &, const Range &) = default;
};

/// Part `index` of `extent` items split into `parts` parts, by the uneven
/// rule above. Requires extent >= 0, parts >= 1 and 0 <= index < parts.
Range splitRange(int64_t extent, int64_t parts, int64_t index);

/// The product of `shape` (1 for an empty shape).
int64_t product(std::span<const int64_t> shape);

/// The row-major coordinates of linear position `index` in `meshShape`.
std::vector<int64_t> delinearize(std::span<const int64_t> meshShape,
                                 int64_t index);
/// The row-major linear position of `coords` in `meshShape`.
int64_t linearize(std::span<const int64_t> meshShape,
                  std::span<const int64_t> coords);

/// The piece of a logical tensor that one mesh position holds.
struct Box {
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;
  friend bool operator==(const Box &, const Box &) = default;
  friend auto operator<=>(const Box &, const Box &) = default;
};

/// Returns a description of why `sbp` cannot lay out a tensor of
/// `logicalShape` on a mesh of `meshShape`, or nullopt when it can.
/// `meshName` names the mesh in the description.
std::optional<std::string> checkNdSbp(std::span<const int64_t> logicalShape,
                                      std::span<const int64_t> meshShape,
                                      std::span<const SbpEntry> sbp,
                                      std::string_view meshName = "the mesh");

/// The box that the mesh position `coords` holds. Broadcast and Partial
/// entries keep the whole current range; a Partial position holds a
/// full-shape partial value. Requires checkNdSbp(...) == nullopt.
Box localBox(std::span<const int64_t> logicalShape,
             std::span<const int64_t> meshShape, std::span<const SbpEntry> sbp,
             std::span<const int64_t> coords);

/// localBox(...).sizes.
std::vector<int64_t> localShape(std::span<const int64_t> logicalShape,
                                std::span<const int64_t> meshShape,
                                std::span<const SbpEntry> sbp,
                                std::span<const int64_t> coords);

/// True when every split divides its range evenly, so that all mesh
/// positions hold boxes of one shape.
bool isEvenlySplit(std::span<const int64_t> logicalShape,
                   std::span<const int64_t> meshShape,
                   std::span<const SbpEntry> sbp);

/// The linear mesh positions of the group that `coords` belongs to when a
/// collective runs over `axes`: all positions that agree with `coords` on
/// every other axis. They are ordered row-major over `axes` in the order
/// given, so entry i is the member with group index i.
std::vector<int64_t> groupMembers(std::span<const int64_t> meshShape,
                                  std::span<const int64_t> coords,
                                  std::span<const int64_t> axes);

/// The extents, in group order, of the pieces of a group over the
/// contiguous axes `axes` that all split one dim whose whole extent (the
/// union of the group's pieces) is `whole`: the uneven rule applied axis by
/// axis. This is how a per-device collective knows every member's piece
/// from its own shapes.
std::vector<int64_t> groupExtents(int64_t whole,
                                  std::span<const int64_t> meshShape,
                                  std::span<const int64_t> axes);

/// The index of `coords` within its group over `axes` (row-major over `axes`
/// in the order given).
int64_t groupIndex(std::span<const int64_t> meshShape,
                   std::span<const int64_t> coords,
                   std::span<const int64_t> axes);

/// The kinds of 1-D layout change on one mesh axis (or a run of axes that
/// share an entry).
enum class TransitionKind : uint8_t {
  AllReduce,     // P(r) -> B
  AllGather,     // S(d) -> B
  ReduceScatter, // P(r) -> S(d)
  AllToAll,      // S(d) -> S(d')
  LocalSlice,    // B -> S(d): keep this member's piece, no communication
  LocalPartial,  // B -> P(r) or S(d) -> P(sum): no communication
  /// Not a 1-D transition (transitionKind never returns it): the boxing
  /// planner's direct move between two layouts without partial entries on
  /// one mesh, over all its axes at once. Every position receives exactly
  /// the elements of its new piece that its old piece lacks, each from one
  /// designated holder (boxing::designatedHolder): an all-to-all-v of boxes.
  Redistribute,
};

const char *stringifyTransitionKind(TransitionKind kind);

/// The direct transition from `from` to `to`, or nullopt when there is none
/// (equal entries, P(r) -> P(r'), S(d) -> P(r) other than sum).
std::optional<TransitionKind> transitionKind(SbpEntry from, SbpEntry to);

/// True when reducing by `a` and by `b` in either order gives one result.
bool reductionsCommute(ReduceKind a, ReduceKind b);

/// Whether replacing `from` by `to` on the contiguous mesh axes ending at
/// `lastAxis` keeps the meaning of the later axes of `state`: none of them
/// splits a dim the transition touches, and, when the transition reduces,
/// none holds partials of a reduction that does not commute with it
/// (partials reduce from the last axis inward). Returns a description of the
/// violation, or nullopt.
std::optional<std::string> checkHierarchy(std::span<const SbpEntry> state,
                                          int64_t lastAxis, SbpEntry from,
                                          SbpEntry to);

/// checkHierarchy(...) == nullopt, without making the description (the
/// boxing planner asks it for every edge it weighs).
bool keepsHierarchy(std::span<const SbpEntry> state, int64_t lastAxis,
                    SbpEntry from, SbpEntry to);

/// Reduces the partial entries of a layout away: given the value held at
/// each linear mesh position (`at`), returns what each position holds once
/// every P axis is reduced over its group, from the last axis inward (the
/// order in which the values were made partial does not matter for exact
/// arithmetic, but a fixed order keeps float results reproducible).
/// `combine(members, kind)` reduces the values of one group, in group order.
/// Runners use it to assemble a logical result from the per-device pieces.
template <typename T, typename Combine>
std::vector<T> reducePartials(std::vector<T> at,
                              std::span<const int64_t> meshShape,
                              std::span<const SbpEntry> sbp, Combine combine) {
  for (size_t axis = meshShape.size(); axis-- > 0;) {
    if (!sbp[axis].isPartial())
      continue;
    const int64_t group[] = {int64_t(axis)};
    std::vector<T> next;
    next.reserve(at.size());
    for (int64_t p = 0; p < int64_t(at.size()); ++p) {
      std::vector<T> members;
      for (int64_t m :
           groupMembers(meshShape, delinearize(meshShape, p), group))
        members.push_back(at[m]);
      next.push_back(combine(members, sbp[axis].reduce));
    }
    at = std::move(next);
  }
  return at;
}

} // namespace pc

#endif // PC_DIALECT_SHARDING_H

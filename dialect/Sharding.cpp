//===- Sharding.cpp - SBP entries and the sharding arithmetic -------------===//

#include "dialect/Sharding.h"

#include <algorithm>
#include <cassert>

namespace pc {

const char *stringifyReduceKind(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "sum";
  case ReduceKind::Max:
    return "max";
  case ReduceKind::Min:
    return "min";
  case ReduceKind::Avg:
    return "avg";
  }
  return "sum";
}

std::optional<ReduceKind> symbolizeReduceKind(std::string_view name) {
  for (ReduceKind k :
       {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::Avg})
    if (name == stringifyReduceKind(k))
      return k;
  return std::nullopt;
}

std::string SbpEntry::str() const {
  switch (kind) {
  case Kind::Split:
    return "S(" + std::to_string(dim) + ")";
  case Kind::Broadcast:
    return "B";
  case Kind::Partial:
    if (reduce == ReduceKind::Sum)
      return "P";
    return std::string("P(") + stringifyReduceKind(reduce) + ")";
  }
  return "?";
}

std::string formatNdSbp(std::span<const SbpEntry> sbp) {
  std::string out = "[";
  for (size_t i = 0; i < sbp.size(); ++i) {
    if (i)
      out += ", ";
    out += sbp[i].str();
  }
  return out + "]";
}

Range splitRange(int64_t extent, int64_t parts, int64_t index) {
  assert(extent >= 0 && parts >= 1 && index >= 0 && index < parts);
  int64_t base = extent / parts;
  int64_t extra = extent % parts;
  return {index * base + std::min(index, extra), base + (index < extra)};
}

int64_t product(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<int64_t> delinearize(std::span<const int64_t> meshShape,
                                 int64_t index) {
  assert(index >= 0 && index < product(meshShape));
  std::vector<int64_t> coords(meshShape.size());
  for (size_t i = meshShape.size(); i-- > 0;) {
    coords[i] = index % meshShape[i];
    index /= meshShape[i];
  }
  return coords;
}

int64_t linearize(std::span<const int64_t> meshShape,
                  std::span<const int64_t> coords) {
  assert(meshShape.size() == coords.size());
  int64_t index = 0;
  for (size_t i = 0; i < meshShape.size(); ++i) {
    assert(coords[i] >= 0 && coords[i] < meshShape[i]);
    index = index * meshShape[i] + coords[i];
  }
  return index;
}

std::optional<std::string> checkNdSbp(std::span<const int64_t> logicalShape,
                                      std::span<const int64_t> meshShape,
                                      std::span<const SbpEntry> sbp,
                                      std::string_view meshName) {
  if (sbp.size() != meshShape.size())
    return "SBP " + formatNdSbp(sbp) + " has " + std::to_string(sbp.size()) +
           " entries but " + std::string(meshName) + " has " +
           std::to_string(meshShape.size()) + " axes";
  for (size_t i = 0; i < meshShape.size(); ++i)
    if (meshShape[i] < 1)
      return "mesh axis " + std::to_string(i) + " has size " +
             std::to_string(meshShape[i]) + "; sizes must be at least 1";
  for (int64_t d : logicalShape)
    if (d < 0)
      return "the logical shape has a negative or dynamic dim";
  for (size_t i = 0; i < sbp.size(); ++i)
    if (sbp[i].isSplit() &&
        (sbp[i].dim < 0 ||
         static_cast<size_t>(sbp[i].dim) >= logicalShape.size()))
      return "split dim " + std::to_string(sbp[i].dim) + " of entry " +
             std::to_string(i) + " is out of range for a rank-" +
             std::to_string(logicalShape.size()) + " tensor";
  return std::nullopt;
}

Box localBox(std::span<const int64_t> logicalShape,
             std::span<const int64_t> meshShape, std::span<const SbpEntry> sbp,
             std::span<const int64_t> coords) {
  assert(!checkNdSbp(logicalShape, meshShape, sbp));
  assert(coords.size() == meshShape.size());
  Box box{std::vector<int64_t>(logicalShape.size(), 0),
          std::vector<int64_t>(logicalShape.begin(), logicalShape.end())};
  for (size_t axis = 0; axis < sbp.size(); ++axis) {
    if (!sbp[axis].isSplit())
      continue;
    size_t d = sbp[axis].dim;
    Range r = splitRange(box.sizes[d], meshShape[axis], coords[axis]);
    box.offsets[d] += r.offset;
    box.sizes[d] = r.size;
  }
  return box;
}

std::vector<int64_t> localShape(std::span<const int64_t> logicalShape,
                                std::span<const int64_t> meshShape,
                                std::span<const SbpEntry> sbp,
                                std::span<const int64_t> coords) {
  return localBox(logicalShape, meshShape, sbp, coords).sizes;
}

bool isEvenlySplit(std::span<const int64_t> logicalShape,
                   std::span<const int64_t> meshShape,
                   std::span<const SbpEntry> sbp) {
  assert(!checkNdSbp(logicalShape, meshShape, sbp));
  // Every piece at one level has the same size when the level above was
  // even, so tracking one size per dim suffices.
  std::vector<int64_t> sizes(logicalShape.begin(), logicalShape.end());
  for (size_t axis = 0; axis < sbp.size(); ++axis) {
    if (!sbp[axis].isSplit())
      continue;
    int64_t &n = sizes[sbp[axis].dim];
    if (n % meshShape[axis] != 0)
      return false;
    n /= meshShape[axis];
  }
  return true;
}

std::vector<int64_t> groupMembers(std::span<const int64_t> meshShape,
                                  std::span<const int64_t> coords,
                                  std::span<const int64_t> axes) {
  std::vector<int64_t> groupShape;
  for (int64_t a : axes)
    groupShape.push_back(meshShape[a]);
  int64_t n = product(groupShape);
  std::vector<int64_t> members;
  members.reserve(n);
  std::vector<int64_t> c(coords.begin(), coords.end());
  for (int64_t g = 0; g < n; ++g) {
    std::vector<int64_t> gc = delinearize(groupShape, g);
    for (size_t i = 0; i < axes.size(); ++i)
      c[axes[i]] = gc[i];
    members.push_back(linearize(meshShape, c));
  }
  return members;
}

std::vector<int64_t> groupExtents(int64_t whole,
                                  std::span<const int64_t> meshShape,
                                  std::span<const int64_t> axes) {
  std::vector<int64_t> extents = {whole};
  for (int64_t a : axes) {
    std::vector<int64_t> next;
    for (int64_t e : extents)
      for (int64_t i = 0; i < meshShape[a]; ++i)
        next.push_back(splitRange(e, meshShape[a], i).size);
    extents = std::move(next);
  }
  return extents;
}

int64_t groupIndex(std::span<const int64_t> meshShape,
                   std::span<const int64_t> coords,
                   std::span<const int64_t> axes) {
  int64_t index = 0;
  for (int64_t a : axes)
    index = index * meshShape[a] + coords[a];
  return index;
}

const char *stringifyTransitionKind(TransitionKind kind) {
  switch (kind) {
  case TransitionKind::AllReduce:
    return "all-reduce";
  case TransitionKind::AllGather:
    return "all-gather";
  case TransitionKind::ReduceScatter:
    return "reduce-scatter";
  case TransitionKind::AllToAll:
    return "all-to-all";
  case TransitionKind::LocalSlice:
    return "local-slice";
  case TransitionKind::LocalPartial:
    return "local-partial";
  case TransitionKind::Redistribute:
    return "redistribute";
  }
  return "?";
}

std::optional<TransitionKind> transitionKind(SbpEntry from, SbpEntry to) {
  if (from == to)
    return std::nullopt;
  if (from.isPartial()) {
    if (to.isBroadcast())
      return TransitionKind::AllReduce;
    if (to.isSplit())
      return TransitionKind::ReduceScatter;
    return std::nullopt; // P(r) -> P(r') goes through B.
  }
  if (from.isSplit()) {
    if (to.isBroadcast())
      return TransitionKind::AllGather;
    if (to.isSplit())
      return TransitionKind::AllToAll;
    // Own slice, zeros elsewhere. Max and min would need infinities, which
    // turn into NaN once other partials mix in; an average has no identity.
    if (to.reduce != ReduceKind::Sum)
      return std::nullopt;
    return TransitionKind::LocalPartial;
  }
  // from is B.
  if (to.isSplit())
    return TransitionKind::LocalSlice;
  return TransitionKind::LocalPartial;
}

bool reductionsCommute(ReduceKind a, ReduceKind b) {
  auto linear = [](ReduceKind k) {
    return k == ReduceKind::Sum || k == ReduceKind::Avg;
  };
  return a == b || (linear(a) && linear(b));
}

namespace {

/// Why a transition breaks the hierarchy of a later axis.
enum class HierarchyBreak { None, SplitDim, Partials };

/// The first axis after `lastAxis` whose meaning the transition changes,
/// and why; {state.size(), None} when there is none.
std::pair<size_t, HierarchyBreak> firstBreak(std::span<const SbpEntry> state,
                                             int64_t lastAxis, SbpEntry from,
                                             SbpEntry to) {
  for (size_t c = lastAxis + 1; c < state.size(); ++c) {
    if (state[c].isSplit() && ((from.isSplit() && from.dim == state[c].dim) ||
                               (to.isSplit() && to.dim == state[c].dim)))
      return {c, HierarchyBreak::SplitDim};
    if (state[c].isPartial() && from.isPartial() &&
        !reductionsCommute(from.reduce, state[c].reduce))
      return {c, HierarchyBreak::Partials};
  }
  return {state.size(), HierarchyBreak::None};
}

} // namespace

bool keepsHierarchy(std::span<const SbpEntry> state, int64_t lastAxis,
                    SbpEntry from, SbpEntry to) {
  return firstBreak(state, lastAxis, from, to).second == HierarchyBreak::None;
}

std::optional<std::string> checkHierarchy(std::span<const SbpEntry> state,
                                          int64_t lastAxis, SbpEntry from,
                                          SbpEntry to) {
  auto [c, why] = firstBreak(state, lastAxis, from, to);
  switch (why) {
  case HierarchyBreak::None:
    return std::nullopt;
  case HierarchyBreak::SplitDim:
    return "mesh axis " + std::to_string(c) + " after the group splits dim " +
           std::to_string(state[c].dim) +
           ", which the change touches; change that axis first";
  case HierarchyBreak::Partials:
    return "mesh axis " + std::to_string(c) + " after the group holds " +
           state[c].str() + " partials, which must be reduced before " +
           from.str();
  }
  return std::nullopt;
}

} // namespace pc

//===- CostModel.cpp - The cost of boxing steps ---------------------------===//

#include "boxing/CostModel.h"

#include <algorithm>
#include <cassert>
#include <limits>

namespace pc::boxing {

std::string Step::str() const {
  std::string s = stringifyStepKind(kind);
  SbpEntry f = from(), t = to();
  switch (kind) {
  case StepKind::AllReduce:
    s += std::string("(") + stringifyReduceKind(f.reduce) + ")";
    break;
  case StepKind::AllGather:
    s += "(dim " + std::to_string(f.dim) + ")";
    break;
  case StepKind::ReduceScatter:
    s += std::string("(") + stringifyReduceKind(f.reduce) + ", dim " +
         std::to_string(t.dim) + ")";
    break;
  case StepKind::AllToAll:
    s += "(dim " + std::to_string(f.dim) + " -> dim " + std::to_string(t.dim) +
         ")";
    break;
  case StepKind::LocalSlice:
    s += "(dim " + std::to_string(t.dim) + ")";
    break;
  case StepKind::LocalPartial:
    s += std::string("(") + stringifyReduceKind(t.reduce) + ")";
    break;
  case StepKind::Redistribute:
    break;
  }
  s += " over axes [";
  for (size_t i = 0; i < axes.size(); ++i)
    s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "]: " + formatNdSbp(before) + " -> " + formatNdSbp(after);
}

namespace {
int64_t groupSize(std::span<const int64_t> meshShape,
                  std::span<const int64_t> axes) {
  int64_t n = 1;
  for (int64_t a : axes)
    n *= meshShape[a];
  return n;
}

int64_t volume(const Box &b) { return product(b.sizes); }

/// The elements of the union of the pieces of the group at mesh position 0
/// (the largest group): those of position 0's piece under `sbp` with the
/// entries of `axes` replaced by B. Position 0 takes the first, largest
/// piece of every split. Computed without allocating: the planner asks it
/// for every edge it weighs.
int64_t originGroupElements(std::span<const int64_t> shape,
                            std::span<const int64_t> meshShape,
                            std::span<const SbpEntry> sbp,
                            std::span<const int64_t> axes) {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t size = shape[d];
    for (size_t a = 0; a < sbp.size(); ++a)
      if (sbp[a].isSplit() && static_cast<size_t>(sbp[a].dim) == d &&
          std::find(axes.begin(), axes.end(), static_cast<int64_t>(a)) ==
              axes.end())
        size = splitRange(size, meshShape[a], 0).size;
    n *= size;
  }
  return n;
}

} // namespace

Box intersect(const Box &a, const Box &b) {
  Box r = a;
  for (size_t d = 0; d < a.sizes.size(); ++d) {
    int64_t lo = std::max(a.offsets[d], b.offsets[d]);
    int64_t hi = std::min(a.offsets[d] + a.sizes[d], b.offsets[d] + b.sizes[d]);
    r.offsets[d] = lo;
    r.sizes[d] = std::max<int64_t>(0, hi - lo);
  }
  return r;
}

int64_t overlapVolume(const Box &a, const Box &b) {
  int64_t v = 1;
  for (size_t d = 0; d < a.sizes.size(); ++d) {
    int64_t lo = std::max(a.offsets[d], b.offsets[d]);
    int64_t hi = std::min(a.offsets[d] + a.sizes[d], b.offsets[d] + b.sizes[d]);
    if (hi <= lo)
      return 0;
    v *= hi - lo;
  }
  return v;
}

int64_t designatedHolder(std::span<const int64_t> holders, int64_t receiver) {
  assert(!holders.empty());
  if (std::binary_search(holders.begin(), holders.end(), receiver))
    return receiver;
  return holders[receiver % static_cast<int64_t>(holders.size())];
}

int64_t lackingElements(std::span<const int64_t> shape,
                        std::span<const int64_t> meshShape,
                        std::span<const SbpEntry> before,
                        std::span<const SbpEntry> after,
                        std::span<const int64_t> coords) {
  Box have = localBox(shape, meshShape, before, coords);
  Box want = localBox(shape, meshShape, after, coords);
  return volume(want) - overlapVolume(have, want);
}

namespace {

/// A redistribution's planning cost: what the busiest position receives.
/// Unlike a 1-D collective's, positions differ (an axis swap leaves the
/// diagonal in place), so every position is visited: linear in the mesh.
double redistributeCost(const Step &step, std::span<const int64_t> shape,
                        int64_t elemBytes, std::span<const int64_t> meshShape,
                        const CostParams &params) {
  int64_t worst = 0;
  for (int64_t p = 0, n = product(meshShape); p < n; ++p)
    worst =
        std::max(worst, lackingElements(shape, meshShape, step.before,
                                        step.after, delinearize(meshShape, p)));
  // A move in which no position receives anything is local slicing, which
  // the 1-D local steps express without a collective call.
  if (worst == 0)
    return std::numeric_limits<double>::infinity();
  return static_cast<double>(worst) * elemBytes + params.latencyBytes;
}

/// The bytes position `self` (of the whole mesh) receives and sends in a
/// redistribution, pieces paired by designatedHolder.
RankBytes redistributeBytes(const Step &step, std::span<const int64_t> shape,
                            std::span<const int64_t> meshShape, int64_t self) {
  int64_t n = product(meshShape);
  std::vector<Box> before, after;
  for (int64_t p = 0; p < n; ++p) {
    before.push_back(
        localBox(shape, meshShape, step.before, delinearize(meshShape, p)));
    after.push_back(
        localBox(shape, meshShape, step.after, delinearize(meshShape, p)));
  }
  RankBytes r;
  r.received = volume(after[self]) - overlapVolume(before[self], after[self]);
  std::vector<int64_t> holders;
  for (int64_t q = 0; q < n; ++q)
    if (before[q] == before[self])
      holders.push_back(q);
  for (int64_t j = 0; j < n; ++j)
    if (j != self && designatedHolder(holders, j) == self)
      r.sent += overlapVolume(before[self], after[j]);
  return r;
}

} // namespace

double planningCost(const Step &step, std::span<const int64_t> shape,
                    int64_t elemBytes, std::span<const int64_t> meshShape,
                    const CostParams &params) {
  if (!isCollective(step.kind) || groupSize(meshShape, step.axes) == 1)
    return params.localStepCost; // A group of one moves nothing.
  if (step.kind == StepKind::Redistribute)
    return redistributeCost(step, shape, elemBytes, meshShape, params);
  double t = static_cast<double>(originGroupElements(shape, meshShape,
                                                     step.before, step.axes)) *
             elemBytes;
  double n = static_cast<double>(groupSize(meshShape, step.axes));
  double bytes = 0;
  switch (step.kind) {
  case StepKind::AllReduce:
    bytes = 2 * (n - 1) / n * t;
    break;
  case StepKind::AllGather:
  case StepKind::ReduceScatter:
    bytes = (n - 1) / n * t;
    break;
  case StepKind::AllToAll:
    bytes = (n - 1) / (n * n) * t;
    break;
  default:
    break;
  }
  return bytes + params.latencyBytes;
}

RankBytes exactBytes(const Step &step, std::span<const int64_t> shape,
                     int64_t elemBytes, std::span<const int64_t> meshShape,
                     std::span<const int64_t> coords) {
  if (!isCollective(step.kind))
    return {};
  if (step.kind == StepKind::Redistribute) {
    RankBytes r =
        redistributeBytes(step, shape, meshShape, linearize(meshShape, coords));
    r.received *= elemBytes;
    r.sent *= elemBytes;
    return r;
  }
  std::vector<int64_t> members = groupMembers(meshShape, coords, step.axes);
  int64_t n = members.size();
  int64_t self = groupIndex(meshShape, coords, step.axes);
  std::vector<Box> before, after;
  for (int64_t m : members) {
    std::vector<int64_t> c = delinearize(meshShape, m);
    before.push_back(localBox(shape, meshShape, step.before, c));
    after.push_back(localBox(shape, meshShape, step.after, c));
  }
  // The ring algorithms of the runtime's communicators (NCCL's, and
  // runtime/cpu/SharedMemoryComm): pieces travel to the next member in n-1
  // steps.
  RankBytes r;
  if (n == 1)
    return r;
  int64_t prev = (self + n - 1) % n, next = (self + 1) % n;
  switch (step.kind) {
  case StepKind::AllGather: {
    // A member receives every piece but its own, and forwards every piece
    // but its successor's.
    int64_t total = volume(after[self]);
    r.received = total - volume(before[self]);
    r.sent = total - volume(before[next]);
    break;
  }
  case StepKind::ReduceScatter: {
    // A member receives a partial of every piece but its predecessor's, and
    // sends one of every piece but its own.
    int64_t total = volume(before[self]);
    r.received = total - volume(after[prev]);
    r.sent = total - volume(after[self]);
    break;
  }
  case StepKind::AllReduce: {
    // A reduce-scatter, then an all-gather, over even chunks of the
    // flattened tensor.
    int64_t total = volume(before[self]);
    auto chunk = [&](int64_t k) { return splitRange(total, n, k).size; };
    r.received = 2 * total - chunk(prev) - chunk(self);
    r.sent = 2 * total - chunk(self) - chunk(next);
    break;
  }
  case StepKind::AllToAll:
    // Pairwise: each member sends each other member its block.
    for (int64_t q = 0; q < n; ++q) {
      if (q == self)
        continue;
      r.received += overlapVolume(before[q], after[self]);
      r.sent += overlapVolume(before[self], after[q]);
    }
    break;
  default:
    break;
  }
  r.received *= elemBytes;
  r.sent *= elemBytes;
  return r;
}

} // namespace pc::boxing

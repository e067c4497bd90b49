//===- BoxingSteps.cpp - Running one boxing step on a device --------------===//

#include "runtime/comm/BoxingSteps.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"

#include <cstring>

namespace pc::runtime {

namespace {

StepGroup groupOf(const boxing::Step &step,
                  std::span<const int64_t> logicalShape, const MeshView &mesh,
                  std::span<const int64_t> coords) {
  StepGroup g;
  g.self = groupIndex(mesh.shape, coords, step.axes);
  for (int64_t p : groupMembers(mesh.shape, coords, step.axes)) {
    std::vector<int64_t> c = delinearize(mesh.shape, p);
    g.ranks.push_back(mesh.ranks[p]);
    g.before.push_back(localBox(logicalShape, mesh.shape, step.before, c));
    g.after.push_back(localBox(logicalShape, mesh.shape, step.after, c));
  }
  return g;
}

/// `t` as a box relative to `origin`.
std::vector<int64_t> relative(const Box &b, const Box &origin) {
  std::vector<int64_t> off(b.offsets.size());
  for (size_t d = 0; d < off.size(); ++d)
    off[d] = b.offsets[d] - origin.offsets[d];
  return off;
}

} // namespace

absl::StatusOr<HostTensor> runStep(Communicator &comm, const boxing::Step &step,
                                   std::span<const int64_t> logicalShape,
                                   const MeshView &mesh,
                                   std::span<const int64_t> coords,
                                   const HostTensor &in) {
  GroupStep gs;
  gs.kind = step.kind;
  gs.reduce = step.kind == TransitionKind::LocalPartial ? step.to().reduce
                                                        : step.from().reduce;
  gs.fromBroadcast = step.from().isBroadcast();
  gs.group = groupOf(step, logicalShape, mesh, coords);
  if (in.shape != gs.group.before[gs.group.self].sizes)
    return absl::InvalidArgumentError(
        absl::StrCat(stringifyTransitionKind(step.kind),
                     ": the local piece has the wrong shape "
                     "for layout ",
                     formatNdSbp(step.before)));
  HostTensor out =
      HostTensor::zeros(gs.group.after[gs.group.self].sizes, in.type);
  HostStepMemory memory;
  if (absl::Status s = runGroupStep(comm, gs, in, out, memory); !s.ok())
    return s;
  return out;
}

absl::StatusOr<GroupStep>
planLocalStep(TransitionKind kind, ReduceKind reduce, bool fromBroadcast,
              std::span<const int64_t> axes, int64_t dim, int64_t dstDim,
              const MeshView &mesh, std::span<const int64_t> coords,
              std::span<const int64_t> inShape,
              std::span<const int64_t> outShape) {
  GroupStep gs;
  gs.kind = kind;
  gs.reduce = reduce;
  gs.fromBroadcast = fromBroadcast;
  StepGroup &g = gs.group;
  g.self = groupIndex(mesh.shape, coords, axes);
  for (int64_t p : groupMembers(mesh.shape, coords, axes))
    g.ranks.push_back(mesh.ranks[p]);
  int64_t n = g.ranks.size();
  // Boxes in the coordinates of the group's union.
  std::vector<int64_t> whole(inShape.begin(), inShape.end());
  bool splitBefore = kind == TransitionKind::AllGather ||
                     (kind == TransitionKind::LocalPartial && !fromBroadcast);
  if (splitBefore)
    whole = std::vector<int64_t>(outShape.begin(), outShape.end());
  if (kind == TransitionKind::AllToAll)
    whole[dim] = outShape[dim];
  Box unionBox{std::vector<int64_t>(whole.size(), 0), whole};
  auto pieces = [&](int64_t d) {
    std::vector<Box> boxes;
    std::vector<int64_t> ext = groupExtents(whole[d], mesh.shape, axes);
    int64_t offset = 0;
    for (int64_t j = 0; j < n; ++j) {
      Box b = unionBox;
      b.offsets[d] = offset;
      b.sizes[d] = ext[j];
      offset += ext[j];
      boxes.push_back(std::move(b));
    }
    return boxes;
  };
  std::vector<Box> all(n, unionBox);
  switch (kind) {
  case TransitionKind::AllGather:
  case TransitionKind::LocalPartial:
    g.before = splitBefore ? pieces(dim) : all;
    g.after = all;
    break;
  case TransitionKind::ReduceScatter:
  case TransitionKind::LocalSlice:
    g.before = all;
    g.after = pieces(dim);
    break;
  case TransitionKind::AllToAll: {
    g.before = pieces(dim);
    g.after = pieces(dstDim);
    break;
  }
  case TransitionKind::AllReduce:
    g.before = g.after = all;
    break;
  case TransitionKind::Redistribute:
    return absl::InvalidArgumentError(
        "a redistribution's pieces follow from its layouts: planRedistribute");
  }
  if (!std::ranges::equal(inShape, g.before[g.self].sizes) ||
      !std::ranges::equal(outShape, g.after[g.self].sizes))
    return absl::InvalidArgumentError(
        absl::StrCat(stringifyTransitionKind(kind),
                     ": the local shapes do not match the group's pieces"));
  return gs;
}

absl::StatusOr<GroupStep>
planRedistribute(const MeshView &mesh, std::span<const int64_t> coords,
                 std::span<const int64_t> logicalShape,
                 std::span<const SbpEntry> from, std::span<const SbpEntry> to,
                 std::span<const int64_t> inShape,
                 std::span<const int64_t> outShape) {
  GroupStep gs;
  gs.kind = TransitionKind::Redistribute;
  StepGroup &g = gs.group;
  g.ranks = mesh.ranks;
  g.self = linearize(mesh.shape, coords);
  for (int64_t p = 0, n = product(mesh.shape); p < n; ++p) {
    std::vector<int64_t> c = delinearize(mesh.shape, p);
    g.before.push_back(localBox(logicalShape, mesh.shape, from, c));
    g.after.push_back(localBox(logicalShape, mesh.shape, to, c));
  }
  if (!std::ranges::equal(inShape, g.before[g.self].sizes) ||
      !std::ranges::equal(outShape, g.after[g.self].sizes))
    return absl::InvalidArgumentError(absl::StrCat(
        "redistribute ", formatNdSbp(from), " -> ", formatNdSbp(to),
        ": the local shapes do not match this device's pieces"));
  return gs;
}

namespace {

/// A redistribution: member j receives each part of its new piece that it
/// lacks from one designated holder of that part's old piece, all in one
/// all-to-all-v; the part it holds already is a local copy.
absl::Status runRedistribute(Communicator &comm, const GroupStep &gs,
                             const TensorView &in, const TensorView &out,
                             StepMemory &mem) {
  const StepGroup &g = gs.group;
  const Box &mine = g.before[g.self], &target = g.after[g.self];
  int64_t e = sizeOf(in.type), n = g.ranks.size();
  // The holders of each distinct old piece (identical boxes are replicas).
  std::map<Box, std::vector<int64_t>> holders;
  for (int64_t q = 0; q < n; ++q)
    holders[g.before[q]].push_back(q);
  const std::vector<int64_t> &myHolders = holders[mine];
  std::vector<int64_t> zero(in.shape.size(), 0);

  std::vector<int64_t> sendCounts(n, 0), recvCounts(n, 0);
  int64_t sendTotal = 0;
  for (int64_t j = 0; j < n; ++j)
    if (j != g.self && boxing::designatedHolder(myHolders, j) == g.self)
      sendTotal += sendCounts[j] =
          product(boxing::intersect(mine, g.after[j]).sizes);
  absl::StatusOr<char *> packed = mem.scratch(sendTotal * e);
  if (!packed.ok())
    return packed.status();
  for (int64_t j = 0, offset = 0; j < n; ++j) {
    if (!sendCounts[j])
      continue;
    Box block = boxing::intersect(mine, g.after[j]);
    mem.copyBox(in.data(), in.shape, relative(block, mine),
                *packed + offset * e, block.sizes, zero, block.sizes, e);
    offset += sendCounts[j];
  }
  int64_t recvTotal = 0;
  for (int64_t q = 0; q < n; ++q)
    if (q != g.self &&
        boxing::designatedHolder(holders[g.before[q]], g.self) == q)
      recvTotal += recvCounts[q] =
          product(boxing::intersect(g.before[q], target).sizes);
  absl::StatusOr<char *> received = mem.scratch(recvTotal * e);
  if (!received.ok())
    return received.status();
  if (absl::Status s = comm.allToAll(*packed, sendCounts, *received, recvCounts,
                                     in.type, g.ranks);
      !s.ok())
    return s;
  for (int64_t q = 0, offset = 0; q < n; ++q) {
    if (!recvCounts[q])
      continue;
    Box block = boxing::intersect(g.before[q], target);
    mem.copyBox(*received + offset * e, block.sizes, zero, out.data(),
                out.shape, relative(block, target), block.sizes, e);
    offset += recvCounts[q];
  }
  Box kept = boxing::intersect(mine, target);
  if (product(kept.sizes))
    mem.copyBox(in.data(), in.shape, relative(kept, mine), out.data(),
                out.shape, relative(kept, target), kept.sizes, e);
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<char *> HostStepMemory::scratch(size_t bytes) {
  // Every byte is written before it is read: no zeroing.
  held.push_back(
      std::make_unique_for_overwrite<char[]>(std::max<size_t>(bytes, 1)));
  return held.back().get();
}

void HostStepMemory::copy(void *dst, const void *src, size_t bytes) {
  copyBytes(dst, src, bytes);
}

void HostStepMemory::copyBox(const char *src, std::span<const int64_t> srcShape,
                             std::span<const int64_t> srcOffset, char *dst,
                             std::span<const int64_t> dstShape,
                             std::span<const int64_t> dstOffset,
                             std::span<const int64_t> sizes,
                             int64_t elementBytes) {
  runtime::copyBox(src, srcShape, srcOffset, dst, dstShape, dstOffset, sizes,
                   elementBytes);
}

void HostStepMemory::zero(void *dst, size_t bytes) {
  std::memset(dst, 0, bytes);
}

absl::Status runGroupStep(Communicator &comm, const GroupStep &gs,
                          const TensorView &in, const TensorView &out,
                          StepMemory &mem) {
  const StepGroup &g = gs.group;
  const Box &mine = g.before[g.self], &target = g.after[g.self];
  int64_t e = sizeOf(in.type), n = g.ranks.size();
  if (out.shape != target.sizes || out.type != in.type)
    return absl::InternalError("a step's result has the wrong shape or type");

  switch (gs.kind) {
  case TransitionKind::AllReduce: {
    mem.copy(out.data(), in.data(), in.byteSize());
    return comm.allReduce(out.data(), out.numel(), in.type, gs.reduce, g.ranks);
  }
  case TransitionKind::AllGather: {
    // Gather the flattened pieces, then place each along the dim.
    std::vector<int64_t> counts;
    for (const Box &b : g.before)
      counts.push_back(product(b.sizes));
    absl::StatusOr<char *> staging = mem.scratch(out.byteSize());
    if (!staging.ok())
      return staging.status();
    if (absl::Status s =
            comm.allGather(in.data(), *staging, counts, in.type, g.ranks);
        !s.ok())
      return s;
    int64_t offset = 0;
    for (int64_t j = 0; j < n; ++j) {
      std::vector<int64_t> zero(in.shape.size(), 0);
      mem.copyBox(*staging + offset * e, g.before[j].sizes, zero, out.data(),
                  out.shape, relative(g.before[j], target), g.before[j].sizes,
                  e);
      offset += counts[j];
    }
    return absl::OkStatus();
  }
  case TransitionKind::ReduceScatter: {
    // Lay the members' pieces out one after another, then reduce-scatter.
    std::vector<int64_t> counts;
    absl::StatusOr<char *> packed = mem.scratch(in.byteSize());
    if (!packed.ok())
      return packed.status();
    int64_t offset = 0;
    for (int64_t j = 0; j < n; ++j) {
      counts.push_back(product(g.after[j].sizes));
      std::vector<int64_t> zero(in.shape.size(), 0);
      mem.copyBox(in.data(), in.shape, relative(g.after[j], mine),
                  *packed + offset * e, g.after[j].sizes, zero,
                  g.after[j].sizes, e);
      offset += counts[j];
    }
    if (absl::Status s = comm.reduceScatter(*packed, out.data(), counts,
                                            in.type, gs.reduce, g.ranks);
        !s.ok())
      return s;
    return absl::OkStatus();
  }
  case TransitionKind::AllToAll: {
    // Member j gets the part of my piece inside its new piece; I get the
    // part of each member's old piece inside mine.
    std::vector<int64_t> sendCounts, recvCounts;
    absl::StatusOr<char *> packed = mem.scratch(in.byteSize());
    if (!packed.ok())
      return packed.status();
    int64_t offset = 0;
    for (int64_t j = 0; j < n; ++j) {
      Box block = boxing::intersect(mine, g.after[j]);
      sendCounts.push_back(product(block.sizes));
      std::vector<int64_t> zero(in.shape.size(), 0);
      mem.copyBox(in.data(), in.shape, relative(block, mine),
                  *packed + offset * e, block.sizes, zero, block.sizes, e);
      offset += sendCounts.back();
      recvCounts.push_back(
          product(boxing::intersect(g.before[j], target).sizes));
    }
    absl::StatusOr<char *> received = mem.scratch(out.byteSize());
    if (!received.ok())
      return received.status();
    if (absl::Status s = comm.allToAll(*packed, sendCounts, *received,
                                       recvCounts, in.type, g.ranks);
        !s.ok())
      return s;
    offset = 0;
    for (int64_t q = 0; q < n; ++q) {
      Box block = boxing::intersect(g.before[q], target);
      std::vector<int64_t> zero(in.shape.size(), 0);
      mem.copyBox(*received + offset * e, block.sizes, zero, out.data(),
                  out.shape, relative(block, target), block.sizes, e);
      offset += recvCounts[q];
    }
    return absl::OkStatus();
  }
  case TransitionKind::LocalSlice:
    mem.copyBox(in.data(), in.shape, relative(target, mine), out.data(),
                out.shape, std::vector<int64_t>(out.shape.size(), 0), out.shape,
                e);
    return absl::OkStatus();
  case TransitionKind::LocalPartial: {
    if (gs.fromBroadcast) {
      // Sum: member 0 keeps the value; max, min and avg: all keep it.
      if (gs.reduce != ReduceKind::Sum || g.self == 0)
        mem.copy(out.data(), in.data(), in.byteSize());
      return absl::OkStatus();
    }
    // Own piece in zeros of the group's whole.
    mem.copyBox(in.data(), in.shape, std::vector<int64_t>(in.shape.size(), 0),
                out.data(), out.shape, relative(mine, target), in.shape, e);
    return absl::OkStatus();
  }
  case TransitionKind::Redistribute:
    return runRedistribute(comm, gs, in, out, mem);
  }
  return absl::InternalError("unknown step");
}

} // namespace pc::runtime

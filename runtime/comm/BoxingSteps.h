//===- BoxingSteps.h - Running one boxing step on a device ------*- C++ -*-===//
//
// The per-device execution of the steps that --pc-lower-boxing emits (the
// pc.all_gather, pc.reduce_scatter, ... ops of a per-device program): packs
// the local piece for the communicator, runs the collective over the rank's
// group, and unpacks the result. Member extents come from the layouts and
// the mesh alone (pc::localBox), as the per-device IR promises.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_COMM_BOXINGSTEPS_H
#define PC_RUNTIME_COMM_BOXINGSTEPS_H

#include "boxing/CostModel.h"
#include "runtime/comm/Communicator.h"
#include "runtime/device/HostTensor.h"
#include "runtime/device/Tensor.h"

#include "absl/status/statusor.h"

#include <memory>
#include <span>
#include <vector>

namespace pc::runtime {

/// The mesh a step runs on: its shape and the global rank of each position.
struct MeshView {
  std::vector<int64_t> shape;
  std::vector<int64_t> ranks;
};

/// A step as one group sees it: the members' global ranks in group order,
/// this member's index, and every member's piece before and after (boxes in
/// one coordinate system, such as the logical tensor's or the group's
/// union).
struct StepGroup {
  std::vector<int64_t> ranks;
  std::vector<Box> before, after;
  int64_t self = 0;
};

struct GroupStep {
  TransitionKind kind = TransitionKind::AllReduce;
  /// The reduction of a reducing step, or of the partials a local partial
  /// step makes.
  ReduceKind reduce = ReduceKind::Sum;
  /// For a local partial step: from B (else from a split).
  bool fromBroadcast = true;
  StepGroup group;
};

/// Runs `step` for this member; `in` is its piece `before[self]`, `out`
/// (zeros) gets its piece `after[self]`. Both are host-addressable; the
/// staging the collectives need is host memory.
/// The memory operations a step does around its collective, on the memory
/// its tensors live in: the host's (HostStepMemory), or a device's, where
/// no byte may be touched from the host (runtime/exec/PortableComm.h).
class StepMemory {
public:
  virtual ~StepMemory() = default;
  /// A temporary of `bytes`, alive until the memory object dies.
  virtual absl::StatusOr<char *> scratch(size_t bytes) = 0;
  virtual void copy(void *dst, const void *src, size_t bytes) = 0;
  /// As runtime::copyBox (HostTensor.h): the box `sizes` at `srcOffset` of
  /// a row-major `srcShape` into `dstShape` at `dstOffset`.
  virtual void copyBox(const char *src, std::span<const int64_t> srcShape,
                       std::span<const int64_t> srcOffset, char *dst,
                       std::span<const int64_t> dstShape,
                       std::span<const int64_t> dstOffset,
                       std::span<const int64_t> sizes,
                       int64_t elementBytes) = 0;
  virtual void zero(void *dst, size_t bytes) = 0;
};

/// Host memory: plain copies, scratch from the heap.
class HostStepMemory final : public StepMemory {
public:
  absl::StatusOr<char *> scratch(size_t bytes) override;
  void copy(void *dst, const void *src, size_t bytes) override;
  void copyBox(const char *src, std::span<const int64_t> srcShape,
               std::span<const int64_t> srcOffset, char *dst,
               std::span<const int64_t> dstShape,
               std::span<const int64_t> dstOffset,
               std::span<const int64_t> sizes, int64_t elementBytes) override;
  void zero(void *dst, size_t bytes) override;

private:
  std::vector<std::unique_ptr<char[]>> held;
};

/// Runs `step` on this member's `in` into `out` (zeroed where the step
/// leaves parts, as a local partial does), its copies through `memory`.
absl::Status runGroupStep(Communicator &comm, const GroupStep &step,
                          const TensorView &in, const TensorView &out,
                          StepMemory &memory);

/// Plans a step op of a per-device program (pc.all_gather, ...): `kind`
/// over the groups of `axes` of `mesh`, along `dim` (and `dstDim` for an
/// all-to-all, whose `dim` is the source dim), for the device at `coords`,
/// whose piece has shape `in` and whose local result has shape `out`. The
/// members' pieces follow from the shapes and the mesh (pc::groupExtents),
/// as the per-device IR promises; InvalidArgument when this device's shapes
/// are not its pieces. Run it with runGroupStep.
absl::StatusOr<GroupStep>
planLocalStep(TransitionKind kind, ReduceKind reduce, bool fromBroadcast,
              std::span<const int64_t> axes, int64_t dim, int64_t dstDim,
              const MeshView &mesh, std::span<const int64_t> coords,
              std::span<const int64_t> in, std::span<const int64_t> out);

/// Plans a pc.redistribute of a per-device program: the whole mesh is the
/// group, and the members' pieces are their boxes of a tensor of
/// `logicalShape` in the layouts `from` and `to` (without partial entries).
/// InvalidArgument when this device's shapes `in` and `out` are not its
/// pieces.
absl::StatusOr<GroupStep>
planRedistribute(const MeshView &mesh, std::span<const int64_t> coords,
                 std::span<const int64_t> logicalShape,
                 std::span<const SbpEntry> from, std::span<const SbpEntry> to,
                 std::span<const int64_t> in, std::span<const int64_t> out);

/// Runs `step` on the device at mesh position `coords`, whose piece of a
/// tensor of `logicalShape` in the layout `step.before` is `in`; returns its
/// piece in `step.after`. Every member of the step's groups must call it.
absl::StatusOr<HostTensor> runStep(Communicator &comm, const boxing::Step &step,
                                   std::span<const int64_t> logicalShape,
                                   const MeshView &mesh,
                                   std::span<const int64_t> coords,
                                   const HostTensor &in);

} // namespace pc::runtime

#endif // PC_RUNTIME_COMM_BOXINGSTEPS_H

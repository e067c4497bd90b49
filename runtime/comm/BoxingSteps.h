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

#include "passes/CostModel.h"
#include "runtime/comm/Communicator.h"

#include "absl/status/statusor.h"

#include <vector>

namespace pc::runtime {

/// A dense row-major tensor in host memory.
struct HostTensor {
  std::vector<int64_t> shape;
  CommType type = CommType::F32;
  std::vector<char> bytes;

  int64_t numel() const { return product(shape); }
  static HostTensor zeros(std::vector<int64_t> shape, CommType type);
};

/// The mesh a step runs on: its shape and the global rank of each position.
struct MeshView {
  std::vector<int64_t> shape;
  std::vector<int64_t> ranks;
};

/// Runs `step` on the device at mesh position `coords`, whose piece of a
/// tensor of `logicalShape` in the layout `step.before` is `in`; returns its
/// piece in `step.after`. Every member of the step's groups must call it.
absl::StatusOr<HostTensor> runStep(Communicator &comm, const boxing::Step &step,
                                   std::span<const int64_t> logicalShape,
                                   const MeshView &mesh,
                                   std::span<const int64_t> coords,
                                   const HostTensor &in);

/// Copies the box of `sizes` at `srcOffset` in `src` to `dstOffset` in
/// `dst` (row-major tensors of `elemBytes`-byte elements).
void copyBox(const char *src, std::span<const int64_t> srcShape,
             std::span<const int64_t> srcOffset, char *dst,
             std::span<const int64_t> dstShape,
             std::span<const int64_t> dstOffset, std::span<const int64_t> sizes,
             int64_t elemBytes);

} // namespace pc::runtime

#endif // PC_RUNTIME_COMM_BOXINGSTEPS_H

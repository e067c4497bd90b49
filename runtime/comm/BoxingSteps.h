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
#include "runtime/device/HostTensor.h"

#include "absl/status/statusor.h"

#include <vector>

namespace pc::runtime {

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

} // namespace pc::runtime

#endif // PC_RUNTIME_COMM_BOXINGSTEPS_H

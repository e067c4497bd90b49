//===- CostModel.h - Time of kernels and collectives on a cluster -*- C++
//-*-===//
//
// The planner's cost model, configured from a cluster spec:
//  - a kernel takes max(FLOPs / (peak * matmul efficiency),
//    bytes / (HBM bandwidth * memory efficiency)) plus a launch latency
//    (the roofline);
//  - a collective over a group takes the alpha-beta time of NCCL's ring
//    (or tree, for all-reduce, when that is faster) on the slowest link
//    the group crosses: NVLink/PCIe inside a node, each member's share of
//    the network between nodes.
// A mesh maps onto the cluster with tensor-parallel ranks innermost (one
// node first), then data-parallel, then pipeline stages outermost, as
// Megatron-LM orders them.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PLANNER_COSTMODEL_H
#define PC_PLANNER_COSTMODEL_H

#include "planner/ClusterSpec.h"

#include <cstdint>

namespace pc::planner {

enum class CollectiveKind : uint8_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  SendRecv
};
const char *collectiveName(CollectiveKind k);

/// Where a group's members sit: `size` ranks, `perNode` of them on each
/// node they span.
struct Group {
  int64_t size = 1;
  int64_t perNode = 1;
  int64_t nodes() const { return (size + perNode - 1) / perNode; }
};

/// The group of a mesh axis of `size` ranks whose members are `stride`
/// ranks apart, with ranks filling nodes of `devicesPerNode` in order.
Group axisGroup(int64_t size, int64_t stride, int64_t devicesPerNode);

class CostModel {
public:
  CostModel(const ClusterSpec &spec, double peakFlops)
      : spec(spec), peakFlops(peakFlops) {}

  /// A kernel of `flops` FLOPs (on the matrix units when `matmul`) moving
  /// `bytes` through HBM.
  double kernel(double flops, double bytes, bool matmul) const;
  /// A collective over `group`; `bytes` is the whole tensor (the gathered
  /// or reduced size; for send/recv, the message).
  double collective(CollectiveKind kind, double bytes, const Group &g) const;
  /// The effective bandwidth and latency between the members of `g`.
  Link link(const Group &g) const;
  /// Copying `bytes` between device and host memory.
  double hostCopy(double bytes) const;

  const ClusterSpec &getSpec() const { return spec; }
  double getPeak() const { return peakFlops; }

private:
  /// The collective's algorithm over `n` members: its steps.
  double algorithm(CollectiveKind kind, double bytes, double n, double alpha,
                   double bw, const Group &g) const;

  const ClusterSpec &spec;
  double peakFlops;
};

} // namespace pc::planner

#endif // PC_PLANNER_COSTMODEL_H

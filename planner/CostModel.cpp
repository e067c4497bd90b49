//===- CostModel.cpp - Time of kernels and collectives on a cluster -------===//

#include "planner/CostModel.h"

#include <algorithm>
#include <cmath>

namespace pc::planner {

const char *collectiveName(CollectiveKind k) {
  switch (k) {
  case CollectiveKind::AllReduce:
    return "all-reduce";
  case CollectiveKind::AllGather:
    return "all-gather";
  case CollectiveKind::ReduceScatter:
    return "reduce-scatter";
  case CollectiveKind::AllToAll:
    return "all-to-all";
  case CollectiveKind::SendRecv:
    return "send/recv";
  }
  return "?";
}

Group axisGroup(int64_t size, int64_t stride, int64_t devicesPerNode) {
  Group g;
  g.size = size;
  // Members at `stride` apart: a node of D devices holds D / stride of
  // them when the stride is below D, else one.
  g.perNode =
      stride >= devicesPerNode
          ? 1
          : std::min(size, std::max<int64_t>(1, devicesPerNode / stride));
  return g;
}

double CostModel::kernel(double flops, double bytes, bool matmul) const {
  double compute = matmul ? flops / (peakFlops * spec.matmulEfficiency) : 0;
  double memory = bytes / (spec.memoryBandwidth * spec.memoryEfficiency);
  return std::max(compute, memory) + spec.kernelLatency;
}

Link CostModel::link(const Group &g) const {
  if (g.nodes() <= 1)
    return spec.intraNode;
  // A ring across nodes leaves each node over the network: NCCL spreads
  // it over one channel per member there, each on its own share of the
  // network; inside the node the members still talk over the intra-node
  // link.
  Link l;
  l.bandwidth = spec.interNode.bandwidth * g.perNode;
  if (g.perNode > 1)
    l.bandwidth = std::min(l.bandwidth, spec.intraNode.bandwidth);
  l.latency = spec.interNode.latency;
  l.callLatency = spec.interNode.callLatency;
  return l;
}

double CostModel::collective(CollectiveKind kind, double bytes,
                             const Group &g) const {
  if (g.size <= 1 || bytes <= 0)
    return 0;
  Link l = link(g);
  double n = static_cast<double>(g.size);
  double bw = l.bandwidth * spec.collectiveEfficiency;
  double alpha = l.latency;
  return l.callLatency + algorithm(kind, bytes, n, alpha, bw, g);
}

double CostModel::algorithm(CollectiveKind kind, double bytes, double n,
                            double alpha, double bw, const Group &g) const {
  switch (kind) {
  case CollectiveKind::AllReduce: {
    // NCCL's tree pays off across nodes (log hops on the network); inside
    // a node (and on shared memory) the ring runs.
    double ring = 2 * (n - 1) * alpha + 2 * (n - 1) / n * bytes / bw;
    if (g.nodes() <= 1)
      return ring;
    double tree = 2 * std::ceil(std::log2(n)) * alpha + 2 * bytes / bw;
    return std::min(ring, tree);
  }
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (n - 1) * alpha + (n - 1) / n * bytes / bw;
  case CollectiveKind::SendRecv:
    return alpha + bytes / bw;
  }
  return 0;
}

double CostModel::hostCopy(double bytes) const {
  if (bytes <= 0)
    return 0;
  return spec.hostLink.latency + bytes / spec.hostLink.bandwidth;
}

} // namespace pc::planner

//===- ClusterSpec.h - The machines a plan runs on --------------*- C++ -*-===//
//
// A cluster spec is a JSON file describing the devices, their memory and
// links: what the planner's cost model needs to predict a step. The format
// is documented in docs/planning.md; specs for DGX A100, H100 and H200, a
// PCIe box and this machine's CPU virtual devices ship in planner/clusters.
//
// Bandwidths are bytes per second in one direction, per device; latencies
// are seconds. The efficiencies say what fraction of a peak real kernels
// and collectives reach, so that the peaks stay the datasheet's.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PLANNER_CLUSTERSPEC_H
#define PC_PLANNER_CLUSTERSPEC_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>

namespace pc::planner {

/// A link between devices, per device and direction.
struct Link {
  double bandwidth = 0; // bytes/s
  double latency = 0;   // s, per step of a collective
  /// s, of a point-to-point send and its receive (a pipeline's hop);
  /// 0: `latency`.
  double p2pLatency = 0;
  /// s of the host's cores a hop takes, on devices that share them (CPU
  /// virtual devices): its copies and its threads' hand-offs. With it,
  /// `p2pLatency` is the hop's wait beyond that work, during which the
  /// cores run other work. 0: the hop is `p2pLatency` of work.
  double p2pWork = 0;
  /// s, of every collective call beyond its steps' `latency`: its
  /// members' hand-offs between their streams (CPU virtual devices, whose
  /// threads outnumber the cores). 0 where a collective's steps dominate.
  double callLatency = 0;
  /// The fraction of a collective's latency during which its members keep
  /// their cores busy, on devices that share the host's cores (CPU virtual
  /// devices); the rest they wait asleep, and other work fills it.
  double latencyBusy = 1;
  /// The fraction of its latency a collective pays when it is queued on
  /// its stream behind a collective it does not depend on: its members
  /// come from the one before it together, already awake, instead of
  /// from their compute one by one (CPU virtual devices).
  double queuedShare = 1;
  /// On devices that outnumber the host's cores (CPU virtual devices): how
  /// long a collective's last member lags the others, per second of
  /// compute since their previous collective ended (one of them was
  /// descheduled for another device's threads on the way). 0: none.
  double stragglerLag = 0;
};

struct ClusterSpec {
  std::string name;
  int64_t nodes = 1;
  int64_t devicesPerNode = 1;
  /// How many of a node's devices run at their full rates at once: CPU
  /// virtual devices whose threads outnumber the host's cores share them.
  /// 0 (absent): every device has its own.
  int64_t concurrentDevices = 0;

  // The device.
  std::string deviceName;
  /// Dense peak FLOP/s per dtype ("bf16", "f16", "f32", ...).
  std::map<std::string, double> peakFlops;
  double memoryBytes = 0;     // HBM capacity
  double memoryBandwidth = 0; // HBM bytes/s

  /// Between devices of one node ("nvlink", "pcie", "shared-memory").
  std::string intraNodeKind;
  Link intraNode;
  /// Between nodes: each device's share of its node's network.
  Link interNode;

  // The host, for offload.
  Link hostLink;              // device <-> host memory, per device
  double hostMemoryBytes = 0; // per node
  double hostAdamRate = 0;    // parameters/s one device's host cores update

  // What real kernels reach of the peaks.
  double matmulEfficiency = 1;     // of peakFlops, on large products
  double memoryEfficiency = 1;     // of memoryBandwidth
  double collectiveEfficiency = 1; // of link bandwidth
  double kernelLatency = 0;        // s per kernel launch
  /// The share of memoryBytes a plan may use (the rest: context,
  /// workspaces, fragmentation).
  double usableMemory = 1;
  /// Of the cores that devices sharing the host's cores (CPU virtual
  /// devices) run on, the share the runtime keeps busy while it has work
  /// for all of them: its threads' wake-ups leave the rest idle.
  double sharedCoreEfficiency = 1;
  /// s of the host's cores to wake a device's stream for an op with an
  /// operand from the device's other stream (CPU virtual devices: the
  /// runtime's threads sleep and are woken); 0: free.
  double wakeWork = 0;
  /// A profiled kernel's time in a training step over its op profile's: on
  /// CPU devices the other devices' threads share the cores, the caches
  /// and the memory.
  double kernelInStep = 1;

  int64_t devices() const { return nodes * devicesPerNode; }
  /// The peak of `dtype`; an error names the spec and the dtype.
  llvm::Expected<double> peak(llvm::StringRef dtype) const;
};

/// Parses a spec; `source` names it in errors ("dgx-a100.json").
llvm::Expected<ClusterSpec> parseClusterSpec(llvm::StringRef json,
                                             llvm::StringRef source);
/// Reads and parses the file at `path`.
llvm::Expected<ClusterSpec> loadClusterSpec(llvm::StringRef path);

/// Parses a size: bytes, or a number with a unit (KB, MB, GB, TB: powers of
/// ten; KiB, MiB, GiB, TiB: of two).
llvm::Expected<double> parseBytes(llvm::StringRef text);

} // namespace pc::planner

#endif // PC_PLANNER_CLUSTERSPEC_H

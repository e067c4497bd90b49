//===- CostModel.cpp - --pc-cost-model ------------------------------------===//
//
// Records a cluster spec's rates on the module, where every cost of the
// compiler and the runtime's transfer plans read them.
//
//===----------------------------------------------------------------------===//

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "planner/ClusterSpec.h"

namespace pc {
#define GEN_PASS_DEF_COSTMODEL
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

llvm::Expected<attrs::CostModel> pc::costModelFromSpec(llvm::StringRef path,
                                                       llvm::StringRef dtype) {
  llvm::Expected<planner::ClusterSpec> spec = planner::loadClusterSpec(path);
  if (!spec)
    return spec.takeError();
  llvm::Expected<double> peak = spec->peak(dtype);
  if (!peak)
    return peak.takeError();
  attrs::CostModel m;
  m.peakFlops = *peak * spec->matmulEfficiency;
  // Under mixed precision matmuls run on 16-bit floats, at their own peak.
  for (const char *half : {"bf16", "f16"})
    if (auto it = spec->peakFlops.find(half); it != spec->peakFlops.end()) {
      double p = it->second * spec->matmulEfficiency;
      if (p != m.peakFlops)
        m.halfPeakFlops = p;
      break;
    }
  m.memoryBandwidth = spec->memoryBandwidth * spec->memoryEfficiency;
  // A mesh's devices share a node when they can (pc-plan's mapping).
  const planner::Link &link =
      spec->devicesPerNode > 1 || !spec->interNode.bandwidth ? spec->intraNode
                                                             : spec->interNode;
  m.linkBandwidth = link.bandwidth > 0
                        ? link.bandwidth * spec->collectiveEfficiency
                        : m.memoryBandwidth;
  m.kernelLatency = spec->kernelLatency;
  // CPU virtual devices: their communicator runs on their own cores.
  m.sharedCores = spec->intraNodeKind == "shared-memory";
  m.concurrentDevices = spec->concurrentDevices;
  m.coreEfficiency = spec->sharedCoreEfficiency;
  m.wakeWork = m.sharedCores ? spec->wakeWork : 0;
  m.kernelInStep = spec->kernelInStep != 1 ? spec->kernelInStep : 0;
  m.linkLatency = link.latency > 0 ? link.latency : spec->kernelLatency;
  if (!(m.linkLatency > 0))
    m.linkLatency = 1e-6;
  m.p2pLatency = link.p2pLatency;
  m.p2pWork = link.p2pWork;
  m.latencyBusy = link.latencyBusy;
  // Members waking one by one is the shared cores' (CPU threads') cost.
  m.queuedShare = m.sharedCores ? link.queuedShare : 1;
  m.stragglerLag = m.sharedCores ? link.stragglerLag : 0;
  m.callLatency = link.callLatency;
  return m;
}

attrs::CostModel pc::costModelOf(ModuleOp module) {
  if (std::optional<attrs::CostModel> m = attrs::getCostModel(module))
    return *m;
  attrs::CostModel cpu;
  // planner/clusters/cpu-virtual.json, as pc-bench-calibrate measured it.
  cpu.peakFlops = 1.012e11;
  cpu.memoryBandwidth = 3.662e10;
  cpu.linkBandwidth = 4.495e9;
  cpu.linkLatency = 5.366e-5;
  cpu.p2pLatency = 1.028e-4;
  cpu.kernelLatency = 1.238e-5;
  cpu.sharedCores = true;
  cpu.concurrentDevices = 2;
  return cpu;
}

namespace {

struct CostModelPass : pc::impl::CostModelBase<CostModelPass> {
  using CostModelBase::CostModelBase;

  void runOnOperation() override {
    if (cluster.empty()) {
      getOperation().emitError("pc-cost-model: give cluster=<spec.json>");
      return signalPassFailure();
    }
    llvm::Expected<attrs::CostModel> m = costModelFromSpec(cluster, dtype);
    if (!m) {
      getOperation().emitError()
          << "pc-cost-model: " << llvm::toString(m.takeError());
      return signalPassFailure();
    }
    attrs::setCostModel(getOperation(), *m);
  }
};

} // namespace

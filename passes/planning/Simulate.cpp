//===- Simulate.cpp - --pc-simulate ---------------------------------------===//
//
// Times each per-device program over the module's cost model, with the
// actor runtime's two streams; see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "planner/CostModel.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace pc {
#define GEN_PASS_DEF_SIMULATE
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

double bytesOf(Type t) { return double(tensorBytes(t)); }

/// The module's rates as the planner's cost model sees one node's devices.
planner::ClusterSpec specOf(const attrs::CostModel &m) {
  planner::ClusterSpec s;
  s.name = "the module's cost model";
  s.devicesPerNode = 1 << 20; // a mesh's devices share the link
  s.peakFlops["f32"] = m.peakFlops;
  s.memoryBandwidth = m.memoryBandwidth;
  s.intraNode = {m.linkBandwidth, m.linkLatency};
  s.kernelLatency = m.kernelLatency;
  return s;
}

struct Totals {
  double flops = 0, compute = 0, comm = 0, moved = 0, step = 0;
  int64_t collectives = 0;
};

class ProgramTimer {
public:
  ProgramTimer(const planner::CostModel &cost, MeshCache &meshes)
      : cost(cost), meshes(meshes) {}

  Totals run(func::FuncOp f) {
    Totals t;
    double computeFree = 0, commFree = 0;
    DenseMap<Value, double> ready;
    f.walk([&](Operation *op) {
      if (op == f.getOperation())
        return;
      double start = 0;
      for (Value v : op->getOperands())
        start = std::max(start, ready.lookup(v));
      bool comm = isCommOp(op);
      double d = comm ? commTime(op, t) : computeTime(op, t);
      double &free = comm ? commFree : computeFree;
      start = std::max(start, free);
      free = start + d;
      for (Value r : op->getResults())
        ready[r] = free;
      (comm ? t.comm : t.compute) += d;
    });
    t.step = std::max(computeFree, commFree);
    return t;
  }

private:
  double computeTime(Operation *op, Totals &t) {
    auto sbp = dyn_cast<SbpOpInterface>(op);
    if (!sbp)
      return 0; // views, parameters, constants
    double bytes = 0;
    for (Type ty : op->getOperandTypes())
      bytes += bytesOf(ty);
    for (Type ty : op->getResultTypes())
      bytes += bytesOf(ty);
    double flops = sbp.getComputeCost();
    t.flops += flops;
    return cost.kernel(flops, bytes, /*matmul=*/true);
  }

  int64_t groupSize(Operation *op) {
    if (auto r = dyn_cast<RedistributeOp>(op))
      if (MeshOp m = meshes.lookup(getSbp(r.getFrom())))
        return m.getNumDevices();
    auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
    if (!mesh || !axes)
      return 2; // a point-to-point transfer
    MeshOp m = meshes.lookup(mesh);
    int64_t n = 1;
    for (int64_t a : axes.asArrayRef())
      n *= m ? m.getShape()[a] : 1;
    return n;
  }

  double commTime(Operation *op, Totals &t) {
    using K = planner::CollectiveKind;
    double in = op->getNumOperands() ? bytesOf(op->getOperand(0).getType()) : 0;
    double out = op->getNumResults() ? bytesOf(op->getResult(0).getType()) : 0;
    std::optional<std::pair<K, double>> c;
    if (isa<AllReduceOp>(op))
      c = {K::AllReduce, in};
    else if (isa<AllGatherOp>(op))
      c = {K::AllGather, out};
    else if (isa<ReduceScatterOp>(op))
      c = {K::ReduceScatter, in};
    else if (isa<AllToAllOp>(op))
      c = {K::AllToAll, in};
    else if (isa<RedistributeOp>(op)) // as an all-to-all of the new piece
      c = {K::AllToAll, out};
    else if (isa<BroadcastOp>(op))
      c = {K::AllGather, out};
    else if (isa<SendOp>(op))
      c = {K::SendRecv, in};
    else if (isa<RecvOp>(op))
      c = {K::SendRecv, out};
    if (!c) // a local slice or partial: a copy
      return cost.kernel(0, in + out, false);
    planner::Group g;
    g.size = groupSize(op);
    g.perNode = g.size;
    double n = double(g.size);
    ++t.collectives;
    switch (c->first) {
    case K::AllReduce:
      t.moved += 2 * (n - 1) / n * c->second;
      break;
    case K::SendRecv:
      t.moved += c->second;
      break;
    default:
      t.moved += (n - 1) / n * c->second;
    }
    return cost.collective(c->first, c->second, g);
  }

  const planner::CostModel &cost;
  MeshCache &meshes;
};

struct SimulatePass : pc::impl::SimulateBase<SimulatePass> {
  using SimulateBase::SimulateBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    attrs::CostModel rates = costModelOf(module);
    planner::ClusterSpec spec = specOf(rates);
    planner::CostModel cost(spec, rates.peakFlops);
    MeshCache meshes(module);
    ProgramTimer timer(cost, meshes);
    double slowest = 0;
    int64_t programs = 0;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal() || attrs::getRanks(f).empty())
        continue;
      Totals t = timer.run(f);
      ++programs;
      slowest = std::max(slowest, t.step);
      llvm::outs() << llvm::format(
          "pc-simulate: @%s %s: %.3f GFLOP, compute %.3f ms, comm %.3f ms "
          "(%lld collectives, %.3f MiB per device); step %.3f ms\n",
          f.getSymName().str().c_str(), ranksText(f).c_str(), t.flops / 1e9,
          1e3 * t.compute, 1e3 * t.comm, (long long)t.collectives,
          t.moved / 1048576.0, 1e3 * t.step);
    }
    if (!programs) {
      module.emitError("pc-simulate: no per-device programs; run "
                       "pc-partition (or --pc-distribute) first");
      return signalPassFailure();
    }
    llvm::outs() << llvm::format("pc-simulate: predicted step %.3f ms\n",
                                 1e3 * slowest);
    numPrograms = programs;
  }
};

} // namespace

//===- ProgramSimulator.cpp - Timing a module's per-device programs -------===//

#include "passes/planning/ProgramSimulator.h"

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "planner/CostModel.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace pc {
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

/// The ops of `f` in the order the runtime fires them: by the action of
/// the schedule they belong to (an op outside every action goes with the
/// ops before it), in program order within one.
std::vector<Operation *> firingOrder(func::FuncOp f) {
  llvm::DenseMap<Attribute, int64_t> position;
  if (std::optional<SmallVector<ActionAttr>> s = attrs::getSchedule(f))
    for (auto [i, a] : llvm::enumerate(*s))
      position[a] = i;
  std::vector<std::pair<int64_t, Operation *>> keyed;
  int64_t key = -1;
  f.walk([&](Operation *op) {
    if (op == f.getOperation())
      return;
    if (ActionAttr a = attrs::getAction(op))
      if (auto it = position.find(a); it != position.end())
        key = it->second;
    keyed.push_back({key, op});
  });
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](auto &a, auto &b) { return a.first < b.first; });
  std::vector<Operation *> ops;
  for (auto &[k, op] : keyed)
    ops.push_back(op);
  return ops;
}

/// "from -> to" of a send or receive: the pair its matching counts in.
std::string pairOf(TypeAttr from, TypeAttr to) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << from << "->" << to;
  return s;
}

class Simulator {
public:
  Simulator(ModuleOp module)
      : module(module), rates(costModelOf(module)), spec(specOf(rates)),
        cost(spec, rates.peakFlops), meshes(module) {}

  Simulation run(StringRef graph) {
    Simulation result;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal() || attrs::getRanks(f).empty())
        continue;
      StringAttr g = attrs::getGraph(f);
      if (!graph.empty() && (!g || g.getValue() != graph))
        continue;
      Program p;
      p.timing.name = f.getSymName().str();
      p.timing.ranks = ranksText(f);
      p.ops = firingOrder(f);
      programs.push_back(std::move(p));
    }
    if (programs.empty()) {
      result.error = "no per-device programs; run pc-partition (or "
                     "--pc-distribute) first";
      return result;
    }
    // Round robin: a program runs until a receive waits for its send.
    for (bool progress = true; progress;) {
      progress = false;
      for (Program &p : programs)
        while (p.next < p.ops.size() && step(p, p.ops[p.next])) {
          ++p.next;
          progress = true;
        }
    }
    for (Program &p : programs) {
      if (p.next < p.ops.size()) {
        result.error = "@" + p.timing.name +
                       ": a receive has no matching send (the schedule "
                       "would deadlock)";
        return result;
      }
      p.timing.end = std::max(p.computeFree, p.commFree);
      result.step = std::max(result.step, p.timing.end);
      result.programs.push_back(p.timing);
    }
    return result;
  }

private:
  struct Program {
    ProgramTiming timing;
    std::vector<Operation *> ops;
    size_t next = 0;
    double computeFree = 0, commFree = 0;
    DenseMap<Value, double> ready;
    std::map<std::string, int64_t> sends, recvs;
  };

  /// Times `op` of `p`; false when it is a receive whose send has not run.
  bool step(Program &p, Operation *op) {
    double start = 0;
    for (Value v : op->getOperands())
      start = std::max(start, p.ready.lookup(v));
    bool comm = isCommOp(op);
    // On shared cores the two streams take turns.
    double &free = comm && !rates.sharedCores ? p.commFree : p.computeFree;
    start = std::max(start, free);
    double d = 0;
    if (auto recv = dyn_cast<RecvOp>(op)) {
      std::string pair = pairOf(recv.getFromAttr(), recv.getToAttr());
      auto sent = posted.find({pair, p.recvs[pair]});
      if (sent == posted.end())
        return false;
      ++p.recvs[pair];
      start = std::max(start, sent->second);
      // The pieces arrived with the send; the receive places them.
      d = cost.kernel(0, bytesOf(recv.getType()), false);
      ++p.timing.collectives;
      p.timing.moved += bytesOf(recv.getType());
    } else {
      d = comm ? commTime(op, p.timing) : computeTime(op, p.timing);
    }
    free = start + d;
    for (Value r : op->getResults())
      p.ready[r] = free;
    (comm ? p.timing.comm : p.timing.compute) += d;
    if (auto send = dyn_cast<SendOp>(op)) {
      std::string pair = pairOf(send.getFromAttr(), send.getToAttr());
      double &at = posted[{pair, p.sends[pair]++}];
      at = std::max(at, free);
    }
    return true;
  }

  double computeTime(Operation *op, ProgramTiming &t) {
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

  double commTime(Operation *op, ProgramTiming &t) {
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
    if (!c) // a local slice or partial: a copy
      return cost.kernel(0, in + out, false);
    planner::Group g;
    g.size = groupSize(op);
    g.perNode = g.size;
    double n = double(g.size);
    if (g.size > 1)
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

  ModuleOp module;
  attrs::CostModel rates;
  planner::ClusterSpec spec; // `cost` refers to it
  planner::CostModel cost;
  MeshCache meshes;
  std::vector<Program> programs;
  /// When the k-th send of a pair ended (the latest of its senders).
  std::map<std::pair<std::string, int64_t>, double> posted;
};

} // namespace

Simulation simulatePrograms(ModuleOp module, StringRef graph) {
  return Simulator(module).run(graph);
}

std::string formatSimulation(const Simulation &s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  for (const ProgramTiming &t : s.programs)
    os << llvm::format(
        "pc-simulate: @%s %s: %.3f GFLOP, compute %.3f ms, comm %.3f ms "
        "(%lld collectives, %.3f MiB per device); ends at %.3f ms\n",
        t.name.c_str(), t.ranks.c_str(), t.flops / 1e9, 1e3 * t.compute,
        1e3 * t.comm, (long long)t.collectives, t.moved / 1048576.0,
        1e3 * t.end);
  os << llvm::format("pc-simulate: predicted step %.3f ms\n", 1e3 * s.step);
  return out;
}

} // namespace pc

//===- AutoParallel.cpp - --pc-auto-parallel ------------------------------===//
//
// Builds the graph's cost graph (planner/CostGraph.h) - ops by signature,
// stored values by layout, boxing on the edges - solves it, and writes the
// chosen layouts as annotations. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "passes/planning/AutoParallelPlanner.h"
#include "passes/sbp/SbpCandidates.h"
#include "planner/CostGraph.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>

namespace pc {
#define GEN_PASS_DEF_AUTOPARALLEL
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;
using namespace pc::autoparallel;

double Planner::convert(Type type, SbpAttr src, SbpAttr dst) {
  if (src == dst)
    return 0;
  auto [it, inserted] = costs.try_emplace({type, src, dst}, 0.0);
  if (inserted)
    it->second =
        conversionCost(boxing, meshes, type, src, dst) / rates.linkBandwidth;
  return it->second;
}

FailureOr<FlatSymbolRefAttr> Planner::meshFor(Operation *op) {
  // A pipelined graph's op runs on its stage's mesh (pc-pipeline-split).
  if (std::optional<int64_t> stage = attrs::getStage(op))
    if (auto f = op->getParentOfType<func::FuncOp>()) {
      SmallVector<FlatSymbolRefAttr> stageMeshes = attrs::getStageMeshes(f);
      if (!stageMeshes.empty())
        return stageMeshes[*stage % int64_t(stageMeshes.size())];
    }
  MeshOp only = meshes.onlyMesh();
  if (!only)
    return op->emitOpError()
           << "pc-auto-parallel needs each op's mesh: the module has none or "
              "several, and the op has no pipeline stage on one (pc.stage "
              "and its function's pc.stage_meshes)";
  return FlatSymbolRefAttr::get(only.getSymNameAttr());
}

FailureOr<FlatSymbolRefAttr> Planner::meshOfUses(Value v, Operation *at) {
  Operation *first = nullptr;
  int64_t firstStage = 0;
  for (Operation *user : v.getUsers())
    if (std::optional<int64_t> s = attrs::getStage(user))
      if (!first || *s < firstStage) {
        first = user;
        firstStage = *s;
      }
  if (!first && !v.use_empty())
    first = *v.getUsers().begin();
  return meshFor(first ? first : at);
}

/// A stored value's node: every layout without partial entries, or the
/// annotated one.
int Planner::addStored(Type type, FlatSymbolRefAttr mesh, SbpAttr fixed,
                       Value value, StringAttr param) {
  Node n;
  n.value = value;
  n.param = param;
  n.mesh = mesh;
  ArrayRef<int64_t> meshShape = meshes.lookup(mesh).getShape();
  auto shape = cast<RankedTensorType>(type).getShape();
  if (fixed) {
    n.layouts.push_back(fixed);
  } else {
    SmallVector<SbpEntry> alphabet = {SbpEntry::broadcast()};
    for (size_t d = 0; d < shape.size(); ++d)
      alphabet.push_back(SbpEntry::split(d));
    SmallVector<SbpEntry> entries(meshShape.size(), SbpEntry::broadcast());
    std::function<void(size_t)> rec = [&](size_t axis) {
      if (axis == meshShape.size()) {
        if (!checkNdSbp(shape, meshShape, entries))
          n.layouts.push_back(makeSbp(module.getContext(), mesh, entries));
        return;
      }
      for (SbpEntry e : alphabet) {
        if (meshShape[axis] == 1 && !(e == SbpEntry::broadcast()))
          continue;
        entries[axis] = e;
        rec(axis + 1);
      }
    };
    rec(0);
  }
  for (SbpAttr l : n.layouts) {
    n.time.push_back(0);
    n.held.push_back(localBytes(type, l.getEntries(), meshShape));
  }
  nodes.push_back(std::move(n));
  return int(nodes.size()) - 1;
}

LogicalResult Planner::addOp(Operation *op) {
  FailureOr<FlatSymbolRefAttr> mesh = meshFor(op);
  if (failed(mesh))
    return failure();
  ArrayRef<int64_t> meshShape = meshes.lookup(*mesh).getShape();
  Node n;
  n.op = op;
  n.mesh = *mesh;
  if (auto to = dyn_cast<ToSbpOp>(op)) {
    n.layouts.push_back(getSbp(to.getType()));
    n.time.push_back(0);
    nodes.push_back(std::move(n));
    opNode[op] = int(nodes.size()) - 1;
    return success();
  }
  auto sbpOp = cast<SbpOpInterface>(op);
  for (NdSbpSignature &sig : ndSignatures(sbpOp, meshShape)) {
    bool allowed = true;
    for (auto [i, r] : llvm::enumerate(op->getResults()))
      if (SbpAttr fixed = getSbp(r.getType()))
        allowed &= sameLayout(makeSbp(op->getContext(), *mesh, sig.results[i]),
                              fixed, meshShape);
    if (allowed)
      n.sigs.push_back(std::move(sig));
  }
  if (n.sigs.empty())
    return op->emitOpError()
           << "has no SBP signature that produces its annotated result "
              "layout";
  bool forward = !isBackward(op);
  // Matmuls on 16-bit floats (mixed precision) run at their own peak.
  double peak = rates.peakFor(computeElementType(op));
  double work = sbpOp.getComputeCost();
  for (const NdSbpSignature &sig : n.sigs) {
    double bytes = 0, kept = 0;
    for (auto [v, e] : llvm::zip(op->getOperands(), sig.operands))
      bytes += localBytes(v.getType(), e, meshShape);
    for (auto [v, e] : llvm::zip(op->getResults(), sig.results)) {
      double b = localBytes(v.getType(), e, meshShape);
      bytes += b;
      if (forward && savedForBackward(v))
        kept += b;
    }
    double flops = work / double(sig.parallelism);
    n.time.push_back(std::max(flops / peak, bytes / rates.memoryBandwidth));
    n.saved.push_back(kept);
  }
  nodes.push_back(std::move(n));
  opNode[op] = int(nodes.size()) - 1;
  return success();
}

int Planner::producer(Value v) {
  if (Operation *def = v.getDefiningOp()) {
    if (auto it = opNode.find(def); it != opNode.end())
      return it->second;
    if (auto get = dyn_cast<GetParamOp>(def))
      return paramNode.lookup(get.getNameAttr().getAttr());
  }
  auto it = valueNode.find(v);
  if (it != valueNode.end())
    return it->second;
  // A constant, or the result of an op without signatures: a stored value,
  // on its producer's mesh.
  FailureOr<FlatSymbolRefAttr> mesh =
      v.getDefiningOp() ? meshFor(v.getDefiningOp()) : meshOfUses(v, module);
  if (failed(mesh))
    return -1;
  SbpAttr fixed = getSbp(v.getType());
  int n = addStored(v.getType(), fixed ? fixed.getMesh() : *mesh, fixed, v, {});
  valueNode[v] = n;
  return n;
}

SbpAttr Planner::produced(int node, Value v, int64_t state) {
  const Node &n = nodes[node];
  if (n.sigs.empty())
    return n.layouts[state];
  return makeSbp(module.getContext(), n.mesh,
                 n.sigs[state].results[cast<OpResult>(v).getResultNumber()]);
}

void Planner::addEdge(int from, Value v, int to,
                      const std::function<SbpAttr(int64_t)> &want) {
  // to < 0: a fixed layout the value must end in (an annotated result);
  // from < 0: the producer had no mesh (an error already emitted).
  if (from < 0) {
    missingMesh = true;
    return;
  }
  if (from != to)
    edgeSpecs.push_back({from, to, v, want});
}

LogicalResult Planner::build() {
  findBackward();
  // A parameter lives on the mesh of the first read of it in program
  // order (each stage's own, in a pipeline), as pc-pipeline-split places
  // it.
  DenseMap<StringAttr, Operation *> firstRead;
  forEachGraph(module, [&](func::FuncOp f) {
    f.walk([&](GetParamOp get) {
      firstRead.try_emplace(get.getNameAttr().getAttr(), get);
    });
  });
  for (auto param : module.getOps<ParamOp>()) {
    SbpAttr fixed = getSbp(param.getType());
    FlatSymbolRefAttr mesh;
    if (fixed) {
      mesh = fixed.getMesh();
    } else {
      Operation *read = firstRead.lookup(param.getSymNameAttr());
      auto all = module.getOps<MeshOp>();
      if (!read && !all.empty()) {
        // Read by no graph: it only needs a place; the first mesh's.
        mesh = FlatSymbolRefAttr::get((*all.begin()).getSymNameAttr());
      } else {
        FailureOr<FlatSymbolRefAttr> m = meshFor(read ? read : param);
        if (failed(m))
          return failure();
        mesh = *m;
      }
    }
    int n = addStored(param.getType(), mesh, fixed, {}, param.getSymNameAttr());
    paramNode[param.getSymNameAttr()] = n;
    bool trained = false;
    forEachGraph(module, [&](func::FuncOp f) {
      for (unsigned i = 0; i < f.getNumResults(); ++i)
        if (FlatSymbolRefAttr g = attrs::getGrad(f, i))
          trained |= g.getAttr() == param.getSymNameAttr();
    });
    if (trained)
      addTrainedMemory(nodes[n]);
  }
  bool ok = true;
  forEachGraph(module, [&](func::FuncOp f) {
    for (BlockArgument arg : f.getArguments()) {
      SbpAttr fixed = getSbp(arg.getType());
      FailureOr<FlatSymbolRefAttr> m =
          fixed ? FailureOr<FlatSymbolRefAttr>(fixed.getMesh())
                : meshOfUses(arg, f);
      if (failed(m)) {
        ok = false;
        return;
      }
      valueNode[arg] = addStored(arg.getType(), *m, fixed, arg, {});
    }
    f.walk([&](Operation *op) {
      if (isa<SbpOpInterface, ToSbpOp>(op))
        ok &= succeeded(addOp(op));
    });
  });
  if (!ok)
    return failure();
  MLIRContext *ctx = module.getContext();
  forEachGraph(module, [&](func::FuncOp f) {
    f.walk([&](Operation *op) {
      if (auto it = opNode.find(op); it != opNode.end()) {
        int to = it->second;
        for (auto [k, v] : llvm::enumerate(op->getOperands()))
          addEdge(producer(v), v, to, [this, to, k = k, ctx](int64_t s) {
            const Node &n = nodes[to];
            return n.sigs.empty() ? n.layouts[s]
                                  : makeSbp(ctx, n.mesh, n.sigs[s].operands[k]);
          });
      } else if (auto set = dyn_cast<SetParamOp>(op)) {
        int to = paramNode.lookup(set.getNameAttr().getAttr());
        addEdge(producer(set.getValue()), set.getValue(), to,
                [this, to](int64_t s) { return nodes[to].layouts[s]; });
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          // A gradient goes to its parameter's layout, where the optimizer
          // updates it (the data-parallel all-reduce, say).
          if (FlatSymbolRefAttr param = attrs::getGrad(f, i)) {
            int to = paramNode.lookup(param.getAttr());
            addEdge(producer(v), v, to,
                    [this, to](int64_t s) { return nodes[to].layouts[s]; });
          } else if (SbpAttr fixed = getSbp(f.getResultTypes()[i])) {
            addEdge(producer(v), v, -1, [fixed](int64_t) { return fixed; });
          }
        }
      }
    });
  });
  return failure(missingMesh);
}

LogicalResult Planner::solve(int64_t budget, bool report, bool checkExact) {
  auto begin = std::chrono::steady_clock::now();
  planner::CostGraph g;
  // Fixed ends of values (annotated results) cost their producers.
  std::vector<std::vector<double>> extra(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    extra[i].assign(nodes[i].states(), 0.0);
  for (const Node &n : nodes)
    g.addNode(n.time);
  double edgeCount = 0;
  for (const EdgeSpec &e : edgeSpecs) {
    Type type = e.value.getType();
    int64_t sa = nodes[e.from].states();
    if (e.to < 0) {
      for (int64_t x = 0; x < sa; ++x)
        extra[e.from][x] +=
            convert(type, produced(e.from, e.value, x), e.want(0));
      continue;
    }
    int64_t sb = nodes[e.to].states();
    SmallVector<SbpAttr> wants;
    for (int64_t y = 0; y < sb; ++y)
      wants.push_back(e.want(y));
    std::vector<double> m(size_t(sa * sb));
    for (int64_t x = 0; x < sa; ++x) {
      SbpAttr have = produced(e.from, e.value, x);
      for (int64_t y = 0; y < sb; ++y)
        m[size_t(x * sb + y)] = convert(type, have, wants[y]);
    }
    std::vector<double> kept = keptBytes(e, wants);
    std::vector<double> time = kept.empty() ? std::vector<double>() : m;
    int id = g.addEdge(e.from, e.to, std::move(m));
    if (!kept.empty())
      keptCopies.push_back(
          {id, e.from, e.to, nodes[e.to].mesh, std::move(time), kept});
    ++edgeCount;
  }
  // Memory at a price too small to trade against time (0.1 us per GB)
  // still breaks ties toward the plan that stores less.
  constexpr double kTieBreak = 1e-16;
  auto costsAt = [&](double lambda) {
    lambda += kTieBreak;
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::vector<double> c(nodes[i].time);
      for (size_t s = 0; s < c.size(); ++s)
        c[s] += extra[i][s] +
                lambda * nodes[i].priced(int64_t(s), training.inPlaceUpdates);
      g.setNodeCosts(int(i), std::move(c));
    }
    for (const KeptCopy &k : keptCopies) {
      std::vector<double> c(k.time);
      for (size_t s = 0; s < c.size(); ++s)
        c[s] += lambda * k.bytes[s];
      g.setEdgeCosts(k.edge, std::move(c));
    }
    return g.solve();
  };
  planner::CostGraph::Result best = costsAt(0);
  double price = 0; // of a byte, in seconds: the plan's (besides the tie)
  double memory = memoryOf(best.choice);
  if (budget > 0 && memory > double(budget)) {
    // Price memory until the plan fits: the smallest price that fits, by
    // bisection between a price that does not and one that does.
    double lo = 0, hi = 1e-15;
    planner::CostGraph::Result fit;
    // Local search need not shrink memory as its price grows: the least
    // seen is what the error reports.
    double smallest = memory;
    // Once memory outweighs time, a higher price changes nothing: stop
    // when the plan has stayed the same for a few raises.
    std::vector<int> last;
    double plainCost = best.cost;
    for (int i = 0, same = 0; i < 60 && same < 4; ++i, hi *= 8) {
      fit = costsAt(hi);
      price = hi;
      double need = memoryOf(fit.choice);
      smallest = std::min(smallest, need);
      if (need <= double(budget))
        break;
      // (Only once memory's price outweighs the unpriced plan's time.)
      same =
          fit.choice == last && hi * smallest > 100 * plainCost ? same + 1 : 0;
      last = fit.choice;
      lo = hi;
    }
    if (memoryOf(fit.choice) > double(budget))
      return module.emitError()
             << "pc-auto-parallel: no layout fits device-memory = " << budget
             << " bytes; the smallest found needs " << int64_t(smallest)
             << " bytes per device";
    for (int i = 0; i < 12; ++i) {
      double mid = lo > 0 ? std::sqrt(lo * hi) : hi / 8;
      planner::CostGraph::Result r = costsAt(mid);
      if (memoryOf(r.choice) <= double(budget)) {
        hi = mid;
        fit = r;
        price = mid;
      } else {
        lo = mid;
      }
    }
    best = fit;
    memory = memoryOf(best.choice);
  }
  choice = best.choice;
  if (checkExact) {
    costsAt(price);
    planner::CostGraph::Result brute = g.bruteForce(1e7);
    if (brute.choice.empty())
      return module.emitError()
             << "pc-auto-parallel: check-exact: the graph has more than 10^7 "
                "combinations";
    double mine = g.evaluate(choice);
    if (mine > brute.cost * (1 + 1e-9) + 1e-15)
      return module.emitError()
             << "pc-auto-parallel: check-exact: the plan costs " << mine
             << " s, brute force finds " << brute.cost << " s";
    if (report)
      llvm::outs() << llvm::format(
          "pc-auto-parallel: brute force agrees: %.6f ms\n", 1e3 * brute.cost);
  }
  numNodes = int64_t(nodes.size());
  for (const Node &n : nodes)
    numStates += n.states();
  numEliminated = best.eliminated;
  if (report) {
    double compute = 0;
    for (size_t i = 0; i < nodes.size(); ++i)
      compute += nodes[i].time[choice[i]];
    costsAt(0); // the plain costs, to split the total
    double total = g.evaluate(choice);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
            .count();
    llvm::outs() << llvm::format(
        "pc-auto-parallel: %lld nodes (%lld states), %lld edges; %d "
        "eliminated, %d left, solved %s; predicted %.3f ms (compute %.3f, "
        "boxing %.3f), %.1f MiB per device; %.2f s\n",
        (long long)numNodes, (long long)numStates, (long long)edgeCount,
        best.eliminated, best.remaining,
        best.exact ? "exactly" : "by local search", 1e3 * total, 1e3 * compute,
        1e3 * (total - compute), memory / 1048576.0, seconds);
  }
  return success();
}

void Planner::apply() {
  MLIRContext *ctx = module.getContext();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &n = nodes[i];
    int64_t s = choice[i];
    if (!n.sigs.empty()) {
      for (auto [r, e] : llvm::zip(n.op->getResults(), n.sigs[s].results))
        if (!getSbp(r.getType()))
          r.setType(withSbp(r.getType(), makeSbp(ctx, n.mesh, e)));
      continue;
    }
    SbpAttr layout = n.layouts[s];
    if (n.param) {
      auto param = module.lookupSymbol<ParamOp>(n.param);
      if (!getSbp(param.getType()))
        param.setType(withSbp(param.getType(), layout));
      continue;
    }
    Value v = n.value;
    if (v && !getSbp(v.getType()) &&
        (isa<BlockArgument>(v) || v.getDefiningOp<ConstantOp>()))
      v.setType(withSbp(v.getType(), layout));
  }
  // Reads of a parameter take its layout; functions their arguments'.
  forEachGraph(module, [&](func::FuncOp f) {
    f.walk([&](GetParamOp get) {
      auto param = module.lookupSymbol<ParamOp>(get.getNameAttr());
      if (!getSbp(get.getType()))
        get.getResult().setType(
            withSbp(get.getType(), getSbp(param.getType())));
    });
    // The signature follows the arguments and the returned values (an
    // annotated result type is kept: the return's edge made it so).
    SmallVector<Type> inputs(f.front().getArgumentTypes());
    SmallVector<Type> results(f.getResultTypes());
    f.walk([&](func::ReturnOp ret) {
      for (auto [t, v] : llvm::zip(results, ret.getOperands()))
        if (!getSbp(t))
          t = v.getType();
    });
    f.setFunctionType(FunctionType::get(ctx, inputs, results));
  });
  // A value that crosses pipeline stages moves to the consumer's mesh, in
  // the layout its chosen signature reads (boxing makes it a transfer):
  // once per value and layout, before its first consumer (nodes are in
  // program order), which dominates the others.
  DenseMap<std::pair<Value, Attribute>, Value> moved;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &n = nodes[i];
    if (n.sigs.empty())
      continue;
    for (auto [k, v] : llvm::enumerate(n.op->getOperands())) {
      SbpAttr have = getSbp(v.getType());
      if (!have || have.getMesh() == n.mesh)
        continue;
      SbpAttr want = makeSbp(ctx, n.mesh, n.sigs[choice[i]].operands[k]);
      Value &to = moved[{v, want}];
      if (!to) {
        OpBuilder b(n.op);
        to = ToSbpOp::create(b, n.op->getLoc(), withSbp(v.getType(), want), v);
      }
      n.op->setOperand(k, to);
    }
  }
}

namespace {

struct AutoParallelPass : pc::impl::AutoParallelBase<AutoParallelPass> {
  using AutoParallelBase::AutoParallelBase;

  void runOnOperation() override {
    // A cluster spec given here is the module's cost model from now on.
    if (!cluster.empty()) {
      llvm::Expected<attrs::CostModel> m = costModelFromSpec(cluster, "f32");
      if (!m) {
        getOperation().emitError()
            << "pc-auto-parallel: " << llvm::toString(m.takeError());
        return signalPassFailure();
      }
      attrs::setCostModel(getOperation(), *m);
    }
    attrs::CostModel m = costModelOf(getOperation());
    TrainingMemory training;
    training.states = optimizerStates;
    training.stateBytes = double(stateBits) / 32.0;
    training.zero = zero;
    training.zeroAxis = zeroAxis;
    training.offload = offloadOptimizer;
    training.recompute = recompute;
    training.inPlaceUpdates = inPlaceUpdates;
    Planner planner(getOperation(), m, training);
    if (failed(planner.build()) ||
        failed(planner.solve(deviceMemory, report, checkExact)))
      return signalPassFailure();
    planner.apply();
    numNodes = planner.numNodes;
    numStates = planner.numStates;
    numEliminated = planner.numEliminated;
  }
};

} // namespace

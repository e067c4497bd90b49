//===- SbpPropagate.cpp - --pc-sbp-propagate ------------------------------===//
//
// Decides the layout of every value and the signature of every logical op;
// see the pass description in Passes.td for the algorithm.
//
// Annotated values keep their layout. On an op result, an annotation is a
// constraint on the op: it must run with a signature that produces that
// layout (a value's layout changes only through pc.to_sbp or pc.boxing).
// Operands, by contrast, are converted to what the chosen signature needs.
//
//===----------------------------------------------------------------------===//

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "passes/sbp/SbpCandidates.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace pc {
#define GEN_PASS_DEF_SBPPROPAGATE
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

using Shape = SmallVector<int64_t, 4>;

class Propagator {
public:
  Propagator(ModuleOp module, boxing::Planner &planner)
      : module(module), ctx(module.getContext()), meshes(module),
        planner(planner) {}

  LogicalResult run();

  int64_t numDecided = 0, numSignatures = 0, numCandidates = 0;

private:
  /// The mesh an op runs on: that of its first decided operand or result.
  FlatSymbolRefAttr meshOf(Operation *op);
  /// Every nd signature of `op` on `mesh`, in a fixed order.
  SmallVector<NdSbpSignature, 0> candidates(SbpOpInterface op, MeshOp mesh);
  /// Picks the cheapest signature of `op` given what is decided. With
  /// `final`, only annotated results constrain it; otherwise decided results
  /// also weigh in. Fails (with a diagnostic) when no signature produces the
  /// annotated results.
  FailureOr<NdSbpSignature> choose(SbpOpInterface op, bool final);
  /// The layout that the uses of `v` want, the one cheapest for all of them.
  SbpAttr bestWant(Value v);

  bool forward(func::FuncOp f);
  bool backward(func::FuncOp f);
  LogicalResult decideDefaults(func::FuncOp f);
  void unifyParams();
  LogicalResult finalSweep(func::FuncOp f);
  /// Improves the greedy choices: an op switches signature when that lowers
  /// the boxing cost of its operands plus that of its results to what their
  /// consumers want. Every switch lowers the total, so this ends.
  bool refine(func::FuncOp f);
  /// The layout the use `use` consumes its value in, or null when any does.
  SbpAttr wantOf(OpOperand &use);
  /// conversionCost, memoized on the uniqued type and layouts: the same
  /// conversions recur in every layer, and the planner's own cache keys
  /// are strings.
  double convert(Type type, SbpAttr src, SbpAttr dst) {
    if (src == dst)
      return 0;
    auto [it, inserted] = costs.try_emplace({type, src, dst}, 0.0);
    if (inserted)
      it->second = conversionCost(planner, meshes, type, src, dst);
    return it->second;
  }
  DenseMap<std::tuple<Type, Attribute, Attribute>, double> costs;

  /// The layout parameter `name` is stored in, if known yet.
  SbpAttr paramLayoutOf(FlatSymbolRefAttr name);
  /// Each parameter's first pc.get_param and declared layout, found on
  /// first use.
  DenseMap<StringAttr, Value> firstReads;
  DenseMap<StringAttr, SbpAttr> declared;
  void apply(func::FuncOp f);

  void decide(Value v, SbpAttr sbp) {
    layout[v] = sbp;
    ++numDecided;
  }
  SbpAttr sbpOf(FlatSymbolRefAttr mesh, ArrayRef<SbpEntry> entries) {
    return makeSbp(ctx, mesh, entries);
  }

  ModuleOp module;
  MLIRContext *ctx;
  MeshCache meshes;
  boxing::Planner &planner;
  DenseMap<Value, SbpAttr> layout;
  DenseSet<Value> fixed;
  DenseMap<Operation *, NdSbpSignature> chosen;
  DenseMap<Operation *, FlatSymbolRefAttr> chosenMesh;
};

FlatSymbolRefAttr Propagator::meshOf(Operation *op) {
  // A pipeline stage's op runs on its stage's mesh (pc-pipeline-split).
  if (std::optional<int64_t> stage = attrs::getStage(op)) {
    auto f = op->getParentOfType<func::FuncOp>();
    SmallVector<FlatSymbolRefAttr> meshes = attrs::getStageMeshes(f);
    if (!meshes.empty())
      return meshes[*stage % meshes.size()];
  }
  for (Value v : op->getOperands())
    if (SbpAttr s = layout.lookup(v))
      return s.getMesh();
  for (Value v : op->getResults())
    if (SbpAttr s = layout.lookup(v))
      return s.getMesh();
  return {};
}

SmallVector<NdSbpSignature, 0> Propagator::candidates(SbpOpInterface op,
                                                      MeshOp mesh) {
  SmallVector<NdSbpSignature, 0> out = ndSignatures(op, mesh.getShape());
  numCandidates += out.size();
  return out;
}

FailureOr<NdSbpSignature> Propagator::choose(SbpOpInterface op, bool final) {
  FlatSymbolRefAttr meshName = meshOf(op);
  MeshOp mesh = meshes.lookup(meshName);
  SmallVector<NdSbpSignature, 0> sigs = candidates(op, mesh);
  double work = op.getComputeCost();
  const NdSbpSignature *best = nullptr;
  double bestCost = 0, bestWork = 0;
  for (const NdSbpSignature &sig : sigs) {
    double cost = 0;
    bool allowed = true;
    for (auto [i, v] : llvm::enumerate(op->getResults())) {
      SbpAttr have = layout.lookup(v);
      if (!have)
        continue;
      SbpAttr produced = sbpOf(meshName, sig.results[i]);
      if (fixed.contains(v)) {
        if (!sameLayout(produced, have, mesh.getShape()))
          allowed = false;
      } else if (!final) {
        cost += convert(v.getType(), produced, have);
      }
    }
    if (!allowed)
      continue;
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (SbpAttr have = layout.lookup(v))
        cost += convert(v.getType(), have, sbpOf(meshName, sig.operands[i]));
    double perDevice = work / sig.parallelism;
    if (!best || cost < bestCost ||
        (cost == bestCost && perDevice < bestWork)) {
      best = &sig;
      bestCost = cost;
      bestWork = perDevice;
    }
  }
  if (best)
    return *best;
  // The sweeps before the final one only learn that there is none; the
  // final sweep reports it, once.
  if (!final)
    return failure();

  InFlightDiagnostic diag = op->emitOpError()
                            << "has no SBP signature on mesh " << meshName
                            << " that produces its annotated result layout";
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (fixed.contains(v))
      diag << " " << layout.lookup(v).formatEntries();
  diag << " from operands";
  for (Value v : op->getOperands()) {
    SbpAttr s = layout.lookup(v);
    diag << " " << (s ? s.formatEntries() : std::string("(undecided)"));
  }
  diag << "; its signatures are";
  for (auto [i, sig] : llvm::enumerate(sigs)) {
    if (i == 12) {
      diag << " ... (" << sigs.size() << " in all)";
      break;
    }
    diag << (i ? ", " : " ") << sig.str();
  }
  diag.attachNote() << "change the layout of an operand or result with "
                       "pc.to_sbp instead";
  return failure();
}

SbpAttr Propagator::wantOf(OpOperand &use) {
  Operation *user = use.getOwner();
  auto it = chosen.find(user);
  if (it != chosen.end())
    return sbpOf(chosenMesh[user], it->second.operands[use.getOperandNumber()]);
  if (auto toSbp = dyn_cast<ToSbpOp>(user))
    return getSbp(toSbp.getType());
  if (auto ret = dyn_cast<func::ReturnOp>(user)) {
    auto f = ret->getParentOfType<func::FuncOp>();
    return getSbp(f.getResultTypes()[use.getOperandNumber()]);
  }
  if (auto set = dyn_cast<SetParamOp>(user))
    return paramLayoutOf(set.getNameAttr());
  return {};
}

SbpAttr Propagator::paramLayoutOf(FlatSymbolRefAttr name) {
  // The declared layout, or that of the parameter's first read once decided
  // (unifyParams gives every read that layout).
  // Both found once: a symbol lookup scans the module, and training graphs
  // ask for every parameter in every sweep.
  if (firstReads.empty()) {
    for (auto param : module.getOps<ParamOp>())
      if (SbpAttr s = getSbp(param.getType()))
        declared[param.getSymNameAttr()] = s;
    forEachGraph(module, [&](func::FuncOp f) {
      f.walk([&](GetParamOp get) {
        firstReads.try_emplace(get.getNameAttr().getAttr(), get.getResult());
      });
    });
  }
  if (SbpAttr s = declared.lookup(name.getAttr()))
    return s;
  Value first = firstReads.lookup(name.getAttr());
  return first ? layout.lookup(first) : SbpAttr();
}

SbpAttr Propagator::bestWant(Value v) {
  SmallVector<SbpAttr> wants;
  for (OpOperand &use : v.getUses())
    if (SbpAttr want = wantOf(use))
      wants.push_back(want);
  // Inputs and parameters are stored whole values: they take partial
  // layouts' B form, and the consumer's local partial step is free.
  bool isStored = isa<BlockArgument>(v) || v.getDefiningOp<GetParamOp>();
  SmallVector<SbpAttr> candidates;
  for (SbpAttr w : wants) {
    SbpAttr c = w;
    if (isStored && w.hasPartial()) {
      SmallVector<SbpEntry> entries(w.getEntries());
      for (SbpEntry &e : entries)
        if (e.isPartial())
          e = SbpEntry::broadcast();
      c = sbpOf(w.getMesh(), entries);
    }
    if (!llvm::is_contained(candidates, c))
      candidates.push_back(c);
  }
  SbpAttr best;
  double bestCost = 0;
  for (SbpAttr candidate : candidates) {
    double cost = 0;
    for (SbpAttr w : wants)
      cost += convert(v.getType(), candidate, w);
    if (!best || cost < bestCost) {
      best = candidate;
      bestCost = cost;
    }
  }
  return best;
}

bool Propagator::forward(func::FuncOp f) {
  bool changed = false;
  for (Operation &op : f.getBody().front()) {
    auto sbpOp = dyn_cast<SbpOpInterface>(op);
    if (!sbpOp || !meshOf(&op))
      continue;
    FailureOr<NdSbpSignature> sig = choose(sbpOp, /*final=*/false);
    if (failed(sig))
      continue; // Reported again, and fatally, by the final sweep.
    chosen[&op] = *sig;
    chosenMesh[&op] = meshOf(&op);
    for (auto [i, r] : llvm::enumerate(op.getResults()))
      if (!layout.count(r)) {
        decide(r, sbpOf(chosenMesh[&op], sig->results[i]));
        changed = true;
      }
  }
  return changed;
}

bool Propagator::backward(func::FuncOp f) {
  bool changed = false;
  auto visit = [&](Value v) {
    if (layout.count(v))
      return;
    if (SbpAttr want = bestWant(v)) {
      decide(v, want);
      changed = true;
    }
  };
  for (Operation &op : llvm::reverse(f.getBody().front()))
    for (Value v : op.getOperands())
      visit(v);
  for (BlockArgument arg : f.getArguments())
    visit(arg);
  return changed;
}

LogicalResult Propagator::decideDefaults(func::FuncOp f) {
  auto fallback = [&](Value v, Operation *where) -> LogicalResult {
    if (layout.count(v))
      return success();
    MeshOp mesh = meshes.onlyMesh();
    if (!mesh)
      return where->emitOpError()
             << "cannot decide a layout for " << v.getType()
             << ": nothing connects it to an annotated value, and the module "
                "has no single mesh to broadcast it on; annotate it";
    auto rank = mesh.getShape().size();
    decide(v, sbpOf(FlatSymbolRefAttr::get(mesh.getSymNameAttr()),
                    SmallVector<SbpEntry>(rank, SbpEntry::broadcast())));
    return success();
  };
  for (BlockArgument arg : f.getArguments())
    if (failed(fallback(arg, f)))
      return failure();
  for (Operation &op : f.getBody().front())
    if (isa<GetParamOp, ConstantOp>(op))
      if (failed(fallback(op.getResult(0), &op)))
        return failure();
  return success();
}

void Propagator::unifyParams() {
  // A parameter without a declared layout takes that of its first read;
  // other reads then read it in that layout, and boxing converts.
  DenseMap<StringAttr, SbpAttr> paramLayout;
  for (auto param : module.getOps<ParamOp>())
    if (SbpAttr s = getSbp(param.getType()))
      paramLayout[param.getSymNameAttr()] = s;
  forEachGraph(module, [&](func::FuncOp f) {
    f.walk([&](GetParamOp get) {
      StringAttr name = get.getNameAttr().getAttr();
      auto [it, inserted] = paramLayout.try_emplace(name, layout[get]);
      layout[get] = it->second;
    });
  });
  for (auto param : module.getOps<ParamOp>())
    if (SbpAttr s = paramLayout.lookup(param.getSymNameAttr()))
      param.setTypeAttr(TypeAttr::get(withSbp(param.getType(), s)));
}

LogicalResult Propagator::finalSweep(func::FuncOp f) {
  for (Operation &op : f.getBody().front()) {
    auto sbpOp = dyn_cast<SbpOpInterface>(op);
    if (!sbpOp) {
      if (!isa<func::ReturnOp>(op) &&
          (!op.getDialect() || !isa<PcDialect>(op.getDialect())))
        return op.emitOpError("is not a pc logical op; SBP propagation "
                              "cannot give it a layout");
      continue;
    }
    if (!meshOf(&op))
      return op.emitOpError("has no decided operand to take a mesh from");
    FailureOr<NdSbpSignature> sig = choose(sbpOp, /*final=*/true);
    if (failed(sig))
      return failure();
    chosen[&op] = *sig;
    chosenMesh[&op] = meshOf(&op);
    ++numSignatures;
    // An annotated result keeps its annotation (the signature produces the
    // same layout, up to entries on axes of one device).
    for (auto [i, r] : llvm::enumerate(op.getResults()))
      if (!fixed.contains(r))
        layout[r] = sbpOf(chosenMesh[&op], sig->results[i]);
  }
  return success();
}

bool Propagator::refine(func::FuncOp f) {
  bool changed = false;
  for (Operation &op : f.getBody().front()) {
    auto sbpOp = dyn_cast<SbpOpInterface>(op);
    if (!sbpOp || !chosen.count(&op))
      continue;
    FlatSymbolRefAttr mesh = chosenMesh[&op];
    auto total = [&](const NdSbpSignature &sig) {
      double cost = 0;
      for (auto [i, v] : llvm::enumerate(op.getOperands()))
        cost += convert(v.getType(), layout[v], sbpOf(mesh, sig.operands[i]));
      for (auto [i, r] : llvm::enumerate(op.getResults())) {
        SbpAttr produced = sbpOf(mesh, sig.results[i]);
        if (fixed.contains(r) &&
            !sameLayout(produced, layout[r], meshes.lookup(mesh).getShape()))
          return std::numeric_limits<double>::infinity();
        for (OpOperand &use : r.getUses())
          if (SbpAttr want = wantOf(use))
            cost += convert(r.getType(), produced, want);
      }
      return cost;
    };
    double current = total(chosen[&op]);
    const NdSbpSignature *better = nullptr;
    SmallVector<NdSbpSignature, 0> sigs =
        candidates(sbpOp, meshes.lookup(mesh));
    for (const NdSbpSignature &sig : sigs) {
      double cost = total(sig);
      if (cost < current) {
        current = cost;
        better = &sig;
      }
    }
    if (!better)
      continue;
    chosen[&op] = *better;
    for (auto [i, r] : llvm::enumerate(op.getResults()))
      if (!fixed.contains(r))
        layout[r] = sbpOf(mesh, better->results[i]);
    changed = true;
  }
  return changed;
}

void Propagator::apply(func::FuncOp f) {
  Block &body = f.getBody().front();
  for (BlockArgument arg : f.getArguments())
    arg.setType(withSbp(arg.getType(), layout.lookup(arg)));
  for (Operation &op : body) {
    for (Value r : op.getResults())
      if (SbpAttr s = layout.lookup(r))
        r.setType(withSbp(r.getType(), s));
    if (auto set = dyn_cast<SetParamOp>(op)) {
      // The next step reads the value in the parameter's layout.
      SbpAttr want = paramLayoutOf(set.getNameAttr());
      if (want && want != layout.lookup(set.getValue()))
        attrs::setOperandSbps(&op, ArrayAttr::get(ctx, {want}));
      continue;
    }
    auto it = chosen.find(&op);
    if (it == chosen.end())
      continue;
    SmallVector<Attribute> wants;
    for (const auto &entries : it->second.operands)
      wants.push_back(sbpOf(chosenMesh[&op], entries));
    attrs::setOperandSbps(&op, ArrayAttr::get(ctx, wants));
  }
  // Results: keep annotated ones (a return converts to them), take the
  // layout of the returned value otherwise.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Type> results;
  SmallVector<Attribute> wants;
  bool converts = false;
  for (auto [t, v] : llvm::zip(f.getResultTypes(), ret.getOperands())) {
    SbpAttr want = getSbp(t);
    if (!want)
      want = getSbp(v.getType());
    converts |= want != getSbp(v.getType());
    results.push_back(withSbp(t, want));
    wants.push_back(want);
  }
  if (converts)
    attrs::setOperandSbps(ret, ArrayAttr::get(ctx, wants));
  f.setType(FunctionType::get(ctx, body.getArgumentTypes(), results));
}

LogicalResult Propagator::run() {
  SmallVector<func::FuncOp> graphs;
  forEachGraph(module, [&](func::FuncOp f) { graphs.push_back(f); });
  for (func::FuncOp f : graphs) {
    if (!f.getBody().hasOneBlock())
      return f.emitOpError("must have one block; pc graphs have no control "
                           "flow");
    for (BlockArgument arg : f.getArguments())
      if (SbpAttr s = getSbp(arg.getType())) {
        layout[arg] = s;
        fixed.insert(arg);
      }
    for (Operation &op : f.getBody().front())
      for (Value r : op.getResults())
        if (SbpAttr s = getSbp(r.getType())) {
          layout[r] = s;
          fixed.insert(r);
        }
  }
  // Sweep until nothing new is decided; every sweep decides at least one
  // value or stops, so this ends.
  for (bool changed = true; changed;) {
    changed = false;
    for (func::FuncOp f : graphs)
      changed |= forward(f);
    for (func::FuncOp f : llvm::reverse(graphs))
      changed |= backward(f);
  }
  for (func::FuncOp f : graphs)
    if (failed(decideDefaults(f)))
      return failure();
  unifyParams();
  for (func::FuncOp f : graphs)
    if (failed(finalSweep(f)))
      return failure();
  for (func::FuncOp f : graphs)
    while (refine(f))
      ;
  for (func::FuncOp f : graphs)
    apply(f);
  return success();
}

struct SbpPropagatePass : public pc::impl::SbpPropagateBase<SbpPropagatePass> {
  using SbpPropagateBase::SbpPropagateBase;

  void runOnOperation() override {
    boxing::Planner planner(costParams(getOperation()));
    Propagator p(getOperation(), planner);
    if (failed(p.run()))
      return signalPassFailure();
    numDecided += p.numDecided;
    numSignatures += p.numSignatures;
    numCandidates += p.numCandidates;
  }
};

} // namespace

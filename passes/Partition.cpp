//===- Partition.cpp - --pc-partition -------------------------------------===//
//
// Groups the ranks into classes with identical programs, then emits one
// program per class from a representative rank (see Passes.td).
//
// A rank's program is determined by which meshes it is on and by the local
// shapes and group extents of the values and steps whose pieces are uneven;
// evenly split values look the same on every rank of their mesh. So the
// class key of a rank is built from the uneven items only, and a graph
// without uneven pieces costs O(ranks x meshes) to classify.
//
//===----------------------------------------------------------------------===//

#include "passes/LocalOps.h"
#include "passes/Passes.h"

#include <map>
#include <set>
#include "llvm/ADT/SetVector.h"

namespace pc {
#define GEN_PASS_DEF_PARTITION
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

bool isStepOp(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
             LocalSliceOp, LocalPartialOp>(op);
}

class Partitioner {
public:
  explicit Partitioner(ModuleOp module) : module(module), meshes(module) {}

  LogicalResult partition(func::FuncOp f, int64_t &programs, int64_t &ranks);

private:
  LogicalResult check(func::FuncOp f);
  std::string classKey(func::FuncOp f, int64_t rank,
                       ArrayRef<FlatSymbolRefAttr> usedMeshes,
                       ArrayRef<Value> unevenValues,
                       ArrayRef<Operation *> unevenSteps);
  func::FuncOp emitProgram(func::FuncOp f, ArrayRef<int64_t> ranks,
                           int64_t index);

  ModuleOp module;
  MeshCache meshes;
  boxing::Planner planner;
};

LogicalResult Partitioner::check(func::FuncOp f) {
  for (BlockArgument arg : f.getArguments())
    if (!getSbp(arg.getType()))
      return f.emitOpError() << "argument #" << arg.getArgNumber()
                             << " has no layout; run --pc-sbp-propagate first";
  WalkResult r = f.walk([&](Operation *op) -> WalkResult {
    if (isa<BoxingOp, ToSbpOp>(op))
      return op->emitOpError("must be lowered before partitioning; run "
                             "--pc-insert-boxing and --pc-lower-boxing first");
    for (Value v : op->getResults())
      if (isa<RankedTensorType>(v.getType()) && !getSbp(v.getType()))
        return op->emitOpError("has a result without a layout; run "
                               "--pc-sbp-propagate first");
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

std::string Partitioner::classKey(func::FuncOp f, int64_t rank,
                                  ArrayRef<FlatSymbolRefAttr> usedMeshes,
                                  ArrayRef<Value> unevenValues,
                                  ArrayRef<Operation *> unevenSteps) {
  RankView view(meshes, rank);
  std::string key;
  auto put = [&](int64_t v) {
    key.append(reinterpret_cast<const char *>(&v), sizeof(v));
  };
  for (FlatSymbolRefAttr m : usedMeshes)
    put(view.coords(m).has_value());
  for (Value v : unevenValues) {
    std::optional<RankedTensorType> t = view.localType(v.getType());
    put(t.has_value());
    if (t)
      for (int64_t d : t->getShape())
        put(d);
  }
  // Steps whose groups see uneven pieces: the extents of every member.
  for (Operation *op : unevenSteps) {
    SbpAttr in = getSbp(op->getOperand(0).getType());
    SbpAttr out = getSbp(op->getResult(0).getType());
    if (!view.coords(in.getMesh())) {
      put(-1);
      continue;
    }
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    auto shape = cast<RankedTensorType>(op->getOperand(0).getType()).getShape();
    for (size_t d = 0; d < shape.size(); ++d) {
      for (int64_t x : view.memberExtents(shape, in, axes, d))
        put(x);
      for (int64_t x : view.memberExtents(shape, out, axes, d))
        put(x);
    }
  }
  return key;
}

func::FuncOp Partitioner::emitProgram(func::FuncOp f, ArrayRef<int64_t> ranks,
                                      int64_t index) {
  MLIRContext *ctx = f.getContext();
  RankView view(meshes, ranks.front());
  OpBuilder b(f);
  auto program = func::FuncOp::create(
      b, f.getLoc(), (f.getSymName() + ".part" + Twine(index)).str(),
      FunctionType::get(ctx, {}, {}));
  program->setAttr("pc.graph", b.getStringAttr(f.getSymName()));
  program->setAttr("pc.ranks", b.getDenseI64ArrayAttr(ranks));
  Block *body = program.addEntryBlock();
  b.setInsertionPointToStart(body);

  IRMapping map;
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  auto attrsFor = [&](int64_t i, Type logical) {
    return b.getDictionaryAttr(
        {b.getNamedAttr("pc.index", b.getI64IntegerAttr(i)),
         b.getNamedAttr("pc.logical_type", TypeAttr::get(logical))});
  };
  for (BlockArgument arg : f.getArguments())
    if (auto t = view.localType(arg.getType())) {
      map.map(arg, body->addArgument(*t, arg.getLoc()));
      argAttrs.push_back(attrsFor(arg.getArgNumber(), arg.getType()));
    }

  for (Operation &op : f.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<Value> results;
      for (auto [i, v] : llvm::enumerate(ret.getOperands()))
        if (view.localType(v.getType())) {
          results.push_back(map.lookup(v));
          resultAttrs.push_back(attrsFor(i, v.getType()));
        }
      func::ReturnOp::create(b, ret.getLoc(), results);
      continue;
    }
    if (failed(emitLocalOp(&op, b, map, view, planner))) {
      program.erase();
      return {};
    }
  }
  program.setType(FunctionType::get(
      ctx, body->getArgumentTypes(),
      body->getTerminator()->getOperandTypes()));
  program.setAllArgAttrs(argAttrs);
  program.setAllResultAttrs(resultAttrs);
  return program;
}

LogicalResult Partitioner::partition(func::FuncOp f, int64_t &programs,
                                     int64_t &rankCount) {
  if (failed(check(f)))
    return failure();
  llvm::SetVector<Attribute> meshNames;
  SmallVector<Value> unevenValues;
  auto note = [&](Value v) {
    SbpAttr sbp = getSbp(v.getType());
    meshNames.insert(sbp.getMesh());
    auto shape = cast<RankedTensorType>(v.getType()).getShape();
    if (!isEvenlySplit(shape, meshes.lookup(sbp).getShape(), sbp.getEntries()))
      unevenValues.push_back(v);
  };
  for (BlockArgument arg : f.getArguments())
    note(arg);
  SmallVector<Operation *> unevenSteps;
  for (Operation &op : f.getBody().front()) {
    for (Value v : op.getResults())
      note(v);
    if (isStepOp(&op) || isa<EmbeddingOp>(op)) {
      Value in = op.getOperand(isa<EmbeddingOp>(op) ? 1 : 0);
      SbpAttr sbp = getSbp(in.getType());
      auto shape = cast<RankedTensorType>(in.getType()).getShape();
      bool uneven =
          !isEvenlySplit(shape, meshes.lookup(sbp).getShape(), sbp.getEntries());
      if (isStepOp(&op)) {
        SbpAttr out = getSbp(op.getResult(0).getType());
        uneven |= !isEvenlySplit(shape, meshes.lookup(out).getShape(),
                                 out.getEntries());
      }
      if (uneven)
        unevenSteps.push_back(&op);
    }
  }
  SmallVector<FlatSymbolRefAttr> used;
  std::set<int64_t> allRanks;
  for (Attribute name : meshNames) {
    auto ref = cast<FlatSymbolRefAttr>(name);
    used.push_back(ref);
    MeshOp mesh = meshes.lookup(ref);
    for (int64_t p = 0, n = mesh.getNumDevices(); p < n; ++p)
      allRanks.insert(mesh.getRank(p));
  }

  // Classes in the order of their first rank.
  std::map<std::string, size_t> classOf;
  std::vector<SmallVector<int64_t>> classes;
  for (int64_t rank : allRanks) {
    auto [it, inserted] = classOf.try_emplace(
        classKey(f, rank, used, unevenValues, unevenSteps), classes.size());
    if (inserted)
      classes.emplace_back();
    classes[it->second].push_back(rank);
  }
  int64_t index = 0;
  for (auto &ranks : classes) {
    if (!emitProgram(f, ranks, index++))
      return failure();
    ++programs;
    rankCount += ranks.size();
  }
  f.erase();
  return success();
}

struct PartitionPass : public pc::impl::PartitionBase<PartitionPass> {
  void runOnOperation() override {
    Partitioner p(getOperation());
    SmallVector<func::FuncOp> graphs;
    forEachGraph(getOperation(), [&](func::FuncOp f) {
      if (!f->hasAttr("pc.graph"))
        graphs.push_back(f);
    });
    int64_t programs = 0, ranks = 0;
    for (func::FuncOp f : graphs)
      if (failed(p.partition(f, programs, ranks)))
        return signalPassFailure();
    numPrograms += programs;
    numRanks += ranks;
  }
};

} // namespace

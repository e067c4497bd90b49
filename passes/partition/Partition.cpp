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

#include "dialect/ProgramAttrs.h"
#include "passes/Passes.h"
#include "passes/partition/LocalOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include <map>
#include <set>

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

/// Something whose per-device form differs between ranks of its mesh: a
/// value type with an uneven layout, or a vocab-parallel lookup over uneven
/// rows. Its form on a rank depends only on the rank's coordinates
/// on `dependsOn`, so forms are computed once per distinct projection.
struct UnevenItem {
  Operation *op = nullptr; // an embedding or cross-entropy; null for a type
  Type type;               // the value type, for value items
  FlatSymbolRefAttr mesh;
  SmallVector<int64_t> dependsOn;
  std::map<SmallVector<int64_t>, int64_t> idOfProjection;
  std::map<std::vector<int64_t>, int64_t> idOfForm;
};

class Partitioner {
public:
  explicit Partitioner(ModuleOp module)
      : module(module), meshes(module), planner(costParams(module)) {}

  LogicalResult partition(func::FuncOp f, int64_t &programs, int64_t &ranks);

private:
  LogicalResult check(func::FuncOp f);
  /// The items of `f` whose forms differ between ranks, one per distinct
  /// type or step.
  std::vector<UnevenItem> unevenItems(func::FuncOp f);
  /// The form of `item` on the rank seen by `view`, as numbers.
  std::vector<int64_t> formOf(const UnevenItem &item, RankView &view);
  std::string classKey(int64_t rank, ArrayRef<FlatSymbolRefAttr> usedMeshes,
                       std::vector<UnevenItem> &items);
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

std::vector<UnevenItem> Partitioner::unevenItems(func::FuncOp f) {
  std::vector<UnevenItem> items;
  auto isUneven = [&](Type t) {
    SbpAttr sbp = getSbp(t);
    return !isEvenlySplit(cast<RankedTensorType>(t).getShape(),
                          meshes.lookup(sbp).getShape(), sbp.getEntries());
  };
  auto allAxes = [&](SbpAttr sbp) {
    SmallVector<int64_t> axes;
    for (size_t a = 0; a < sbp.getEntries().size(); ++a)
      axes.push_back(a);
    return axes;
  };
  llvm::DenseSet<Type> seenTypes;
  auto noteValue = [&](Value v) {
    if (!isUneven(v.getType()) || !seenTypes.insert(v.getType()).second)
      return;
    UnevenItem item;
    item.type = v.getType();
    item.mesh = getSbp(v.getType()).getMesh();
    item.dependsOn = allAxes(getSbp(v.getType()));
    items.push_back(std::move(item));
  };
  for (BlockArgument arg : f.getArguments())
    noteValue(arg);
  std::set<std::tuple<const void *, const void *, const void *, const void *>>
      seenSteps;
  for (Operation &op : f.getBody().front()) {
    for (Value v : op.getResults())
      if (isa<RankedTensorType>(v.getType()))
        noteValue(v);
    // Steps list no member extents, so only their local shapes (value
    // items) differ between ranks; a vocab-parallel lookup lists the rows'
    // extents.
    Value table;
    if (auto emb = dyn_cast<EmbeddingOp>(op))
      table = emb.getTable();
    else if (auto ce = dyn_cast<CrossEntropyOp>(op))
      table = ce.getLogits();
    else
      continue;
    if (!isUneven(table.getType()) ||
        !seenSteps
             .insert({op.getName().getAsOpaquePointer(),
                      op.getRawDictionaryAttrs().getAsOpaquePointer(),
                      table.getType().getAsOpaquePointer(),
                      op.getResult(0).getType().getAsOpaquePointer()})
             .second)
      continue;
    UnevenItem item;
    item.op = &op;
    item.mesh = getSbp(table.getType()).getMesh();
    item.dependsOn = allAxes(getSbp(table.getType()));
    items.push_back(std::move(item));
  }
  return items;
}

std::vector<int64_t> Partitioner::formOf(const UnevenItem &item,
                                         RankView &view) {
  std::vector<int64_t> form;
  if (!item.op) {
    for (int64_t d : view.localType(item.type)->getShape())
      form.push_back(d);
    return form;
  }
  {
    // A vocab-parallel lookup or loss shifts ids by the extents of the
    // members before this one along the split dim (rows of the table,
    // classes of the logits).
    Value split = isa<EmbeddingOp>(item.op) ? item.op->getOperand(1)
                                            : item.op->getOperand(0);
    auto type = cast<RankedTensorType>(split.getType());
    int64_t dim = isa<EmbeddingOp>(item.op) ? 0 : type.getRank() - 1;
    SbpAttr sbp = getSbp(type);
    SmallVector<int64_t> axes;
    for (auto [axis, e] : llvm::enumerate(sbp.getEntries()))
      if (e.isSplit() && e.dim == dim)
        axes.push_back(axis);
    for (int64_t x : view.memberExtents(type.getShape(), sbp, axes, dim))
      form.push_back(x);
  }
  return form;
}

std::string Partitioner::classKey(int64_t rank,
                                  ArrayRef<FlatSymbolRefAttr> usedMeshes,
                                  std::vector<UnevenItem> &items) {
  RankView view(meshes, rank);
  std::string key;
  auto put = [&](int64_t v) {
    key.append(reinterpret_cast<const char *>(&v), sizeof(v));
  };
  for (FlatSymbolRefAttr m : usedMeshes)
    put(view.coords(m).has_value());
  for (UnevenItem &item : items) {
    std::optional<SmallVector<int64_t, 4>> c = view.coords(item.mesh);
    if (!c) {
      put(-1);
      continue;
    }
    SmallVector<int64_t> projection;
    for (int64_t a : item.dependsOn)
      projection.push_back((*c)[a]);
    auto [it, inserted] = item.idOfProjection.try_emplace(projection, 0);
    if (inserted) {
      std::vector<int64_t> form = formOf(item, view);
      it->second =
          item.idOfForm.try_emplace(form, item.idOfForm.size()).first->second;
    }
    put(it->second);
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
  attrs::setGraph(program, f.getSymName());
  attrs::setRanks(program, ranks);
  if (PipelineAttr pipeline = attrs::getPipeline(f))
    attrs::setPipeline(program, pipeline);
  Block *body = program.addEntryBlock();
  b.setInsertionPointToStart(body);

  IRMapping map;
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  // The user's pc.name, and what a value is for in training (pc.loss,
  // pc.grad), travel with the value, so that a runner given only per-device
  // programs still reads and writes the named files and finds the loss.
  auto attrsFor = [&](int64_t i, Type logical, DictionaryAttr original) {
    SmallVector<NamedAttribute> entries{attrs::index(b, i),
                                        attrs::logicalType(b, logical)};
    for (StringRef kept : {attrs::kName, attrs::kLoss, attrs::kGrad})
      if (Attribute a = original ? original.get(kept) : Attribute())
        entries.push_back(b.getNamedAttr(kept, a));
    return b.getDictionaryAttr(entries);
  };
  for (BlockArgument arg : f.getArguments())
    if (auto t = view.localType(arg.getType())) {
      map.map(arg, body->addArgument(*t, arg.getLoc()));
      argAttrs.push_back(attrsFor(arg.getArgNumber(), arg.getType(),
                                  f.getArgAttrDict(arg.getArgNumber())));
    }

  for (Operation &op : f.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<Value> results;
      for (auto [i, v] : llvm::enumerate(ret.getOperands()))
        if (view.localType(v.getType())) {
          results.push_back(map.lookup(v));
          resultAttrs.push_back(
              attrsFor(i, v.getType(), f.getResultAttrDict(i)));
        }
      func::ReturnOp::create(b, ret.getLoc(), results);
      continue;
    }
    Operation *last = body->empty() ? nullptr : &body->back();
    if (failed(emitLocalOp(&op, b, map, view, planner))) {
      program.erase();
      return {};
    }
    // A pipeline action covers every op its logical op became.
    if (ActionAttr action = attrs::getAction(&op))
      for (Operation *o = last            ? last->getNextNode()
                          : body->empty() ? nullptr
                                          : &body->front();
           o; o = o->getNextNode())
        attrs::setAction(o, action);
  }
  program.setType(FunctionType::get(ctx, body->getArgumentTypes(),
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
  auto noteMesh = [&](Value v) {
    meshNames.insert(getSbp(v.getType()).getMesh());
  };
  for (BlockArgument arg : f.getArguments())
    noteMesh(arg);
  for (Operation &op : f.getBody().front())
    for (Value v : op.getResults())
      if (isa<RankedTensorType>(v.getType()))
        noteMesh(v);
  std::vector<UnevenItem> items = unevenItems(f);
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
    auto [it, inserted] =
        classOf.try_emplace(classKey(rank, used, items), classes.size());
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
      if (!attrs::getGraph(f))
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

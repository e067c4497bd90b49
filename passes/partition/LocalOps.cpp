//===- LocalOps.cpp - One device's form of a logical op -------------------===//
//
// After boxing, every logical op's operands are in the layouts of its
// signature, so on each device it is the same op on the local pieces. A few
// ops need their attributes rewritten (slice bounds, the divisor of a mean
// over a split dim, the row offset of a vocab-parallel embedding), and the
// boxing steps take their per-device form, with the extents of every group
// member's piece.
//
//===----------------------------------------------------------------------===//

#include "passes/partition/LocalOps.h"

#include "passes/boxing/BoxingLowering.h"

using namespace mlir;

namespace pc {

std::optional<SmallVector<int64_t, 4>>
RankView::coords(FlatSymbolRefAttr name) {
  auto [it, inserted] = coordCache.try_emplace(name.getAttr());
  if (!inserted)
    return it->second;
  int64_t p = meshes.positionOf(name, rank);
  if (p >= 0) {
    std::vector<int64_t> c = delinearize(meshes.lookup(name).getShape(), p);
    it->second = SmallVector<int64_t, 4>(c.begin(), c.end());
  }
  return it->second;
}

std::optional<RankedTensorType> RankView::localType(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  SbpAttr sbp = getSbp(type);
  if (!sbp)
    return std::nullopt;
  auto c = coords(sbp.getMesh());
  if (!c)
    return std::nullopt;
  std::vector<int64_t> shape = localShape(
      tensor.getShape(), meshes.lookup(sbp).getShape(), sbp.getEntries(), *c);
  return RankedTensorType::get(shape, tensor.getElementType());
}

SmallVector<int64_t> RankView::memberExtents(ArrayRef<int64_t> shape,
                                             SbpAttr sbp,
                                             ArrayRef<int64_t> axes,
                                             int64_t dim) {
  ArrayRef<int64_t> meshShape = meshes.lookup(sbp).getShape();
  SmallVector<int64_t> out;
  for (int64_t m : groupMembers(meshShape, *coords(sbp.getMesh()), axes))
    out.push_back(
        localBox(shape, meshShape, sbp.getEntries(), delinearize(meshShape, m))
            .sizes[dim]);
  return out;
}

namespace {

/// The plan step that a lowered step op performs.
boxing::Step stepOf(Operation *op) {
  boxing::Step step;
  if (isa<AllReduceOp>(op))
    step.kind = TransitionKind::AllReduce;
  else if (isa<AllGatherOp>(op))
    step.kind = TransitionKind::AllGather;
  else if (isa<ReduceScatterOp>(op))
    step.kind = TransitionKind::ReduceScatter;
  else if (isa<AllToAllOp>(op))
    step.kind = TransitionKind::AllToAll;
  else if (isa<LocalSliceOp>(op))
    step.kind = TransitionKind::LocalSlice;
  else
    step.kind = TransitionKind::LocalPartial;
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
  step.axes.assign(axes.begin(), axes.end());
  auto before = getSbp(op->getOperand(0).getType()).getEntries();
  auto after = getSbp(op->getResult(0).getType()).getEntries();
  step.before.assign(before.begin(), before.end());
  step.after.assign(after.begin(), after.end());
  return step;
}

/// The per-device form of one boxing step on a tensor of logical `type`
/// (without layout) on `mesh`; `input` is local already.
Value emitLocalStep(OpBuilder &b, Location loc, Value input,
                    FlatSymbolRefAttr mesh, RankedTensorType type,
                    const boxing::Step &step, RankView &view) {
  SbpAttr after = makeSbp(b.getContext(), mesh, step.after);
  RankedTensorType local = *view.localType(withSbp(type, after));
  // A group of one device (its axes all of size 1, as on a 1x1 mesh whose
  // layouts still say S or P) moves nothing: each layout is the whole
  // value there. No step, so the runtime makes no hop to a comm stream.
  int64_t members = 1;
  ArrayRef<int64_t> shape = view.getMeshes().lookup(mesh).getShape();
  for (int64_t axis : step.axes)
    members *= shape[axis];
  if (members == 1 && input.getType() == local)
    return input;
  return emitStep(b, loc, input, local, mesh, step);
}

/// A constant in any layout: the whole value, then the local steps from B
/// (slices and partials, which never communicate).
Value emitLocalConstant(OpBuilder &b, ConstantOp op, RankView &view,
                        boxing::Planner &planner) {
  SbpAttr sbp = getSbp(op.getType());
  RankedTensorType logical = withSbp(op.getType(), {});
  MeshOp mesh = view.getMeshes().lookup(sbp);
  SmallVector<SbpEntry> all(mesh.getShape().size(), SbpEntry::broadcast());
  Value v = ConstantOp::create(b, op.getLoc(), logical, op.getValue());
  const boxing::Plan &plan =
      planner.plan(logical.getShape(), elementBytes(logical), mesh.getShape(),
                   all, sbp.getEntries());
  for (const boxing::Step &step : plan.steps)
    v = emitLocalStep(b, op.getLoc(), v, sbp.getMesh(), logical, step, view);
  return v;
}

/// A cross-entropy over logits split along the class dim on `classAxes`:
///   m = max over all classes      (local max, all-reduce max)
///   z = logits - m
///   s = sum over all classes of exp(z)   (local sum, all-reduce sum)
///   p = z at the label            (local pick, zero elsewhere, all-reduce sum)
///   loss = log(s) - p
/// Every device of a group ends with the whole loss.
Value emitVocabParallelCrossEntropy(OpBuilder &b, CrossEntropyOp ce,
                                    ArrayRef<int64_t> classAxes, IRMapping &map,
                                    RankView &view) {
  Location loc = ce.getLoc();
  SbpAttr layout = getSbp(ce.getLogits().getType());
  FlatSymbolRefAttr mesh = layout.getMesh();
  Value logits = map.lookup(ce.getLogits());
  Value labels = map.lookup(ce.getLabels());
  auto logitsType = cast<RankedTensorType>(logits.getType());
  auto resultType = *view.localType(ce.getType());
  Type elem = logitsType.getElementType();
  int64_t classDim = logitsType.getRank() - 1;
  SmallVector<int64_t> keptShape(logitsType.getShape());
  keptShape.back() = 1;
  auto kept = RankedTensorType::get(keptShape, elem);
  auto axes = b.getDenseI64ArrayAttr(classAxes);
  auto classAxis = b.getDenseI64ArrayAttr({classDim});
  auto reduction = [&](Reduction r) {
    return ReductionAttr::get(b.getContext(), r);
  };

  Value localMax =
      ReduceMaxOp::create(b, loc, kept, logits, classAxis, b.getUnitAttr());
  Value max = AllReduceOp::create(b, loc, kept, localMax, mesh, axes,
                                  reduction(Reduction::max));
  Value z = SubOp::create(b, loc, logitsType, logits, max);
  Value e = ExpOp::create(b, loc, logitsType, z);
  Value localSum =
      ReduceSumOp::create(b, loc, resultType, e, classAxis, UnitAttr());
  Value sum = AllReduceOp::create(b, loc, resultType, localSum, mesh, axes,
                                  reduction(Reduction::sum));
  Value lse = LogOp::create(b, loc, resultType, sum);

  auto logitsShape = ce.getLogits().getType().getShape();
  Value offset = PieceOffsetOp::create(
      b, loc, RankedTensorType::get({}, b.getI64Type()), mesh, axes,
      b.getDenseI64ArrayAttr(
          view.memberExtents(logitsShape, layout, classAxes, classDim)));
  auto labelsType = cast<RankedTensorType>(labels.getType());
  if (!labelsType.getElementType().isInteger(64))
    offset = CastOp::create(
        b, loc, RankedTensorType::get({}, labelsType.getElementType()), offset);
  Value shifted = SubOp::create(b, loc, labelsType, labels, offset);
  Value localPick = PickLabelsOp::create(b, loc, resultType, z, shifted);
  Value pick = AllReduceOp::create(b, loc, resultType, localPick, mesh, axes,
                                   reduction(Reduction::sum));
  return SubOp::create(b, loc, resultType, lse, pick);
}

} // namespace

LogicalResult emitLocalOp(Operation *op, OpBuilder &b, IRMapping &map,
                          RankView &view, boxing::Planner &planner) {
  Location loc = op->getLoc();
  // Ops whose results do not live on this rank are not its work (an op's
  // results share a mesh).
  if (op->getNumResults() >= 1 && !isa<TransferOp>(op)) {
    std::optional<RankedTensorType> local =
        view.localType(op->getResult(0).getType());
    if (!local)
      return success();
  }

  if (auto set = dyn_cast<SetParamOp>(op)) {
    if (view.localType(set.getValue().getType()))
      SetParamOp::create(b, loc, set.getNameAttr(), map.lookup(set.getValue()));
    return success();
  }
  if (auto get = dyn_cast<GetParamOp>(op)) {
    map.map(get.getResult(),
            GetParamOp::create(b, loc, *view.localType(get.getType()),
                               get.getNameAttr()));
    return success();
  }
  if (auto c = dyn_cast<ConstantOp>(op)) {
    map.map(c.getResult(), emitLocalConstant(b, c, view, planner));
    return success();
  }
  if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, LocalSliceOp,
          LocalPartialOp>(op)) {
    SbpAttr in = getSbp(op->getOperand(0).getType());
    map.map(op->getResult(0),
            emitLocalStep(b, loc, map.lookup(op->getOperand(0)), in.getMesh(),
                          withSbp(op->getOperand(0).getType(), {}), stepOf(op),
                          view));
    return success();
  }
  if (auto t = dyn_cast<TransferOp>(op)) {
    // The sending side and the receiving side; a rank on both meshes does
    // both (sends do not wait for their receives).
    TypeAttr from = TypeAttr::get(t.getInput().getType());
    TypeAttr to = TypeAttr::get(t.getType());
    if (getSbp(t.getInput().getType()).getMesh() ==
        getSbp(t.getType()).getMesh()) {
      // Within one mesh: one collective over all of its devices.
      if (std::optional<RankedTensorType> local = view.localType(t.getType()))
        map.map(t.getResult(),
                RedistributeOp::create(b, loc, *local, map.lookup(t.getInput()),
                                       from, to));
      return success();
    }
    if (view.localType(t.getInput().getType()))
      SendOp::create(b, loc, map.lookup(t.getInput()), from, to);
    if (std::optional<RankedTensorType> local = view.localType(t.getType()))
      map.map(t.getResult(), RecvOp::create(b, loc, *local, from, to));
    return success();
  }
  if (!isa<SbpOpInterface>(op))
    return op->emitOpError("cannot be partitioned: it is not a logical op or "
                           "a lowered boxing step (run --pc-lower-boxing "
                           "first)");

  auto localOf = [&](Value v) { return *view.localType(v.getType()); };
  Type resultType = localOf(op->getResult(0));

  if (auto mean = dyn_cast<ReduceMeanOp>(op)) {
    // A mean over a split dim: each device sums its piece and divides by
    // the logical count, giving partials of the mean.
    SbpAttr in = getSbp(mean.getInput().getType());
    auto shape = mean.getInput().getType().getShape();
    int64_t rank = shape.size();
    bool splitReduced = false;
    double count = 1;
    for (int64_t a : mean.getAxes()) {
      int64_t d = (a + rank) % rank;
      count *= shape[d];
      for (SbpEntry e : in.getEntries())
        splitReduced |= e.isSplit() && e.dim == d;
    }
    if (splitReduced) {
      Value sum =
          ReduceSumOp::create(b, loc, resultType, map.lookup(mean.getInput()),
                              mean.getAxesAttr(), mean.getKeepdimAttr());
      auto elem = cast<RankedTensorType>(resultType).getElementType();
      auto scalar = RankedTensorType::get({}, elem);
      Value scale = ConstantOp::create(
          b, loc, scalar,
          DenseElementsAttr::get(scalar, b.getFloatAttr(elem, 1.0 / count)));
      map.map(mean.getResult(),
              MulOp::create(b, loc, resultType, sum, scale).getResult());
      return success();
    }
  }

  if (auto emb = dyn_cast<EmbeddingOp>(op)) {
    SbpAttr table = getSbp(emb.getTable().getType());
    SmallVector<int64_t> rowAxes;
    for (auto [axis, e] : llvm::enumerate(table.getEntries()))
      if (e.isSplit() && e.dim == 0)
        rowAxes.push_back(axis);
    if (!rowAxes.empty()) {
      // Vocab-parallel: shift the ids into this device's rows; the others
      // give zeros, and the partial sums add up to the lookup.
      auto tableShape = emb.getTable().getType().getShape();
      Value offset = PieceOffsetOp::create(
          b, loc, RankedTensorType::get({}, b.getI64Type()), table.getMesh(),
          b.getDenseI64ArrayAttr(rowAxes),
          b.getDenseI64ArrayAttr(
              view.memberExtents(tableShape, table, rowAxes, 0)));
      Value ids = map.lookup(emb.getIds());
      auto idsType = cast<RankedTensorType>(ids.getType());
      if (!idsType.getElementType().isInteger(64))
        offset = CastOp::create(
            b, loc, RankedTensorType::get({}, idsType.getElementType()),
            offset);
      Value shifted = SubOp::create(b, loc, idsType, ids, offset);
      auto local = EmbeddingOp::create(b, loc, resultType, shifted,
                                       map.lookup(emb.getTable()));
      local.setZeroOutOfRange(true);
      map.map(emb.getResult(), local.getResult());
      return success();
    }
  }

  if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
    SbpAttr logits = getSbp(ce.getLogits().getType());
    int64_t classDim = ce.getLogits().getType().getRank() - 1;
    SmallVector<int64_t> classAxes;
    for (auto [axis, e] : llvm::enumerate(logits.getEntries()))
      if (e.isSplit() && e.dim == classDim)
        classAxes.push_back(axis);
    if (!classAxes.empty()) {
      map.map(ce.getResult(),
              emitVocabParallelCrossEntropy(b, ce, classAxes, map, view));
      return success();
    }
  }

  Operation *clone = b.clone(*op, map);
  for (auto [from, to] : llvm::zip(op->getResults(), clone->getResults()))
    to.setType(localOf(from));
  if (auto slice = dyn_cast<SliceOp>(clone)) {
    // Split dims are whole in the signature; locally they are the piece.
    auto local = cast<RankedTensorType>(slice.getInput().getType()).getShape();
    auto logical = cast<SliceOp>(op).getInput().getType().getShape();
    SmallVector<int64_t> start(slice.getStart()), limit(slice.getLimit());
    for (size_t d = 0; d < local.size(); ++d)
      if (local[d] != logical[d]) {
        start[d] = 0;
        limit[d] = local[d];
      }
    slice.setStart(start);
    slice.setLimit(limit);
  }
  return success();
}

} // namespace pc

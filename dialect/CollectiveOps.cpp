//===- CollectiveOps.cpp - Verifiers of the boxing step ops ---------------===//

#include "dialect/PcOps.h"
#include "dialect/ShapeInference.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace pc;

namespace {

/// The common checks of a step op in its logical form: `axes` is a
/// contiguous ascending run of mesh axes, the entries change from one value
/// to another on exactly those axes by the op's transition, the meaning of
/// the other axes is kept, and everything is on `mesh`. Returns the entries
/// before and after through `from` and `to`.
LogicalResult verifyLogicalStep(Operation *op, FlatSymbolRefAttr mesh,
                                ArrayRef<int64_t> axes, TransitionKind kind,
                                SbpEntry &from, SbpEntry &to) {
  SbpAttr src = getSbp(op->getOperand(0).getType());
  SbpAttr dst = getSbp(op->getResult(0).getType());
  if (!src || !dst)
    return op->emitOpError()
           << "needs #pc.sbp layouts on both the operand and the result, or "
              "on neither (the per-device form)";
  if (src.getMesh() != mesh || dst.getMesh() != mesh)
    return op->emitOpError()
           << "runs on mesh " << mesh << " but its operand and result are on "
           << src.getMesh() << " and " << dst.getMesh();
  ArrayRef<SbpEntry> a = src.getEntries(), b = dst.getEntries();
  if (a.size() != b.size())
    return op->emitOpError() << "operand and result layouts have " << a.size()
                             << " and " << b.size() << " entries";
  if (axes.empty())
    return op->emitOpError("needs at least one mesh axis in `axes`");
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis < 0 || axis >= static_cast<int64_t>(a.size()) ||
        (i && axis != axes[i - 1] + 1))
      return op->emitOpError()
             << "axes must be a contiguous ascending run of the mesh's "
             << a.size() << " axes";
  from = a[axes.front()];
  to = b[axes.front()];
  for (int64_t axis = 0, n = a.size(); axis < n; ++axis) {
    bool inGroup = llvm::is_contained(axes, axis);
    if (!inGroup && a[axis] != b[axis])
      return op->emitOpError() << "changes the entry of mesh axis " << axis
                               << ", which is not in axes";
    if (inGroup && (a[axis] != from || b[axis] != to))
      return op->emitOpError()
             << "needs one entry before and one after on "
                "all of its axes, but mesh axis "
             << axis << " has " << a[axis].str() << " -> " << b[axis].str();
  }
  std::optional<TransitionKind> actual = transitionKind(from, to);
  if (actual != kind)
    return op->emitOpError()
           << "changes " << from.str() << " to " << to.str()
           << ", which is not a " << stringifyTransitionKind(kind);
  if (std::optional<std::string> error =
          checkHierarchy(a, axes.back(), from, to))
    return op->emitOpError() << "cannot change " << src.formatEntries()
                             << " to " << dst.formatEntries() << ": " << *error;
  return success();
}

/// The per-device form: no encodings; along `dim`, `whole` has the sum of
/// `sizes` and `piece` one of them; the other dims agree.
LogicalResult verifyLocalPieces(Operation *op, Type pieceType, Type wholeType,
                                int64_t dim,
                                std::optional<ArrayRef<int64_t>> sizes,
                                StringRef sizesName) {
  if (getSbp(pieceType) || getSbp(wholeType))
    return op->emitOpError()
           << "needs #pc.sbp layouts on both the operand and the result, or "
              "on neither (the per-device form)";
  auto piece = cast<RankedTensorType>(pieceType).getShape();
  auto whole = cast<RankedTensorType>(wholeType).getShape();
  if (piece.size() != whole.size() || dim < 0 ||
      dim >= static_cast<int64_t>(whole.size()))
    return op->emitOpError()
           << "dim " << dim << " does not fit shapes " << shape::str(piece)
           << " and " << shape::str(whole);
  if (piece[dim] > whole[dim])
    return op->emitOpError()
           << "local piece " << shape::str(piece) << " is larger than the "
           << "group's whole " << shape::str(whole) << " along dim " << dim;
  if (sizes) {
    // Summed with an overflow check: the sizes come from the input.
    int64_t total = 0;
    bool fits = true;
    for (int64_t s : *sizes)
      fits &= s >= 0 && !llvm::AddOverflow(total, s, total);
    if (!fits || whole[dim] != total || !llvm::is_contained(*sizes, piece[dim]))
      return op->emitOpError()
             << "local shapes " << shape::str(piece) << " and "
             << shape::str(whole) << " do not match " << sizesName << " ["
             << llvm::make_range(sizes->begin(), sizes->end()) << "] along dim "
             << dim;
  }
  for (size_t d = 0; d < whole.size(); ++d)
    if (static_cast<int64_t>(d) != dim && piece[d] != whole[d])
      return op->emitOpError()
             << "local shapes " << shape::str(piece) << " and "
             << shape::str(whole) << " differ outside dim " << dim;
  return success();
}

LogicalResult verifySameLocalType(Operation *op) {
  if (getSbp(op->getResult(0).getType()))
    return op->emitOpError()
           << "needs #pc.sbp layouts on both the operand and the result, or "
              "on neither (the per-device form)";
  if (op->getOperand(0).getType() != op->getResult(0).getType())
    return op->emitOpError()
           << "keeps the local type, but has " << op->getOperand(0).getType()
           << " -> " << op->getResult(0).getType();
  return success();
}

/// A reducing step reduces by the kind of partials its operand holds.
LogicalResult expectReduction(Operation *op, Reduction reduce, SbpEntry from) {
  if (toReduceKind(reduce) != from.reduce)
    return op->emitOpError()
           << "reduces by " << stringifyReduction(reduce)
           << " but the operand holds " << from.str() << " partials";
  return success();
}

LogicalResult expectEqual(Operation *op, StringRef what, int64_t actual,
                          int64_t expected) {
  if (actual != expected)
    return op->emitOpError()
           << what << " is " << actual << " but the layouts say " << expected;
  return success();
}

/// The per-device form's group: `axes` are distinct ascending axes of the
/// mesh `meshName` names, which must exist. (The logical form checks its
/// axes against its layouts.)
LogicalResult verifyLocalAxes(Operation *op, FlatSymbolRefAttr meshName,
                              ArrayRef<int64_t> axes) {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, meshName);
  if (!mesh)
    return op->emitOpError() << "runs on mesh " << meshName
                             << ", which is not a pc.mesh of the module";
  int64_t rank = mesh.getShape().size();
  if (axes.empty())
    return op->emitOpError("needs at least one mesh axis in `axes`");
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis < 0 || axis >= rank || (i && axis <= axes[i - 1]))
      return op->emitOpError()
             << "axes [" << llvm::make_range(axes.begin(), axes.end())
             << "] must be distinct ascending axes of " << meshName
             << ", which has " << rank;
  return success();
}

} // namespace

LogicalResult AllReduceOp::verify() {
  if (isLocal() && failed(verifyLocalAxes(*this, getMeshAttr(), getAxes())))
    return failure();
  if (isLocal())
    return verifySameLocalType(*this);
  SbpEntry from, to;
  if (failed(verifyLogicalStep(*this, getMeshAttr(), getAxes(),
                               TransitionKind::AllReduce, from, to)))
    return failure();
  return expectReduction(*this, getReduce(), from);
}

LogicalResult AllGatherOp::verify() {
  if (isLocal() && failed(verifyLocalAxes(*this, getMeshAttr(), getAxes())))
    return failure();
  if (isLocal())
    return verifyLocalPieces(*this, getInput().getType(), getType(), getDim(),
                             getSizes(), "sizes");
  SbpEntry from, to;
  if (failed(verifyLogicalStep(*this, getMeshAttr(), getAxes(),
                               TransitionKind::AllGather, from, to)))
    return failure();
  return expectEqual(*this, "dim", getDim(), from.dim);
}

LogicalResult ReduceScatterOp::verify() {
  if (isLocal() && failed(verifyLocalAxes(*this, getMeshAttr(), getAxes())))
    return failure();
  if (isLocal())
    return verifyLocalPieces(*this, getType(), getInput().getType(), getDim(),
                             getSizes(), "sizes");
  SbpEntry from, to;
  if (failed(verifyLogicalStep(*this, getMeshAttr(), getAxes(),
                               TransitionKind::ReduceScatter, from, to)) ||
      failed(expectEqual(*this, "dim", getDim(), to.dim)))
    return failure();
  return expectReduction(*this, getReduce(), from);
}

LogicalResult AllToAllOp::verify() {
  if (isLocal() && failed(verifyLocalAxes(*this, getMeshAttr(), getAxes())))
    return failure();
  if (isLocal()) {
    auto in = cast<RankedTensorType>(getInput().getType()).getShape();
    auto out = getType().getShape();
    int64_t s = getSrcDim(), d = getDstDim();
    int64_t rank = in.size();
    if (out.size() != in.size() || s < 0 || d < 0 || s >= rank || d >= rank ||
        s == d)
      return emitOpError() << "dims " << s << " and " << d
                           << " do not fit shapes " << shape::str(in) << " and "
                           << shape::str(out);
    if (in[s] > out[s] || out[d] > in[d])
      return emitOpError() << "local shapes " << shape::str(in) << " and "
                           << shape::str(out) << " are not a piece whole "
                           << "along dim " << d << " and pieces along dim "
                           << s;
    if (getSrcSizes() && getDstSizes()) {
      ArrayRef<int64_t> srcSizes = *getSrcSizes(), dstSizes = *getDstSizes();
      // Mutated or hand-written sizes may be anything: sums that overflow
      // do not match.
      int64_t srcTotal = 0, dstTotal = 0;
      bool inRange = true;
      for (int64_t x : srcSizes)
        inRange &= x >= 0 && !llvm::AddOverflow(srcTotal, x, srcTotal);
      for (int64_t x : dstSizes)
        inRange &= x >= 0 && !llvm::AddOverflow(dstTotal, x, dstTotal);
      if (!inRange || out[s] != srcTotal || in[d] != dstTotal ||
          !llvm::is_contained(srcSizes, in[s]) ||
          !llvm::is_contained(dstSizes, out[d]))
        return emitOpError()
               << "local shapes " << shape::str(in) << " and "
               << shape::str(out) << " do not match src_sizes and dst_sizes";
    }
    return success();
  }
  SbpEntry from, to;
  if (failed(verifyLogicalStep(*this, getMeshAttr(), getAxes(),
                               TransitionKind::AllToAll, from, to)) ||
      failed(expectEqual(*this, "src_dim", getSrcDim(), from.dim)))
    return failure();
  return expectEqual(*this, "dst_dim", getDstDim(), to.dim);
}

LogicalResult LocalSliceOp::verify() {
  if (isLocal() && failed(verifyLocalAxes(*this, getMeshAttr(), getAxes())))
    return failure();
  if (isLocal())
    return verifyLocalPieces(*this, getType(), getInput().getType(), getDim(),
                             getSizes(), "sizes");
  SbpEntry from, to;
  if (failed(verifyLogicalStep(*this, getMeshAttr(), getAxes(),
                               TransitionKind::LocalSlice, from, to)))
    return failure();
  return expectEqual(*this, "dim", getDim(), to.dim);
}

LogicalResult LocalPartialOp::verify() {
  if (isLocal() && failed(verifyLocalAxes(*this, getMeshAttr(), getAxes())))
    return failure();
  if (isLocal()) {
    if (!getDim())
      return verifySameLocalType(*this);
    return verifyLocalPieces(*this, getInput().getType(), getType(), *getDim(),
                             getSizes(), "sizes");
  }
  SbpEntry from, to;
  if (failed(verifyLogicalStep(*this, getMeshAttr(), getAxes(),
                               TransitionKind::LocalPartial, from, to)))
    return failure();
  if (toReduceKind(getReduce()) != to.reduce)
    return emitOpError() << "makes " << stringifyReduction(getReduce())
                         << " partials but the result holds " << to.str();
  if (from.isSplit() != getDim().has_value())
    return emitOpError() << (from.isSplit() ? "needs" : "must not have")
                         << " `dim` when the operand entry is " << from.str();
  if (getDim())
    return expectEqual(*this, "dim", *getDim(), from.dim);
  return success();
}

LogicalResult BroadcastOp::verify() {
  if (getInput().getType() != getType())
    return emitOpError() << "keeps the type, but has " << getInput().getType()
                         << " -> " << getType();
  if (static_cast<int64_t>(getRoot()) < 0)
    return emitOpError() << "root " << static_cast<int64_t>(getRoot())
                         << " must be non-negative";
  SbpAttr sbp = getSbp(getType());
  if (!sbp) // The per-device form.
    return verifyLocalAxes(*this, getMeshAttr(), getAxes());
  if (sbp.getMesh() != getMeshAttr())
    return emitOpError() << "runs on mesh " << getMeshAttr()
                         << " but its value is on " << sbp.getMesh();
  for (int64_t axis : getAxes())
    if (axis < 0 || axis >= static_cast<int64_t>(sbp.getEntries().size()) ||
        !sbp.getEntries()[axis].isBroadcast())
      return emitOpError() << "broadcasts over mesh axis " << axis
                           << ", where the layout " << sbp.formatEntries()
                           << " is not B";
  return success();
}

LogicalResult PickLabelsOp::verify() {
  auto values = cast<RankedTensorType>(getValues().getType());
  auto labels = cast<RankedTensorType>(getLabels().getType());
  FailureOr<shape::Shape> expected = shape::crossEntropy(
      values.getShape(), labels.getShape(), [&] { return emitOpError(); });
  if (failed(expected))
    return failure();
  if (getType().getShape() != ArrayRef<int64_t>(*expected) ||
      getType().getElementType() != values.getElementType())
    return emitOpError() << "result type " << getType() << " should have shape "
                         << shape::str(*expected) << " and element type "
                         << values.getElementType();
  return success();
}

LogicalResult TransferOp::verify() {
  SbpAttr src = getSbp(getInput().getType()), dst = getSbp(getType());
  if (!src || !dst)
    return emitOpError("needs #pc.sbp layouts on the operand and the result");
  if (src.hasPartial() || dst.hasPartial())
    return emitOpError() << "cannot move partial values ("
                         << src.formatEntries() << " -> " << dst.formatEntries()
                         << "); reduce them on the source mesh first";
  auto a = cast<RankedTensorType>(getInput().getType());
  if (a.getShape() != getType().getShape() ||
      a.getElementType() != getType().getElementType())
    return emitOpError() << "changes the logical type from " << a << " to "
                         << getType();
  return success();
}

/// The `from` and `to` layouts of a send or receive: tensors of one logical
/// type with layouts on two meshes, and no partial entries.
static LogicalResult verifyTransferEnds(Operation *op, Type from, Type to,
                                        Type local) {
  SbpAttr a = getSbp(from), b = getSbp(to);
  if (!a || !b)
    return op->emitOpError("needs `from` and `to` tensor types with #pc.sbp "
                           "layouts");
  auto x = cast<RankedTensorType>(from), y = cast<RankedTensorType>(to);
  if (x.getShape() != y.getShape() || x.getElementType() != y.getElementType())
    return op->emitOpError() << "moves " << from << " into " << to
                             << ", which is another logical type";
  if (a.hasPartial() || b.hasPartial())
    return op->emitOpError("cannot move partial values");
  auto l = cast<RankedTensorType>(local);
  if (getSbp(local) || l.getElementType() != x.getElementType() ||
      l.getRank() != x.getRank())
    return op->emitOpError() << "has the local type " << local
                             << ", which is not a piece of " << from;
  return success();
}

LogicalResult SendOp::verify() {
  return verifyTransferEnds(*this, getFrom(), getTo(), getInput().getType());
}

LogicalResult RecvOp::verify() {
  return verifyTransferEnds(*this, getFrom(), getTo(), getType());
}

LogicalResult RedistributeOp::verify() {
  if (failed(verifyTransferEnds(*this, getFrom(), getTo(),
                                getInput().getType())) ||
      failed(verifyTransferEnds(*this, getFrom(), getTo(), getType())))
    return failure();
  SbpAttr a = getSbp(getFrom()), b = getSbp(getTo());
  if (a.getMesh() != b.getMesh())
    return emitOpError() << "moves between the meshes " << a.getMesh()
                         << " and " << b.getMesh()
                         << "; a transfer between meshes is pc.send and "
                            "pc.recv";
  return success();
}

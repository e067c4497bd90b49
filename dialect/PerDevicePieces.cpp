//===- PerDevicePieces.cpp - A per-device program's types, per rank -------===//
//
// A per-device program (a func.func with pc.ranks) runs on each rank it
// lists, and every rank-dependent type in it must be that rank's piece: the
// runtime hands a rank its pieces of the inputs and parameters, and its
// kernels trust the local types. So, for every listed rank:
//  - its arguments and results are its pieces of their pc.logical_type;
//  - pc.get_param and pc.set_param values are its pieces of the parameter;
//  - a pc.send sends its piece of `from`, a pc.recv receives its piece of
//    `to`, a pc.redistribute turns the one into the other;
// and the rank is on each mesh those layouts use (and on some mesh at
// all). pc.graph and pc.ranks come together. This runs as a symbol use of
// the function, after every op and mesh verified on its own.
//
//===----------------------------------------------------------------------===//

#include "dialect/PcOps.h"
#include "dialect/PcTraits.h"
#include "dialect/ProgramAttrs.h"
#include "dialect/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace pc {
namespace {

/// Checks that `local` is rank `rank`'s piece of `logical`; `what` names the
/// value ("argument #0", "the value of @w", ...) in the diagnostic, which is
/// emitted on `at`.
LogicalResult expectPiece(Operation *at, func::FuncOp f, int64_t rank,
                          Type logical, Type local, const Twine &what,
                          SymbolTableCollection &symbols) {
  auto whole = cast<RankedTensorType>(logical);
  auto mine = dyn_cast<RankedTensorType>(local);
  SmallVector<int64_t> expected(whole.getShape());
  if (SbpAttr sbp = getSbp(logical)) {
    auto mesh = dyn_cast_or_null<MeshOp>(
        symbols.lookupNearestSymbolFrom(f, sbp.getMesh()));
    if (!mesh) // verifySbpType names it.
      return failure();
    int64_t position = -1;
    for (int64_t p = 0; p < mesh.getNumDevices() && position < 0; ++p)
      if (mesh.getRank(p) == rank)
        position = p;
    if (position < 0)
      return at->emitOpError()
             << "runs on rank " << rank << " (pc.ranks of @" << f.getSymName()
             << "), which is not on mesh " << sbp.getMesh()
             << " that the layout of " << what << " uses";
    std::vector<int64_t> shape =
        localShape(whole.getShape(), mesh.getShape(), sbp.getEntries(),
                   delinearize(mesh.getShape(), position));
    expected.assign(shape.begin(), shape.end());
  }
  if (!mine || getSbp(local) ||
      mine.getElementType() != whole.getElementType() ||
      mine.getShape() != ArrayRef<int64_t>(expected))
    return at->emitOpError()
           << "has " << what << " of type " << local << ", but rank " << rank
           << "'s piece of " << logical << " is "
           << RankedTensorType::get(expected, whole.getElementType());
  return success();
}

LogicalResult verifyForRank(func::FuncOp f, int64_t rank,
                            SymbolTableCollection &symbols) {
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (Type logical = attrs::getArgLogicalType(f, i))
      if (failed(expectPiece(f, f, rank, logical, f.getArgumentTypes()[i],
                             "argument #" + Twine(i), symbols)))
        return failure();
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (Type logical = attrs::getResultLogicalType(f, i))
      if (failed(expectPiece(f, f, rank, logical, f.getResultTypes()[i],
                             "result #" + Twine(i), symbols)))
        return failure();
  WalkResult walk = f.walk([&](Operation *op) {
    LogicalResult ok = success();
    auto paramOf = [&](FlatSymbolRefAttr name) {
      return dyn_cast_or_null<ParamOp>(
          symbols.lookupNearestSymbolFrom(op, name));
    };
    if (auto get = dyn_cast<GetParamOp>(op)) {
      if (ParamOp p = paramOf(get.getNameAttr()))
        ok = expectPiece(op, f, rank, p.getType(), get.getType(),
                         "the value of @" + p.getSymName(), symbols);
    } else if (auto set = dyn_cast<SetParamOp>(op)) {
      if (ParamOp p = paramOf(set.getNameAttr()))
        ok = expectPiece(op, f, rank, p.getType(), set.getValue().getType(),
                         "the value of @" + p.getSymName(), symbols);
    } else if (auto send = dyn_cast<SendOp>(op)) {
      ok = expectPiece(op, f, rank, send.getFrom(), send.getInput().getType(),
                       "the operand", symbols);
    } else if (auto recv = dyn_cast<RecvOp>(op)) {
      ok = expectPiece(op, f, rank, recv.getTo(), recv.getType(), "the result",
                       symbols);
    } else if (auto r = dyn_cast<RedistributeOp>(op)) {
      ok = expectPiece(op, f, rank, r.getFrom(), r.getInput().getType(),
                       "the operand", symbols);
      if (succeeded(ok))
        ok = expectPiece(op, f, rank, r.getTo(), r.getType(), "the result",
                         symbols);
    }
    return failed(ok) ? WalkResult::interrupt() : WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

} // namespace

LogicalResult verifyPerDevicePieces(Operation *op,
                                    SymbolTableCollection &symbols) {
  auto f = dyn_cast<func::FuncOp>(op);
  if (!f || f.isExternal())
    return success();
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    if (Type logical = attrs::getArgLogicalType(f, i))
      if (failed(verifySbpType(op, logical,
                               "'pc.logical_type' of argument #" + Twine(i),
                               symbols)))
        return failure();
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (Type logical = attrs::getResultLogicalType(f, i))
      if (failed(verifySbpType(op, logical,
                               "'pc.logical_type' of result #" + Twine(i),
                               symbols)))
        return failure();
  // One attribute without the other would be a program no rank runs, or
  // ranks running no graph.
  if (static_cast<bool>(attrs::getGraph(f)) != !attrs::getRanks(f).empty())
    return f.emitOpError() << "is a per-device program only with both '"
                           << attrs::kGraph << "' and '" << attrs::kRanks
                           << "'";
  auto module = f->getParentOfType<ModuleOp>();
  for (int64_t rank : attrs::getRanks(f)) {
    bool onAMesh = false;
    for (MeshOp mesh : module.getOps<MeshOp>())
      for (int64_t p = 0; p < mesh.getNumDevices() && !onAMesh; ++p)
        onAMesh = mesh.getRank(p) == rank;
    if (!onAMesh)
      return f.emitOpError() << "runs on rank " << rank
                             << ", which is on no pc.mesh of the module";
    if (failed(verifyForRank(f, rank, symbols)))
      return failure();
  }
  return success();
}

} // namespace pc

//===- BoxingLowering.cpp - Emitting planned boxing steps as ops ----------===//

#include "passes/boxing/BoxingLowering.h"

using namespace mlir;

namespace pc {

Value emitStep(OpBuilder &b, Location loc, Value input, Type type,
               FlatSymbolRefAttr mesh, const boxing::Step &step) {
  MLIRContext *ctx = b.getContext();
  auto axes = b.getDenseI64ArrayAttr(step.axes);
  SbpEntry from = step.from(), to = step.to();
  auto reduction = [&](ReduceKind k) {
    return ReductionAttr::get(ctx, toReduction(k));
  };
  // Member extents are never listed: they follow from the shapes
  // (pc::groupExtents), so the ops do not grow with the group.
  DenseI64ArrayAttr noSizes;
  switch (step.kind) {
  case TransitionKind::AllReduce:
    return AllReduceOp::create(b, loc, type, input, mesh, axes,
                               reduction(from.reduce));
  case TransitionKind::AllGather:
    return AllGatherOp::create(b, loc, type, input, mesh, axes,
                               b.getI64IntegerAttr(from.dim), noSizes);
  case TransitionKind::ReduceScatter:
    return ReduceScatterOp::create(b, loc, type, input, mesh, axes,
                                   b.getI64IntegerAttr(to.dim),
                                   reduction(from.reduce), noSizes);
  case TransitionKind::AllToAll:
    return AllToAllOp::create(b, loc, type, input, mesh, axes,
                              b.getI64IntegerAttr(from.dim),
                              b.getI64IntegerAttr(to.dim), noSizes, noSizes);
  case TransitionKind::LocalSlice:
    return LocalSliceOp::create(b, loc, type, input, mesh, axes,
                                b.getI64IntegerAttr(to.dim), noSizes);
  case TransitionKind::LocalPartial:
    return LocalPartialOp::create(
        b, loc, type, input, mesh, axes, reduction(to.reduce),
        from.isSplit() ? b.getI64IntegerAttr(from.dim) : IntegerAttr(),
        noSizes);
  case TransitionKind::Redistribute:
    // A transfer within the mesh; partition makes it pc.redistribute.
    assert(getSbp(type) && "a redistribution is emitted in logical form");
    return TransferOp::create(b, loc, type, input);
  }
  return input;
}

Value emitPlan(OpBuilder &b, Location loc, Value input, FlatSymbolRefAttr mesh,
               const boxing::Plan &plan) {
  for (const boxing::Step &step : plan.steps)
    input = emitStep(
        b, loc, input,
        withSbp(input.getType(), makeSbp(b.getContext(), mesh, step.after)),
        mesh, step);
  return input;
}

} // namespace pc

//===- BoxingLowering.cpp - Emitting planned boxing steps as ops ----------===//

#include "passes/BoxingLowering.h"

using namespace mlir;

namespace pc {

Value emitStep(OpBuilder &b, Location loc, Value input, FlatSymbolRefAttr mesh,
               const boxing::Step &step) {
  MLIRContext *ctx = b.getContext();
  Type type = withSbp(input.getType(), makeSbp(ctx, mesh, step.after));
  auto axes = b.getDenseI64ArrayAttr(step.axes);
  SbpEntry from = step.from(), to = step.to();
  switch (step.kind) {
  case TransitionKind::AllReduce:
    return AllReduceOp::create(
        b, loc, type, input, mesh, axes,
        ReductionAttr::get(ctx, toReduction(from.reduce)));
  case TransitionKind::AllGather:
    return AllGatherOp::create(b, loc, type, input, mesh, axes,
                               b.getI64IntegerAttr(from.dim),
                               DenseI64ArrayAttr());
  case TransitionKind::ReduceScatter:
    return ReduceScatterOp::create(
        b, loc, type, input, mesh, axes, b.getI64IntegerAttr(to.dim),
        ReductionAttr::get(ctx, toReduction(from.reduce)), DenseI64ArrayAttr());
  case TransitionKind::AllToAll:
    return AllToAllOp::create(
        b, loc, type, input, mesh, axes, b.getI64IntegerAttr(from.dim),
        b.getI64IntegerAttr(to.dim), DenseI64ArrayAttr(), DenseI64ArrayAttr());
  case TransitionKind::LocalSlice:
    return LocalSliceOp::create(b, loc, type, input, mesh, axes,
                                b.getI64IntegerAttr(to.dim),
                                DenseI64ArrayAttr());
  case TransitionKind::LocalPartial:
    return LocalPartialOp::create(
        b, loc, type, input, mesh, axes,
        ReductionAttr::get(ctx, toReduction(to.reduce)),
        from.isSplit() ? b.getI64IntegerAttr(from.dim) : IntegerAttr(),
        DenseI64ArrayAttr());
  }
  return input;
}

Value emitPlan(OpBuilder &b, Location loc, Value input, FlatSymbolRefAttr mesh,
               const boxing::Plan &plan) {
  for (const boxing::Step &step : plan.steps)
    input = emitStep(b, loc, input, mesh, step);
  return input;
}

} // namespace pc

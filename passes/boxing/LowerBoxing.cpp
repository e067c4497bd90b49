//===- LowerBoxing.cpp - --pc-lower-boxing --------------------------------===//

#include "passes/Passes.h"
#include "passes/boxing/BoxingLowering.h"

namespace pc {
#define GEN_PASS_DEF_LOWERBOXING
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

struct LowerBoxingPass : public pc::impl::LowerBoxingBase<LowerBoxingPass> {
  using LowerBoxingBase::LowerBoxingBase;

  void runOnOperation() override {
    boxing::Planner planner(costParams(getOperation()));
    MeshCache meshes(getOperation());
    SmallVector<BoxingOp> boxings;
    getOperation().walk([&](BoxingOp op) { boxings.push_back(op); });
    for (BoxingOp op : boxings) {
      SbpAttr src = getSbp(op.getInput().getType()), dst = getSbp(op.getType());
      auto type = op.getType();
      OpBuilder b(op);
      Value v = op.getInput();
      auto count = [&](const boxing::Plan &plan) {
        numCollectives += plan.numCollectives();
        numLocalSteps += plan.steps.size() - plan.numCollectives();
      };
      if (src.getMesh() == dst.getMesh()) {
        const boxing::Plan &plan = planner.plan(
            type.getShape(), elementBytes(type), meshes.lookup(src).getShape(),
            src.getEntries(), dst.getEntries());
        v = emitPlan(b, op.getLoc(), v, src.getMesh(), plan);
        count(plan);
      } else {
        boxing::TransferPlan t = planner.planTransfer(
            type.getShape(), elementBytes(type), meshInfo(meshes.lookup(src)),
            src.getEntries(), meshInfo(meshes.lookup(dst)), dst.getEntries());
        v = emitPlan(b, op.getLoc(), v, src.getMesh(), t.pre);
        v = TransferOp::create(
            b, op.getLoc(),
            withSbp(type, makeSbp(&getContext(), dst.getMesh(), t.received)),
            v);
        ++numCollectives;
        v = emitPlan(b, op.getLoc(), v, dst.getMesh(), t.post);
        count(t.pre);
        count(t.post);
      }
      op.replaceAllUsesWith(v);
      op.erase();
    }
  }
};

} // namespace

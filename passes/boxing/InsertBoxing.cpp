//===- InsertBoxing.cpp - --pc-insert-boxing ------------------------------===//

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace pc {
#define GEN_PASS_DEF_INSERTBOXING
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

struct InsertBoxingPass : public pc::impl::InsertBoxingBase<InsertBoxingPass> {
  void runOnOperation() override {
    // One boxing per (value, wanted layout), placed right after the value's
    // definition so that it dominates every consumer.
    DenseMap<std::pair<Value, Attribute>, Value> boxed;
    DenseMap<Block *, Operation *> lastAtStart;
    auto box = [&](Value v, SbpAttr want) -> Value {
      auto [it, inserted] = boxed.try_emplace({v, want});
      if (!inserted)
        return it->second;
      OpBuilder b(v.getContext());
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        // After the boxings of earlier arguments, so they read in order.
        Operation *&last = lastAtStart[arg.getOwner()];
        if (last)
          b.setInsertionPointAfter(last);
        else
          b.setInsertionPointToStart(arg.getOwner());
        it->second =
            BoxingOp::create(b, v.getLoc(), withSbp(v.getType(), want), v);
        last = it->second.getDefiningOp();
      } else {
        b.setInsertionPointAfter(v.getDefiningOp());
        it->second =
            BoxingOp::create(b, v.getLoc(), withSbp(v.getType(), want), v);
      }
      ++numBoxings;
      return it->second;
    };

    getOperation().walk([&](Operation *op) {
      ArrayAttr wants = attrs::getOperandSbps(op);
      if (!wants)
        return;
      for (auto [i, want] : llvm::enumerate(wants)) {
        Value v = op->getOperand(i);
        auto sbp = cast<SbpAttr>(want);
        if (getSbp(v.getType()) != sbp)
          op->setOperand(i, box(v, sbp));
      }
      op->removeAttr(attrs::kOperandSbps);
    });

    // A user's constraint becomes a decided change, or nothing.
    getOperation().walk([&](ToSbpOp op) {
      Value in = op.getInput();
      if (!getSbp(in.getType())) {
        op.emitOpError("has an operand without a layout; run "
                       "--pc-sbp-propagate first");
        return signalPassFailure();
      }
      SbpAttr want = getSbp(op.getType());
      if (getSbp(in.getType()) == want) {
        op.replaceAllUsesWith(in);
      } else {
        OpBuilder b(op);
        op.replaceAllUsesWith(
            BoxingOp::create(b, op.getLoc(), op.getType(), in).getResult());
        ++numBoxings;
      }
      op.erase();
    });
  }
};

} // namespace

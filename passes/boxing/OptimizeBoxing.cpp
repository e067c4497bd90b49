//===- OptimizeBoxing.cpp - --pc-optimize-boxing --------------------------===//

#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

namespace pc {
#define GEN_PASS_DEF_OPTIMIZEBOXING
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

struct OptimizeBoxingPass
    : public pc::impl::OptimizeBoxingBase<OptimizeBoxingPass> {
  void runOnOperation() override {
    // Chains: boxing(boxing(x)) plans as one boxing from x, so the planner
    // sees the whole change; when x already has the final layout, both go.
    // Walking in order folds longer chains one link at a time.
    getOperation().walk([&](BoxingOp op) {
      auto inner = op.getInput().getDefiningOp<BoxingOp>();
      if (!inner)
        return;
      Value source = inner.getInput();
      if (source.getType() == op.getType()) {
        op.replaceAllUsesWith(source);
        op.erase();
      } else {
        op.getInputMutable().assign(source);
      }
      if (inner->use_empty())
        inner.erase();
      ++numFolded;
    });

    // One boxing per (value, layout); identity boxings vanish.
    DenseMap<std::pair<Value, Type>, BoxingOp> seen;
    getOperation().walk([&](BoxingOp op) {
      if (op.getInput().getType() == op.getType()) {
        op.replaceAllUsesWith(op.getInput());
        op.erase();
        ++numFolded;
        return;
      }
      auto [it, inserted] = seen.try_emplace({op.getInput(), op.getType()}, op);
      if (!inserted) {
        op.replaceAllUsesWith(it->second.getResult());
        op.erase();
        ++numFolded;
      }
    });

    // all_reduce then local_slice over the same axes: a reduce-scatter.
    getOperation().walk([&](LocalSliceOp slice) {
      auto ar = slice.getInput().getDefiningOp<AllReduceOp>();
      if (!ar || !ar->hasOneUse() || ar.getAxes() != slice.getAxes() ||
          ar.isLocal() || slice.isLocal())
        return;
      OpBuilder b(slice);
      auto rs = ReduceScatterOp::create(
          b, slice.getLoc(), slice.getType(), ar.getInput(), ar.getMeshAttr(),
          ar.getAxesAttr(), slice.getDimAttr(), ar.getReduceAttr(),
          DenseI64ArrayAttr());
      if (failed(verify(rs))) {
        rs.erase();
        return;
      }
      slice.replaceAllUsesWith(rs.getResult());
      slice.erase();
      ar.erase();
      ++numFused;
    });
  }
};

} // namespace

//===- Autodiff.cpp - --pc-autodiff ---------------------------------------===//
//
// Reverse-mode differentiation of a logical graph. The loss is the result
// marked {pc.loss} (or the only result, when it is a 0-d float tensor).
// Only values that depend on a trainable parameter are active, and only
// active values from which the loss is reached get a gradient, so frozen
// parameters and the work that feeds only them cost nothing backward. Each
// trainable parameter's gradient (summed over its pc.get_param reads)
// becomes a new result {pc.grad = @name, pc.name = "name.grad"}.
//
//===----------------------------------------------------------------------===//

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "passes/training/GradientRules.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/ScopeExit.h"

namespace pc {
#define GEN_PASS_DEF_AUTODIFF
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

/// The index of `f`'s loss result, or failure (with a diagnostic when
/// `required`, else silently: the function is not a training graph).
FailureOr<unsigned> findLoss(func::FuncOp f, bool required) {
  std::optional<unsigned> marked;
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (attrs::isLoss(f, i)) {
      if (marked)
        return f.emitOpError() << "marks results #" << *marked << " and #" << i
                               << " as {pc.loss}; a graph has one loss";
      marked = i;
    }
  if (!marked)
    marked = lossResult(f); // the only result, a 0-d float
  if (!marked) {
    if (required)
      return f.emitOpError()
             << "has no loss to differentiate: mark one 0-d float result "
                "with {pc.loss}";
    return failure();
  }
  auto t = cast<RankedTensorType>(f.getResultTypes()[*marked]);
  if (t.getRank() != 0 || !isFloatTensor(t))
    return f.emitOpError() << "loss (result #" << *marked
                           << ") must be a 0-d float tensor, not " << t;
  return *marked;
}

struct AutodiffPass : public pc::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> graphs;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isExternal() || attrs::getGraph(f))
        continue;
      if (!graph.empty() && f.getSymName() != graph)
        continue;
      graphs.push_back(f);
    }
    if (!graph.empty() && graphs.empty()) {
      module.emitError() << "--pc-autodiff: no logical graph @" << graph;
      return signalPassFailure();
    }
    for (func::FuncOp f : graphs) {
      FailureOr<unsigned> loss = findLoss(f, !graph.empty());
      if (failed(loss)) {
        if (!graph.empty() || hasLossMark(f))
          return signalPassFailure();
        continue;
      }
      if (failed(differentiate(module, f, *loss)))
        return signalPassFailure();
    }
  }

  static bool hasLossMark(func::FuncOp f) {
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      if (attrs::isLoss(f, i))
        return true;
    return false;
  }

  /// What the backward pass starts from: 1, or under loss scaling
  /// (pc-mixed-precision) the scale, times the input that injects an
  /// overflow when the graph asks for one.
  static FailureOr<Value> seedOf(ModuleOp module, func::FuncOp f, OpBuilder &b,
                                 Location loc, RankedTensorType seedType) {
    std::optional<attrs::LossScaling> scaling = attrs::getLossScaling(f);
    if (!scaling)
      return Value(ConstantOp::create(
          b, loc, seedType,
          DenseElementsAttr::get(
              seedType, ArrayRef<Attribute>{
                            FloatAttr::get(seedType.getElementType(), 1.0)})));
    auto param = module.lookupSymbol<ParamOp>(scaling->scale);
    if (!param || param.getTensorType().getRank() != 0 ||
        !param.getTensorType().getElementType().isF32())
      return f.emitOpError() << "scales its loss by " << scaling->scale
                             << ", which is not a 0-d f32 pc.param";
    Value scale =
        GetParamOp::create(b, loc, param.getTensorType(), scaling->scale);
    if (scaling->injectOverflow) {
      unsigned index = f.getNumArguments();
      auto type = RankedTensorType::get({}, b.getF32Type());
      if (failed(f.insertArgument(index, type,
                                  b.getDictionaryAttr({attrs::name(
                                      b, attrs::kInjectOverflowInput.str())}),
                                  loc)))
        return failure();
      scale = MulOp::create(b, loc, scale, f.getArgument(index));
    }
    if (!seedType.getElementType().isF32())
      scale = CastOp::create(b, loc, seedType, scale);
    return scale;
  }

  LogicalResult differentiate(ModuleOp module, func::FuncOp f, unsigned loss) {
    // Marked, so that the optimizer and the training loop find it too.
    attrs::setLoss(f, loss);
    Block &body = f.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value lossValue = ret.getOperand(loss);

    // Forward: values that depend on a trainable parameter.
    DenseSet<Value> active;
    for (Operation &op : body.without_terminator()) {
      bool in = false;
      if (auto get = dyn_cast<GetParamOp>(op)) {
        auto param = module.lookupSymbol<ParamOp>(get.getName());
        in = param && param.getTrainable() && isFloatTensor(get.getType());
      } else {
        for (Value v : op.getOperands())
          in |= active.contains(v);
      }
      if (in)
        for (Value r : op.getResults())
          if (isFloatTensor(r.getType()))
            active.insert(r);
    }
    // Backward: values the loss depends on.
    DenseSet<Value> useful{lossValue};
    for (Operation &op :
         llvm::reverse(llvm::make_range(body.begin(), ret->getIterator())))
      if (llvm::any_of(op.getResults(),
                       [&](Value r) { return useful.contains(r); }))
        for (Value v : op.getOperands())
          useful.insert(v);

    OpBuilder b(ret);
    // Pipelined graphs (pc-pipeline-split) need to know which ops are the
    // backward pass, and which of those lead to activations' gradients.
    bool pipelined = static_cast<bool>(attrs::getPipeline(f));
    DenseMap<Value, Value> grads;
    auto accumulate = [&](Value v, Value g) {
      auto [it, inserted] = grads.try_emplace(v, g);
      if (!inserted) {
        it->second = AddOp::create(b, g.getLoc(), it->second, g);
        // The sum of a value's gradient contributions belongs to the
        // value's own stage, whatever stages its users are in.
        if (Operation *def = v.getDefiningOp(); def && pipelined)
          if (std::optional<int64_t> stage = attrs::getStage(def)) {
            attrs::setBackward(it->second.getDefiningOp());
            attrs::setStage(it->second.getDefiningOp(), *stage);
          }
      }
      // An activation's gradient (not a parameter's): pipelines run the ops
      // that lead to it as B, and the rest of the backward pass as W.
      if (pipelined && !v.getDefiningOp<GetParamOp>())
        if (Operation *def = it->second.getDefiningOp())
          attrs::setInputGrad(def);
    };
    // Every op built since `mark` belongs to the backward pass of `forward`:
    // it keeps the forward op's pipeline stage.
    auto markBackward = [&](Operation *mark, Operation *forward) {
      if (!pipelined)
        return;
      std::optional<int64_t> stage = attrs::getStage(forward);
      for (Operation *o = mark ? mark->getNextNode() : &body.front(); o != ret;
           o = o->getNextNode()) {
        if (attrs::isBackward(o))
          continue;
        attrs::setBackward(o);
        if (stage)
          attrs::setStage(o, *stage);
      }
    };
    if (!active.contains(lossValue)) {
      // No trainable parameter reaches the loss: nothing to add.
      return success();
    }
    auto lossType = cast<RankedTensorType>(lossValue.getType());
    auto seedType = RankedTensorType::get({}, lossType.getElementType());
    Operation *seedMark = ret->getPrevNode();
    FailureOr<Value> seed = seedOf(module, f, b, lossValue.getLoc(), seedType);
    if (failed(seed))
      return failure();
    accumulate(lossValue, *seed);
    if (Operation *lossOp = lossValue.getDefiningOp())
      markBackward(seedMark, lossOp);

    SmallVector<StringAttr> order;
    DenseMap<StringAttr, Value> paramGrads;
    for (Operation &op :
         llvm::reverse(llvm::make_range(body.begin(), ret->getIterator()))) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value r : op.getResults()) {
        resultGrads.push_back(grads.lookup(r));
        any |= static_cast<bool>(resultGrads.back());
      }
      if (!any)
        continue;
      Operation *mark = ret->getPrevNode();
      auto done = llvm::make_scope_exit([&] { markBackward(mark, &op); });
      if (auto get = dyn_cast<GetParamOp>(op)) {
        StringAttr name = get.getNameAttr().getAttr();
        auto [it, inserted] = paramGrads.try_emplace(name, resultGrads[0]);
        if (inserted)
          order.push_back(name);
        else
          it->second =
              AddOp::create(b, op.getLoc(), it->second, resultGrads[0]);
        continue;
      }
      auto needs = [&](unsigned i) {
        Value v = op.getOperand(i);
        return active.contains(v) && useful.contains(v);
      };
      if (llvm::none_of(llvm::seq(op.getNumOperands()), needs))
        continue;
      GradientContext context{b, &op, resultGrads, needs};
      SmallVector<Value> operandGrads;
      if (failed(buildGradients(context, operandGrads)))
        return failure();
      for (auto [i, g] : llvm::enumerate(operandGrads))
        if (g)
          accumulate(op.getOperand(i), g);
      ++numRules;
    }

    // The gradients, after the forward results, in first-read order.
    DenseMap<StringAttr, unsigned> firstRead;
    for (auto [i, op] : llvm::enumerate(body))
      if (auto get = dyn_cast<GetParamOp>(op))
        firstRead.try_emplace(get.getNameAttr().getAttr(), i);
    llvm::sort(order, [&](StringAttr a, StringAttr c) {
      return firstRead.lookup(a) < firstRead.lookup(c);
    });
    SmallVector<Value> results(ret.getOperands());
    for (StringAttr name : order) {
      Value g = paramGrads.lookup(name);
      auto resultAttrs = b.getDictionaryAttr(
          {attrs::grad(b, FlatSymbolRefAttr::get(name)),
           attrs::name(b, (name.getValue() + ".grad").str())});
      if (failed(f.insertResult(f.getNumResults(), g.getType(), resultAttrs)))
        return failure();
      results.push_back(g);
      ++numGradients;
    }
    ret->setOperands(results);
    return success();
  }
};

} // namespace

//===- MixedPrecision.cpp - --pc-mixed-precision --------------------------===//
//
// Automatic mixed precision as a rewrite of the forward graph: the weights
// stay f32 and every op computes in bf16 or f16 on casts of its operands,
// except a list of ops kept in f32 (softmax, norms, the loss). It runs
// before autodiff, so the backward pass follows the same types, and it
// marks the graph for loss scaling, which autodiff and the optimizer carry
// out (docs/memory.md).
//
//===----------------------------------------------------------------------===//

#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

namespace pc {
#define GEN_PASS_DEF_MIXEDPRECISION
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

/// Torch autocast's choice: what exponentiates or sums over many elements
/// keeps f32 values (the loss's mean included).
constexpr const char *kDefaultF32Ops[] = {
    "softmax",       "log_softmax", "layer_norm", "rms_norm",
    "cross_entropy", "reduce_sum",  "reduce_mean"};

Type elemOf(Type t) { return cast<RankedTensorType>(t).getElementType(); }

/// Ops that only move or relabel data: their result takes their operand's
/// type, whatever it is.
bool movesData(Operation *op) {
  return isa<ReshapeOp, TransposeOp, BroadcastToOp, SliceOp, ToSbpOp, AfterOp>(
      op);
}

struct MixedPrecisionPass
    : public pc::impl::MixedPrecisionBase<MixedPrecisionPass> {
  using MixedPrecisionBase::MixedPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder builder(module.getContext());
    Type low = dtype == "bf16"  ? Type(builder.getBF16Type())
               : dtype == "f16" ? Type(builder.getF16Type())
                                : Type();
    if (!low) {
      module.emitError() << "--pc-mixed-precision: dtype must be bf16 or "
                            "f16, not '"
                         << dtype << "'";
      return signalPassFailure();
    }
    std::string scaling = lossScale.empty()
                              ? (dtype == "f16" ? "dynamic" : "none")
                              : std::string(lossScale);
    double staticScale = 0;
    bool isNumber = !llvm::StringRef(scaling).getAsDouble(staticScale);
    if (scaling != "dynamic" && scaling != "none" &&
        (!isNumber || !(staticScale > 0) || !std::isfinite(staticScale))) {
      module.emitError() << "--pc-mixed-precision: loss-scale must be "
                            "dynamic, none or a positive number, not '"
                         << scaling << "'";
      return signalPassFailure();
    }
    if (!(initScale > 0) || !std::isfinite(initScale) || growthInterval < 1 ||
        !(growthFactor >= 1) || !(backoffFactor > 0 && backoffFactor <= 1)) {
      module.emitError() << "--pc-mixed-precision: needs init-scale > 0, "
                            "growth-interval >= 1, growth-factor >= 1 and "
                            "0 < backoff-factor <= 1";
      return signalPassFailure();
    }
    if (injectOverflow && scaling == "none") {
      module.emitError() << "--pc-mixed-precision: inject-overflow needs loss "
                            "scaling (loss-scale is none)";
      return signalPassFailure();
    }
    llvm::StringSet<> keep;
    if (f32Ops.empty())
      keep.insert(std::begin(kDefaultF32Ops), std::end(kDefaultF32Ops));
    for (const std::string &name : f32Ops)
      if (!name.empty() && name != "none")
        keep.insert(name);

    SmallVector<func::FuncOp> graphs;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal() && !attrs::getGraph(f))
        graphs.push_back(f);
    for (func::FuncOp f : graphs)
      convert(f, low, keep);
    if (scaling == "none")
      return;
    double first = scaling == "dynamic" ? double(initScale) : staticScale;
    std::optional<attrs::LossScaling> marked;
    for (func::FuncOp f : graphs) {
      if (!lossResult(f))
        continue;
      if (!marked)
        marked = addScaleParams(module, first, scaling == "dynamic");
      attrs::setLossScaling(f, *marked);
    }
  }

  /// The loss-scaling state: `loss_scale` (and for dynamic scaling its
  /// clean-step counter), optimizer state that checkpoints keep.
  attrs::LossScaling addScaleParams(ModuleOp module, double first,
                                    bool dynamic) {
    // After the model's parameters.
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    for (auto p : module.getOps<ParamOp>())
      b.setInsertionPointAfter(p);
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    auto add = [&](StringRef base, double value) {
      std::string name = base.str();
      for (int k = 1; module.lookupSymbol(name); ++k)
        name = (base + "." + std::to_string(k)).str();
      auto init = value == 0 ? InitAttr::get(b.getContext(), InitKind::zeros,
                                             APFloat(0.0), APFloat(0.0))
                             : InitAttr::get(b.getContext(), InitKind::constant,
                                             APFloat(value), APFloat(0.0));
      auto param =
          ParamOp::create(b, module.getLoc(), b.getStringAttr(name),
                          TypeAttr::get(scalar), init, b.getBoolAttr(false));
      attrs::setOptimizerState(param);
      return FlatSymbolRefAttr::get(param.getSymNameAttr());
    };
    attrs::LossScaling s;
    s.scale = add("loss_scale", first);
    if (dynamic)
      s.cleanSteps = add("loss_scale.clean_steps", 0);
    s.interval = growthInterval;
    s.growth = growthFactor;
    s.backoff = backoffFactor;
    s.injectOverflow = injectOverflow;
    return s;
  }

  void convert(func::FuncOp f, Type low, const llvm::StringSet<> &keep) {
    Block &body = f.getBody().front();
    Type f32 = Float32Type::get(f.getContext());
    // One cast per value, type and pipeline stage, made before its first
    // reader there (the block runs in order, so it dominates the later
    // ones): a cast shared across stages would send the value between them.
    DenseMap<std::tuple<Value, Type, int64_t>, Value> casts;
    auto castTo = [&](Operation *user, Value v, Type elem) -> Value {
      auto type = cast<RankedTensorType>(v.getType());
      if (type.getElementType() == elem)
        return v;
      Value &c = casts[{v, elem, attrs::getStage(user).value_or(-1)}];
      if (!c) {
        OpBuilder b(user);
        auto made = CastOp::create(b, v.getLoc(), type.clone(elem), v);
        // The reader's pipeline stage and recompute segment.
        if (std::optional<int64_t> stage = attrs::getStage(user))
          attrs::setStage(made, *stage);
        if (std::optional<int64_t> segment = attrs::getSegment(user))
          attrs::setSegment(made, *segment);
        c = made;
        ++numCasts;
      }
      return c;
    };
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        // The graph's results keep their declared types.
        for (auto [i, v] : llvm::enumerate(ret.getOperands()))
          if (isFloatTensor(v.getType()))
            ret.setOperand(i, castTo(ret, v, elemOf(f.getResultTypes()[i])));
        continue;
      }
      if (isa<GetParamOp, ConstantOp, CastOp>(op) ||
          llvm::none_of(op.getOperandTypes(), isFloatTensor) ||
          llvm::none_of(op.getResultTypes(), isFloatTensor))
        continue;
      Type target;
      if (movesData(&op)) {
        Value first = *llvm::find_if(op.getOperands(), [](Value v) {
          return isFloatTensor(v.getType());
        });
        target = elemOf(first.getType());
      } else {
        StringRef name = op.getName().getStringRef();
        name.consume_front("pc.");
        target = keep.contains(name) ? f32 : low;
        ++(target == low ? numLow : numF32);
      }
      for (OpOperand &use : op.getOpOperands())
        if (isFloatTensor(use.get().getType()))
          use.set(castTo(&op, use.get(), target));
      for (Value r : op.getResults())
        if (isFloatTensor(r.getType()))
          r.setType(cast<RankedTensorType>(r.getType()).clone(target));
    }
  }
};

} // namespace

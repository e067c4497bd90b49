//===- Optimizer.cpp - --pc-optimizer -------------------------------------===//
//
// Turns the gradients --pc-autodiff returns into parameter updates inside
// the graph: optimizer state becomes persistent parameters with their own
// layout (the weight's, so ZeRO later shards it by changing only that), the
// update math is logical ops, and pc.set_param stores the new values. The
// learning rate is a graph input (`lr`), so the training loop's schedule
// changes it without recompiling; Adam's bias correction counts steps in a
// parameter of its own.
//
//===----------------------------------------------------------------------===//

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "passes/training/LogicalEmitter.h"

#include "mlir/IR/Builders.h"

#include <cmath>

namespace pc {
#define GEN_PASS_DEF_OPTIMIZER
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

struct OptimizerPass : public pc::impl::OptimizerBase<OptimizerPass> {
  using OptimizerBase::OptimizerBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (kind != "sgd" && kind != "adam" && kind != "adamw") {
      module.emitError() << "--pc-optimizer: kind must be sgd, adam or adamw, "
                            "not '"
                         << kind << "'";
      return signalPassFailure();
    }
    if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) ||
        !(eps > 0) || momentum < 0 || weightDecay < 0 || clipNorm < 0) {
      module.emitError() << "--pc-optimizer: needs 0 <= beta1, beta2 < 1, "
                            "eps > 0, and momentum, weight-decay and "
                            "clip-norm >= 0";
      return signalPassFailure();
    }
    if (zero < 0 || zero > 3) {
      module.emitError() << "--pc-optimizer: zero must be 0, 1, 2 or 3, not "
                         << static_cast<int64_t>(zero);
      return signalPassFailure();
    }
    if ((stateBits != 32 && stateBits != 8) ||
        (stateBits == 8 && (kind == "sgd" || !fuse))) {
      module.emitError() << "--pc-optimizer: state-bits is 32, or 8 with the "
                            "fused adam or adamw update, not "
                         << static_cast<int64_t>(stateBits) << " with " << kind
                         << (fuse ? "" : " unfused");
      return signalPassFailure();
    }
    for (auto f : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (!f.isExternal() && !attrs::getGraph(f) && failed(update(module, f)))
        return signalPassFailure();
  }

  /// The parameter's layout, fixing an undeclared one to replicated on the
  /// module's only mesh: a trained parameter is stored in one layout, which
  /// its reads, its update and the next step share.
  FailureOr<RankedTensorType> storedType(ModuleOp module, ParamOp param,
                                         MeshOp near = {}) {
    if (getSbp(param.getType()))
      return param.getTensorType();
    MeshCache meshes(module);
    MeshOp mesh = near ? near : meshes.onlyMesh();
    if (!mesh)
      return param.emitOpError()
             << "is trained but has no layout, and the module has "
             << (module.getOps<MeshOp>().empty() ? "no mesh" : "several meshes")
             << " to replicate it on; declare its layout";
    SmallVector<SbpEntry> entries(mesh.getShape().size(),
                                  SbpEntry::broadcast());
    auto type = cast<RankedTensorType>(withSbp(
        param.getType(),
        makeSbp(module.getContext(),
                FlatSymbolRefAttr::get(mesh.getSymNameAttr()), entries)));
    param.setTypeAttr(TypeAttr::get(type));
    module.walk([&](GetParamOp get) {
      if (get.getName() == param.getSymName())
        get.getResult().setType(type);
    });
    return type;
  }

  /// `layout` with the `zero-axis` entry split along the first dim of
  /// `shape` it divides (after the other axes' splits of that dim): where
  /// ZeRO keeps a weight's optimizer state and runs its update. Null when
  /// the weight is not replicated over that axis, or no dim divides.
  SbpAttr zeroLayout(ModuleOp module, SbpAttr layout, ArrayRef<int64_t> shape) {
    auto mesh = module.lookupSymbol<MeshOp>(layout.getMesh().getAttr());
    if (!mesh)
      return {};
    std::optional<size_t> axis;
    for (auto [i, name] : llvm::enumerate(mesh.getAxisNames()))
      if (cast<StringAttr>(name).getValue() == zeroAxis)
        axis = i;
    ArrayRef<SbpEntry> entries = layout.getEntries();
    int64_t n = axis ? mesh.getShape()[*axis] : 1;
    if (!axis || n < 2 || !entries[*axis].isBroadcast())
      return {};
    for (auto [d, size] : llvm::enumerate(shape)) {
      int64_t local = size;
      for (auto [a, entry] : llvm::enumerate(entries))
        if (entry.isSplit() && entry.dim == static_cast<int32_t>(d))
          local /= mesh.getShape()[a];
      if (local % n != 0 || local < n)
        continue;
      SmallVector<SbpEntry> sharded(entries.begin(), entries.end());
      sharded[*axis] = SbpEntry::split(static_cast<int32_t>(d));
      return makeSbp(module.getContext(), layout.getMesh(), sharded);
    }
    return {};
  }

  /// A new frozen parameter `name` of `type`, filled with zeros.
  ParamOp addState(ModuleOp module, ParamOp after, StringRef name,
                   RankedTensorType type) {
    OpBuilder b(after);
    b.setInsertionPointAfter(after);
    auto state = ParamOp::create(
        b, after.getLoc(), b.getStringAttr(name), TypeAttr::get(type),
        InitAttr::get(module.getContext(), InitKind::zeros, APFloat(0.0),
                      APFloat(0.0)),
        b.getBoolAttr(false));
    attrs::setOptimizerState(state);
    ++numStates;
    return state;
  }

  /// Whether a weight of `type` (in its update's layout) keeps 8-bit
  /// moments: with state-bits=8, from 4096 elements (smaller tensors keep
  /// f32 state, as their scales would cost more than the bytes saved), and
  /// when its layout splits the last dim, if at all, at whole blocks.
  bool quantizable(RankedTensorType type) {
    if (stateBits != 8 || type.getNumElements() < 4096 || type.getRank() < 1)
      return false;
    SbpAttr sbp = getSbp(type);
    if (!sbp)
      return true;
    auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(getOperation(),
                                                             sbp.getMesh());
    int64_t last = type.getRank() - 1, parts = 1;
    for (auto [axis, entry] : llvm::enumerate(sbp.getEntries()))
      if (entry.isSplit() && entry.dim == last && mesh)
        parts *= mesh.getShape()[axis];
    return parts == 1 || type.getShape()[last] % (256 * parts) == 0;
  }

  /// Adam's update with 8-bit moments (pc.adam8_update): codes of the
  /// weight's shape in ui8 and one f32 scale per block of 256 along the
  /// last dim, stored in the update's layout.
  void emitAdam8(ModuleOp module, OpBuilder &b, LogicalEmitter &e,
                 ParamOp param, RankedTensorType type32, Value w, Value g,
                 Value lr, Value c1, Value c2, Type elem, SbpAttr layout,
                 llvm::function_ref<Value(Value)> toStored) {
    SmallVector<int64_t> scaleShape(type32.getShape());
    scaleShape.back() = (scaleShape.back() + 255) / 256;
    auto withLayout = [&](RankedTensorType t) {
      return layout ? cast<RankedTensorType>(withSbp(t, layout)) : t;
    };
    auto codes = withLayout(RankedTensorType::get(
        type32.getShape(),
        IntegerType::get(b.getContext(), 8, IntegerType::Unsigned)));
    auto scales = withLayout(RankedTensorType::get(scaleShape, b.getF32Type()));
    std::string base = param.getSymName().str();
    std::string names[4] = {base + ".adam_m", base + ".adam_m.scale",
                            base + ".adam_v", base + ".adam_v.scale"};
    RankedTensorType types[4] = {codes, scales, codes, scales};
    for (int i = 3; i >= 0; --i)
      addState(module, param, names[i], types[i]);
    auto read = [&](int i) {
      return GetParamOp::create(
                 b, e.loc, types[i],
                 FlatSymbolRefAttr::get(b.getStringAttr(names[i])))
          .getResult();
    };
    auto update = Adam8UpdateOp::create(
        b, e.loc, TypeRange{type32, codes, scales, codes, scales}, w, g,
        read(0), read(1), read(2), read(3), lr, e.here(c1), e.here(c2),
        b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
        b.getF64FloatAttr(eps),
        b.getF64FloatAttr(kind == "adamw" ? double(weightDecay) : 0.0));
    for (int i = 0; i < 4; ++i)
      SetParamOp::create(b, e.loc, b.getStringAttr(names[i]),
                         update->getResult(i + 1));
    Value next = update.getNewWeight();
    if (!elem.isF32())
      next =
          CastOp::create(b, e.loc, withSbp(type32.clone(elem), layout), next);
    SetParamOp::create(b, e.loc, param.getSymNameAttr(), toStored(next));
    ++numQuantized;
  }

  /// ZeRO-3: `param` is stored in `shard`, and every read of it in a
  /// logical graph (the training step, and its evaluation and generation
  /// copies) gathers it back to `used` right before its reader, through
  /// pc.after the reader's first other operand that is computed (an
  /// activation, or in the backward pass a gradient). So each use, forward
  /// or backward, gathers its own copy, freed after that use, instead of
  /// all of them at the start.
  void storeSharded(ModuleOp module, ParamOp param, RankedTensorType used,
                    SbpAttr shard) {
    auto stored = cast<RankedTensorType>(withSbp(used, shard));
    param.setTypeAttr(TypeAttr::get(stored));
    SmallVector<GetParamOp> reads;
    module.walk([&](GetParamOp get) {
      if (get.getName() == param.getSymName() &&
          !attrs::getGraph(get->getParentOfType<func::FuncOp>()))
        reads.push_back(get);
    });
    for (GetParamOp get : reads) {
      get.getResult().setType(stored);
      for (OpOperand &use : llvm::make_early_inc_range(get->getUses())) {
        Operation *user = use.getOwner();
        OpBuilder b(user);
        Value v = get.getResult();
        if (Value gate = gateOf(user, v)) {
          v = AfterOp::create(b, get.getLoc(), v, gate);
          cast<OpResult>(v).setType(stored);
          copyPlacement(user, v.getDefiningOp());
        }
        v = ToSbpOp::create(b, get.getLoc(), used, v);
        copyPlacement(user, v.getDefiningOp());
        use.set(v);
      }
      ++numGathered;
    }
  }

  /// The first operand of `user` other than `weight` that something
  /// computes: not a parameter read (or another weight's gather), a
  /// constant or an argument, which are all there from the start; null
  /// when none.
  static Value gateOf(Operation *user, Value weight) {
    for (Value v : user->getOperands()) {
      if (v == weight)
        continue;
      Value root = v;
      while (Operation *d = root.getDefiningOp()) {
        if (!isa<ToSbpOp, AfterOp>(d))
          break;
        root = d->getOperand(0);
      }
      Operation *def = root.getDefiningOp();
      if (def && !isa<GetParamOp, ConstantOp>(def))
        return v;
    }
    return {};
  }

  struct Trained {
    ParamOp param;
    RankedTensorType type;
    Value grad;
    /// Where ZeRO runs the update and keeps the state; null: the
    /// weight's layout.
    SbpAttr shard;
  };

  /// A step's loss scale: its value, where it lives, and whether every
  /// gradient is finite (1) or not (0); `skipped` is 1 - finite.
  struct LossScale {
    Value value, finite, skipped;
    SbpAttr layout;
  };

  static SbpAttr replicatedOn(SbpAttr like) {
    return makeSbp(
        like.getContext(), like.getMesh(),
        SmallVector<SbpEntry>(like.getEntries().size(), SbpEntry::broadcast()));
  }

  /// Reads the scale, tells whether every gradient is finite (the sum of
  /// g * 0 over all of them is 0 when they are and NaN when any holds an
  /// inf or a NaN), and divides every gradient by the scale.
  FailureOr<LossScale> unscale(ModuleOp module, OpBuilder &b, LogicalEmitter &e,
                               const attrs::LossScaling &scaling,
                               MutableArrayRef<Trained> trained) {
    LossScale scale;
    MeshOp near;
    if (SbpAttr s = getSbp(trained.back().type))
      near = module.lookupSymbol<MeshOp>(s.getMesh().getAttr());
    auto param = module.lookupSymbol<ParamOp>(scaling.scale);
    if (!param)
      return module.emitError() << "--pc-optimizer: the loss scale "
                                << scaling.scale << " is not a pc.param";
    FailureOr<RankedTensorType> type = storedType(module, param, near);
    if (failed(type))
      return failure();
    scale.layout = getSbp(*type);
    scale.value = GetParamOp::create(b, e.loc, *type, scaling.scale);
    // Scalars computed from values without a layout have none: pinned to
    // the scale's, so that each is made on its mesh once and moved from
    // there (e.here moves only values that have a layout).
    auto pin = [&](Value v) -> Value {
      if (getSbp(v.getType()) == scale.layout)
        return v;
      return ToSbpOp::create(b, e.loc, withSbp(v.getType(), scale.layout), v);
    };
    // First the check, on the gradients as they are (scaling keeps an inf
    // an inf): each stage sends its sum to the scale's mesh and gets the
    // verdict and the inverse scale back, one round trip, as clipping
    // does.
    Value bad;
    for (Trained &t : trained) {
      e.scalarLayout = replicatedOn(getSbp(t.type));
      Type elem = cast<RankedTensorType>(t.grad.getType()).getElementType();
      Value zero = e.sumAll(e.mul(t.grad, e.scalarLike(0, t.grad)));
      if (!elem.isF32())
        zero = CastOp::create(
            b, e.loc,
            cast<RankedTensorType>(zero.getType()).clone(b.getF32Type()), zero);
      e.scalarLayout = scale.layout;
      zero = pin(zero);
      bad = bad ? pin(e.add(bad, zero)) : zero;
    }
    e.scalarLayout = scale.layout;
    scale.finite = pin(e.compare(bad, bad, Comparison::eq));
    scale.skipped = pin(e.sub(e.scalar(1, b.getF32Type()), scale.finite));
    Value inverse = pin(e.div(e.scalar(1, b.getF32Type()), scale.value));
    for (Trained &t : trained) {
      e.scalarLayout = replicatedOn(getSbp(t.type));
      Value k = e.here(inverse);
      Type elem = cast<RankedTensorType>(t.grad.getType()).getElementType();
      if (!elem.isF32())
        k = CastOp::create(b, e.loc,
                           cast<RankedTensorType>(k.getType()).clone(elem), k);
      t.grad = e.mul(t.grad, k);
    }
    return scale;
  }

  /// Keeps every pc.set_param after `start` only when the step is finite
  /// (the stored value otherwise stays: a skipped step changes nothing),
  /// then stores the next scale.
  void finishLossScaling(ModuleOp module, OpBuilder &b, LogicalEmitter &e,
                         const attrs::LossScaling &scaling,
                         const LossScale &scale, Operation *start,
                         Operation *ret) {
    SmallVector<SetParamOp> sets;
    for (Operation *o = start->getNextNode(); o != ret; o = o->getNextNode())
      if (auto set = dyn_cast<SetParamOp>(o))
        sets.push_back(set);
    for (SetParamOp set : sets) {
      auto param = module.lookupSymbol<ParamOp>(set.getNameAttr());
      b.setInsertionPoint(set);
      e.scalarLayout = replicatedOn(getSbp(param.getType()));
      Value old =
          GetParamOp::create(b, e.loc, param.getType(), set.getNameAttr());
      Value kept =
          SelectOp::create(b, e.loc, e.here(scale.finite), set.getValue(), old);
      set.getValueMutable().assign(kept);
      ++numSkippable;
    }
    b.setInsertionPoint(ret);
    if (!scaling.cleanSteps)
      return; // A static scale.
    e.scalarLayout = scale.layout;
    Type f32 = b.getF32Type();
    auto counter = module.lookupSymbol<ParamOp>(scaling.cleanSteps);
    MeshOp near = module.lookupSymbol<MeshOp>(scale.layout.getMesh().getAttr());
    FailureOr<RankedTensorType> type = storedType(module, counter, near);
    Value one = e.scalar(1, f32);
    Value clean =
        e.add(GetParamOp::create(b, e.loc, *type, scaling.cleanSteps), one);
    Value grow = e.compare(clean, e.scalar(double(scaling.interval), f32),
                           Comparison::ge);
    // finite: x (1 + grow (growth - 1)); else x backoff.
    Value factor = e.add(
        e.mul(scale.finite, e.add(one, e.scale(grow, scaling.growth - 1))),
        e.scale(scale.skipped, scaling.backoff));
    SetParamOp::create(b, e.loc, scaling.scale.getAttr(),
                       e.mul(scale.value, factor));
    SetParamOp::create(b, e.loc, scaling.cleanSteps.getAttr(),
                       e.mul(e.mul(scale.finite, clean), e.sub(one, grow)));
  }

  LogicalResult update(ModuleOp module, func::FuncOp f) {
    SmallVector<unsigned> gradResults;
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      if (attrs::getGrad(f, i))
        gradResults.push_back(i);
    if (gradResults.empty())
      return success(); // Not a training graph.
    Block &body = f.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder b(ret);
    // Scalars are replicated on the mesh of the parameter being updated,
    // stated in their types: the update is local by construction.
    LogicalEmitter e(b, f.getLoc());
    SmallVector<Trained> trained;
    Value lr32;
    for (unsigned i : gradResults) {
      FlatSymbolRefAttr name = attrs::getGrad(f, i);
      auto param = module.lookupSymbol<ParamOp>(name);
      if (!param)
        return f.emitOpError() << "result #" << i << " is the gradient of "
                               << name << ", which is not a pc.param";
      FailureOr<RankedTensorType> type = storedType(module, param);
      if (failed(type))
        return failure();
      // The update is elementwise with the weight: the gradient is needed
      // in the weight's layout, so it converts once, here (a partial
      // gradient of a replicated weight is all-reduced, of a split one
      // reduce-scattered), and everything after is local.
      Value g = ret.getOperand(i);
      SbpAttr shard = zero > 0
                          ? zeroLayout(module, getSbp(*type), type->getShape())
                          : SbpAttr();
      // ZeRO-2 reduce-scatters the partial gradient into the update's
      // shard; otherwise it takes the weight's layout (ZeRO-1 then slices).
      // The conversion goes right after the gradient is complete, so that
      // its collective runs in the backward pass, in the order gradients
      // complete, and each gradient goes as soon as it is reduced (the
      // runtime keeps collectives in program order).
      OpBuilder gb(b);
      if (Operation *def = g.getDefiningOp())
        gb.setInsertionPointAfter(def);
      if (!shard || zero < 2)
        g = ToSbpOp::create(gb, f.getLoc(), withSbp(g.getType(), getSbp(*type)),
                            g);
      if (shard)
        g = ToSbpOp::create(gb, f.getLoc(), withSbp(g.getType(), shard), g);
      // ZeRO-3 stores the weight in its shard too; every read gathers it.
      if (shard && zero == 3)
        storeSharded(module, param, *type, shard);
      trained.push_back({param, *type, g, shard});
    }

    // The learning rate, fed by the training loop's schedule, replicated on
    // the first trained parameter's mesh.
    e.scalarLayout = replicatedOn(getSbp(trained.front().type));
    auto lrType = cast<RankedTensorType>(
        withSbp(RankedTensorType::get({}, b.getF32Type()), e.scalarLayout));
    unsigned lrIndex = f.getNumArguments();
    if (failed(f.insertArgument(lrIndex, lrType,
                                b.getDictionaryAttr({attrs::name(b, "lr")}),
                                f.getLoc())))
      return failure();
    lr32 = body.getArgument(lrIndex);

    // Loss scaling (pc-mixed-precision): the gradients are the scale times
    // the loss's. They are divided by it first, so that clipping and the
    // update see the loss's own.
    std::optional<attrs::LossScaling> scaling = attrs::getLossScaling(f);
    LossScale scale;
    if (scaling) {
      FailureOr<LossScale> s = unscale(module, b, e, *scaling, trained);
      if (failed(s))
        return failure();
      scale = *s;
    }
    // What the update stores from here on is kept only when the step is
    // applied (skipUnless).
    Operation *updateStart = ret->getPrevNode();

    // Clipping by the global norm: the sum of squares spans every gradient,
    // whatever their layouts (propagation reduces the partial sums).
    Value clipFactor, gradNorm;
    if (clipNorm > 0) {
      Value total;
      for (Trained &t : trained) {
        Value g = t.grad;
        if (!cast<RankedTensorType>(g.getType()).getElementType().isF32())
          g = CastOp::create(b, e.loc,
                             RankedTensorType::get(
                                 cast<RankedTensorType>(g.getType()).getShape(),
                                 b.getF32Type()),
                             g);
        Value sq = e.here(e.sumAll(e.mul(g, g)));
        total = total ? e.add(total, sq) : sq;
      }
      gradNorm = e.sqrt(total);
      // min(1, clip / (norm + 1e-6)) = 1 - relu(1 - clip / (norm + 1e-6)).
      Value one = e.scalar(1, b.getF32Type());
      Value ratio = e.div(e.scalar(clipNorm, b.getF32Type()),
                          e.add(gradNorm, e.scalar(1e-6, b.getF32Type())));
      clipFactor = e.sub(one, e.relu(e.sub(one, ratio)));
    }

    // Adam's step count, for the bias corrections 1 - beta^t.
    Value biasCorrection1, biasCorrection2;
    if (kind != "sgd") {
      auto stepType = RankedTensorType::get({}, b.getF32Type());
      ParamOp last = trained.back().param;
      std::string stepName = "optimizer.step";
      for (int k = 1; module.lookupSymbol(stepName); ++k)
        stepName = "optimizer.step." + std::to_string(k);
      // With several meshes (pipeline stages), the counter lives with the
      // last trained parameter; the other stages read it from there.
      MeshOp near;
      if (SbpAttr s = getSbp(trained.back().type))
        near = module.lookupSymbol<MeshOp>(s.getMesh().getAttr());
      FailureOr<RankedTensorType> stepStored =
          storedType(module, addState(module, last, stepName, stepType), near);
      if (failed(stepStored))
        return failure();
      e.scalarLayout = getSbp(*stepStored);
      Value step =
          GetParamOp::create(b, e.loc, *stepStored,
                             FlatSymbolRefAttr::get(b.getStringAttr(stepName)));
      Value t = e.add(step, e.scalar(1, b.getF32Type()));
      SetParamOp::create(b, e.loc, b.getStringAttr(stepName), t);
      Value one = e.scalar(1, b.getF32Type());
      biasCorrection1 = e.sub(one, e.exp(e.scale(t, std::log(double(beta1)))));
      biasCorrection2 = e.sub(one, e.exp(e.scale(t, std::log(double(beta2)))));
    }

    for (Trained &t : trained) {
      Type elem = t.type.getElementType();
      e.scalarLayout = replicatedOn(getSbp(t.type));
      auto ref = FlatSymbolRefAttr::get(t.param.getSymNameAttr());
      auto read = [&](StringRef name, RankedTensorType type) {
        return GetParamOp::create(b, e.loc, type,
                                  FlatSymbolRefAttr::get(b.getStringAttr(name)))
            .getResult();
      };
      // The update and the state are f32 whatever the weight's type (16-bit
      // moments underflow), in the weight's layout; the new weight is
      // rounded to its type once.
      SbpAttr updateLayout = t.shard ? t.shard : getSbp(t.type);
      auto type32 = cast<RankedTensorType>(
          withSbp(RankedTensorType::get(t.type.getShape(), b.getF32Type()),
                  updateLayout));
      if (t.shard)
        ++numSharded;
      // The weight in the update's layout (a ZeRO shard is a local slice),
      // and the new weight back in its own, gathered.
      bool storedSharded = t.shard && zero == 3;
      RankedTensorType storedType =
          storedSharded ? cast<RankedTensorType>(withSbp(t.type, t.shard))
                        : t.type;
      auto toShard = [&](Value v) -> Value {
        if (!t.shard || storedSharded)
          return v;
        return ToSbpOp::create(b, e.loc, withSbp(v.getType(), t.shard), v);
      };
      auto toStored = [&](Value v) -> Value {
        if (!t.shard || storedSharded)
          return v;
        return ToSbpOp::create(b, e.loc, withSbp(v.getType(), getSbp(t.type)),
                               v);
      };
      auto to32 = [&](Value v) -> Value {
        if (elem.isF32())
          return v;
        auto vt = cast<RankedTensorType>(v.getType());
        return CastOp::create(
            b, e.loc,
            withSbp(RankedTensorType::get(vt.getShape(), b.getF32Type()),
                    getSbp(vt)),
            v);
      };
      Value w = toShard(to32(read(t.param.getSymName(), storedType)));
      Value g = to32(t.grad);
      if (clipFactor)
        g = e.mul(g, e.here(clipFactor));
      Value lr = e.here(lr32);
      if (weightDecay > 0 && kind != "adamw")
        g = e.add(g, e.scale(w, weightDecay)); // L2, through the gradient.
      Value step;
      if (kind == "sgd") {
        step = g;
        if (momentum > 0) {
          std::string name = (t.param.getSymName() + ".momentum").str();
          addState(module, t.param, name, type32);
          Value buf = e.add(e.scale(read(name, type32), momentum), g);
          SetParamOp::create(b, e.loc, b.getStringAttr(name), buf);
          step = buf;
        }
      } else if (quantizable(type32)) {
        emitAdam8(module, b, e, t.param, type32, w, g, lr, biasCorrection1,
                  biasCorrection2, elem, updateLayout, toStored);
        ++numUpdated;
        ++numFused;
        continue;
      } else {
        std::string mName = (t.param.getSymName() + ".adam_m").str();
        std::string vName = (t.param.getSymName() + ".adam_v").str();
        addState(module, t.param, vName, type32);
        addState(module, t.param, mName, type32);
        if (fuse) {
          // One pass over the weight and its state (AdamUpdateOp), equal
          // to the ops below bit for bit.
          auto update = AdamUpdateOp::create(
              b, e.loc, TypeRange{type32, type32, type32}, w, g,
              read(mName, type32), read(vName, type32), lr,
              e.here(biasCorrection1), e.here(biasCorrection2),
              b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
              b.getF64FloatAttr(eps),
              b.getF64FloatAttr(kind == "adamw" ? double(weightDecay) : 0.0));
          SetParamOp::create(b, e.loc, b.getStringAttr(mName),
                             update.getNewM());
          SetParamOp::create(b, e.loc, b.getStringAttr(vName),
                             update.getNewV());
          Value next = update.getNewWeight();
          if (!elem.isF32())
            next =
                CastOp::create(b, e.loc, withSbp(t.type, updateLayout), next);
          SetParamOp::create(b, e.loc, ref.getAttr(), toStored(next));
          ++numUpdated;
          ++numFused;
          continue;
        }
        Value m =
            e.add(e.scale(read(mName, type32), beta1), e.scale(g, 1 - beta1));
        Value v = e.add(e.scale(read(vName, type32), beta2),
                        e.scale(e.mul(g, g), 1 - beta2));
        SetParamOp::create(b, e.loc, b.getStringAttr(mName), m);
        SetParamOp::create(b, e.loc, b.getStringAttr(vName), v);
        Value mHat = e.div(m, e.here(biasCorrection1));
        Value vHat = e.div(v, e.here(biasCorrection2));
        step = e.div(mHat, e.add(e.sqrt(vHat), e.scalar(eps, b.getF32Type())));
        if (weightDecay > 0 && kind == "adamw")
          step = e.add(step, e.scale(w, weightDecay)); // Decoupled.
      }
      Value next = e.sub(w, e.mul(lr, step));
      if (!elem.isF32())
        next = CastOp::create(b, e.loc, withSbp(t.type, updateLayout), next);
      SetParamOp::create(b, e.loc, ref.getAttr(), toStored(next));
      ++numUpdated;
    }

    if (scaling)
      finishLossScaling(module, b, e, *scaling, scale, updateStart, ret);

    // The gradients are consumed; the loss stays, and the global norm joins
    // it when clipping.
    SmallVector<Value> results;
    BitVector drop(f.getNumResults());
    for (unsigned i : gradResults)
      drop.set(i);
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      if (!drop.test(i))
        results.push_back(ret.getOperand(i));
    if (failed(f.eraseResults(drop)))
      return failure();
    auto output = [&](Value v, StringRef name) {
      if (!v)
        return success();
      if (failed(f.insertResult(f.getNumResults(), v.getType(),
                                b.getDictionaryAttr({attrs::name(b, name)}))))
        return failure();
      results.push_back(v);
      return success();
    };
    // The scale this step used, and whether it was skipped.
    if (failed(output(gradNorm, "grad_norm")) ||
        failed(output(scale.value, "loss_scale")) ||
        failed(output(scale.skipped, "skipped")))
      return failure();
    ret->setOperands(results);
    return success();
  }
};

} // namespace

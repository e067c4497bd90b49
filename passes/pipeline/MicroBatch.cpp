//===- MicroBatch.cpp - --pc-micro-batch ----------------------------------===//
//
// Micro-batching in two phases around pc-autodiff:
//  - shrink: the forward graph computes one micro-batch. Every input of
//    rank >= 1 is a batch along dim 0; the pass follows that dim through
//    the ops (which dim of each value carries the batch) and divides it by
//    m. Reductions over it end the batch; whether they average or sum
//    decides how micro-batches combine (mean or sum).
//  - unroll: after autodiff, the graph takes the whole batch again and runs
//    its body once per micro-batch on rows k, k + m, ... (strided, so a
//    batch split S(0) needs no communication to take a micro-batch). Every
//    op gets its action; results combine in micro-batch order.
//
//===----------------------------------------------------------------------===//

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"

namespace pc {
#define GEN_PASS_DEF_MICROBATCH
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

constexpr int64_t kNone = -3; // no batch dim, nothing reduced over it

/// How a value relates to the batch: its batch dim (>= 0), or, once a
/// reduction removed it, how that reduction combined rows (kCombineMean,
/// kCombineSum); and at the batch dim, how many rows each batch element
/// has (a reshape [n, s, h] -> [n s, h] merges s rows per element).
struct BatchInfo {
  DenseMap<Value, int64_t> dim;
  DenseMap<Value, int64_t> block;
  int64_t of(Value v) const {
    auto it = dim.find(v);
    return it == dim.end() ? kNone : it->second;
  }
  int64_t blockOf(Value v) const {
    auto it = block.find(v);
    return it == block.end() ? 1 : it->second;
  }
};

RankedTensorType shrunk(Type t, int64_t dim, int64_t m) {
  auto r = cast<RankedTensorType>(t);
  SmallVector<int64_t> shape(r.getShape());
  shape[dim] /= m;
  return RankedTensorType::get(shape, r.getElementType(), r.getEncoding());
}

struct MicroBatchPass : public pc::impl::MicroBatchBase<MicroBatchPass> {
  using MicroBatchBase::MicroBatchBase;

  void runOnOperation() override {
    if (phase != "shrink" && phase != "unroll") {
      getOperation().emitError()
          << "--pc-micro-batch: phase must be shrink or unroll, not '" << phase
          << "'";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> graphs;
    forEachGraph(getOperation(), [&](func::FuncOp f) {
      if (!attrs::getGraph(f) && attrs::getPipeline(f))
        graphs.push_back(f);
    });
    for (func::FuncOp f : graphs)
      if (failed(phase == "shrink" ? shrink(f) : unroll(f)))
        return signalPassFailure();
  }

  //===--- shrink ---------------------------------------------------------===//

  LogicalResult shrink(func::FuncOp f) {
    int64_t m = attrs::getPipeline(f).getMicroBatches();
    if (m == 1 || attrs::getMicroBatch(f) || isUnrolled(f))
      return success();
    BatchInfo info;
    for (BlockArgument arg : f.getArguments()) {
      auto t = dyn_cast<RankedTensorType>(arg.getType());
      if (!t || t.getRank() == 0)
        continue;
      if (t.getDimSize(0) % m != 0)
        return f.emitOpError()
               << "input #" << arg.getArgNumber() << " has a batch of "
               << t.getDimSize(0) << " rows (dim 0), which do not split into "
               << m << " micro-batches";
      info.dim[arg] = 0;
      arg.setType(shrunk(t, 0, m));
    }
    Block &body = f.getBody().front();
    for (Operation &op : body.without_terminator())
      if (failed(follow(&op, info, m)))
        return failure();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<int64_t> results;
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      int64_t d = info.of(v);
      auto t = cast<RankedTensorType>(v.getType());
      if (d == attrs::kCombineMean && !isa<FloatType>(t.getElementType()))
        return f.emitOpError()
               << "result #" << i << " averages integers over the batch, "
               << "which micro-batches cannot combine exactly";
      results.push_back(d == kNone ? attrs::kCombineNone : d);
      results.push_back(info.blockOf(v));
    }
    attrs::setMicroBatch(f, results);
    f.setType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                ret.getOperandTypes()));
    if (failed(verify(f)))
      return f.emitOpError() << "does not verify at one micro-batch's size "
                                "(a constant or a shape that carries the "
                                "batch?)";
    return success();
  }

  /// The batch dim of `op`'s result from its operands', and the result's
  /// new type.
  LogicalResult follow(Operation *op, BatchInfo &info, int64_t m) {
    auto fail = [&](const Twine &why) {
      return op->emitOpError() << "cannot run as micro-batches: " << why;
    };
    if (isa<SetParamOp>(op))
      return fail("it stores a parameter; micro-batches split the forward "
                  "graph (with its loss), and the update comes after them");
    bool batched = false, reduced = false;
    for (Value v : op->getOperands()) {
      int64_t d = info.of(v);
      batched |= d >= 0;
      reduced |= d == attrs::kCombineMean || d == attrs::kCombineSum;
    }
    if (!batched && !reduced)
      return success();
    if (op->getNumResults() != 1)
      return fail("pc-micro-batch follows the batch through ops with one "
                  "result");
    if (batched && reduced)
      return fail("it combines batched values with a reduction over the "
                  "batch, which each micro-batch would compute over its own "
                  "rows");
    if (!batched)
      return followReduced(op, info, fail);
    Value r = op->getResult(0);
    auto rt = dyn_cast<RankedTensorType>(r.getType());
    std::optional<int64_t> out;
    auto agree = [&](int64_t d) -> LogicalResult {
      if (out && *out != d)
        return fail("its operands carry the batch in different dims");
      out = d;
      return success();
    };
    int64_t rank = rt.getRank();
    auto rankOf = [](Value v) {
      return cast<RankedTensorType>(v.getType()).getRank();
    };
    if (auto mm = dyn_cast<MatmulOp>(op)) {
      for (bool lhs : {true, false}) {
        Value v = lhs ? mm.getLhs() : mm.getRhs();
        int64_t d = info.of(v), n = rankOf(v);
        if (d < 0)
          continue;
        bool t = lhs ? mm.getTransposeLhs() : mm.getTransposeRhs();
        int64_t kept = lhs ? (t ? n - 1 : n - 2) : (t ? n - 2 : n - 1);
        int64_t contracted = lhs ? (t ? n - 2 : n - 1) : (t ? n - 1 : n - 2);
        if (d == contracted)
          return fail("it contracts the batch dim");
        int64_t to = d == kept ? (lhs ? rank - 2 : rank - 1) : d + rank - n;
        if (failed(agree(to)))
          return failure();
      }
      // The addend broadcasts to the result as an elementwise operand.
      if (Value addend = mm.getAddend())
        if (int64_t d = info.of(addend); d >= 0)
          if (failed(agree(d + rank - rankOf(addend))))
            return failure();
    } else if (isa<AddOp, SubOp, MulOp, DivOp, CompareOp, BroadcastToOp>(op)) {
      for (Value v : op->getOperands())
        if (int64_t d = info.of(v); d >= 0)
          if (failed(agree(d + rank - rankOf(v))))
            return failure();
    } else if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op)) {
      Value in = op->getOperand(0);
      int64_t d = info.of(in), n = rankOf(in);
      ArrayRef<int64_t> axes;
      bool keep = false;
      if (auto s = dyn_cast<ReduceSumOp>(op))
        axes = s.getAxes(), keep = s.getKeepdim();
      if (auto s = dyn_cast<ReduceMeanOp>(op))
        axes = s.getAxes(), keep = s.getKeepdim();
      if (auto s = dyn_cast<ReduceMaxOp>(op))
        axes = s.getAxes(), keep = s.getKeepdim();
      int64_t before = 0;
      bool overBatch = false;
      for (int64_t a : axes) {
        int64_t x = (a + n) % n;
        overBatch |= x == d;
        before += x < d;
      }
      if (overBatch) {
        if (isa<ReduceMaxOp>(op))
          return fail("a maximum over the batch does not combine from "
                      "micro-batches");
        info.dim[r] =
            isa<ReduceMeanOp>(op) ? attrs::kCombineMean : attrs::kCombineSum;
        return success();
      }
      out = keep ? d : d - before;
    } else if (auto tr = dyn_cast<TransposeOp>(op)) {
      int64_t d = info.of(tr.getInput());
      for (auto [i, p] : llvm::enumerate(tr.getPerm()))
        if (p == d)
          out = i;
    } else if (auto rs = dyn_cast<ReshapeOp>(op)) {
      // The batch stays the leading dim, each element's rows together:
      // [n, s, h] -> [n s, h] and back, never [n, s] -> [n / 2, 2 s].
      int64_t rows = rs.getInput().getType().getDimSize(0) * m;
      int64_t n = rows / info.blockOf(rs.getInput());
      if (info.of(rs.getInput()) != 0 || rank == 0 || n <= 0 ||
          rt.getDimSize(0) % n != 0)
        return fail("a reshape keeps the batch only as the leading dim, with "
                    "each batch element's rows together");
      out = 0;
      info.block[r] = rt.getDimSize(0) / n;
    } else if (auto sl = dyn_cast<SliceOp>(op)) {
      int64_t d = info.of(sl.getInput());
      auto shape = sl.getInput().getType().getShape();
      if (sl.getStart()[d] != 0 || sl.getLimit()[d] != shape[d] * m)
        return fail("it slices the batch dim");
      SmallVector<int64_t> limit(sl.getLimit());
      limit[d] /= m;
      sl.setLimit(limit);
      out = d;
    } else if (auto cat = dyn_cast<ConcatOp>(op)) {
      for (Value v : cat.getInputs()) {
        int64_t d = info.of(v);
        if (d < 0)
          return fail("it joins batched and unbatched values");
        if (failed(agree(d)))
          return failure();
      }
      if (*out == (cat.getAxis() + rank) % rank)
        return fail("it concatenates along the batch dim");
    } else if (auto emb = dyn_cast<EmbeddingOp>(op)) {
      if (info.of(emb.getTable()) >= 0)
        return fail("its table carries the batch");
      out = info.of(emb.getIds());
    } else if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
      int64_t d = info.of(ce.getLogits());
      if (d < 0)
        d = info.of(ce.getLabels());
      if (d == rankOf(ce.getLogits()) - 1)
        return fail("the batch is its class dim");
      out = d;
    } else if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp>(op)) {
      int64_t d = info.of(op->getOperand(0)), axis = 0, n = rankOf(r);
      if (auto s = dyn_cast<SoftmaxOp>(op))
        axis = s.getAxis();
      if (auto s = dyn_cast<LogSoftmaxOp>(op))
        axis = s.getAxis();
      if (auto s = dyn_cast<LayerNormOp>(op))
        axis = s.getAxis();
      if (auto s = dyn_cast<RmsNormOp>(op))
        axis = s.getAxis();
      axis = (axis + n) % n;
      bool whole = isa<LayerNormOp, RmsNormOp>(op) ? d >= axis : d == axis;
      if (whole || d < 0)
        return fail("it normalizes over the batch dim");
      if (auto s = dyn_cast<SoftmaxOp>(op); s && s.getCausal() && d == n - 2)
        return fail("its causal mask needs the batch dim (the queries) whole");
      out = d;
    } else if (isa<CausalMaskOp>(op) &&
               info.of(op->getOperand(0)) >= rankOf(r) - 2) {
      return fail("its mask needs the batch dim (a query or key dim) whole");
    } else if (sameShapeAsFirst(op, info, m)) {
      out = info.of(op->getOperand(0)); // elementwise, casts, masks
    } else {
      return fail("pc-micro-batch does not know how it carries the batch");
    }
    if (!out || *out < 0 || *out >= rank)
      return fail("its result does not carry the batch where expected");
    if (rt.getDimSize(*out) % m != 0)
      return fail(Twine("dim ") + Twine(*out) + " of its result (" +
                  Twine(rt.getDimSize(*out)) + ") does not split into " +
                  Twine(m) + " micro-batches");
    // Rows per batch element: the reshape's own, else that of the
    // operands that carry the batch to the same dim, which must agree.
    if (!isa<ReshapeOp>(op)) {
      std::optional<int64_t> block;
      for (Value v : op->getOperands())
        if (info.of(v) >= 0) {
          if (block && *block != info.blockOf(v))
            return fail("its operands group the batch's rows differently");
          block = info.blockOf(v);
        }
      if (block && *block != 1)
        info.block[r] = *block;
    }
    info.dim[r] = *out;
    r.setType(shrunk(rt, *out, m));
    return success();
  }

  /// A value computed from reductions over the batch (and values without
  /// the batch): micro-batches combine it by averaging or summing, which is
  /// exact only while it is linear in the reductions.
  template <typename Fail>
  LogicalResult followReduced(Operation *op, BatchInfo &info, Fail &fail) {
    Value r = op->getResult(0);
    SmallVector<int64_t> modes;
    for (Value v : op->getOperands())
      modes.push_back(info.of(v));
    auto isReduced = [](int64_t d) {
      return d == attrs::kCombineMean || d == attrs::kCombineSum;
    };
    int64_t mode = kNone;
    for (int64_t d : modes)
      if (isReduced(d))
        mode = d;
    if (isa<AddOp, SubOp>(op)) {
      for (int64_t d : modes) {
        if (isReduced(d) && d != mode)
          return fail("it adds an average over the batch to a sum over it");
        // Summed over micro-batches, a term without the batch would count
        // once per micro-batch.
        if (d == kNone && mode == attrs::kCombineSum)
          return fail("it adds a term without the batch to a sum over the "
                      "batch; micro-batches would count the term once each");
      }
    } else if (isa<MulOp, DivOp>(op)) {
      if (llvm::count_if(modes, isReduced) != 1 ||
          (isa<DivOp>(op) && !isReduced(modes[0])))
        return fail("it multiplies or divides by a reduction over the batch; "
                    "micro-batches combine reductions by averaging or "
                    "summing, which only linear ops preserve");
    } else if (!isa<NegOp, CastOp, ToSbpOp, ReshapeOp, BroadcastToOp,
                    ReduceSumOp, ReduceMeanOp>(op)) {
      return fail("it is not linear in a reduction over the batch; "
                  "micro-batches combine reductions by averaging or "
                  "summing, which only linear ops preserve");
    }
    info.dim[r] = mode;
    return success();
  }

  /// Whether `op`'s result has its (batched) first operand's whole shape:
  /// elementwise ops, casts, masks.
  static bool sameShapeAsFirst(Operation *op, const BatchInfo &info,
                               int64_t m) {
    if (op->getNumOperands() == 0 || info.of(op->getOperand(0)) < 0)
      return false;
    auto in = cast<RankedTensorType>(op->getOperand(0).getType());
    auto out = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<int64_t> whole(in.getShape());
    whole[info.of(op->getOperand(0))] *= m;
    return out.getShape() == ArrayRef<int64_t>(whole);
  }

  //===--- unroll ---------------------------------------------------------===//

  static bool isUnrolled(func::FuncOp f) {
    for (Operation &op : f.getBody().front())
      if (attrs::getAction(&op))
        return true;
    return false;
  }

  LogicalResult unroll(func::FuncOp f) {
    Block &old = f.getBody().front();
    if (isUnrolled(f))
      return success();
    PipelineAttr pipe = attrs::getPipeline(f);
    pipeline::ScheduleSpec spec = pipe.getSpec();
    int64_t m = spec.microBatches;
    std::optional<SmallVector<int64_t>> combineOf = attrs::getMicroBatch(f);
    if (m > 1 && !combineOf)
      return f.emitOpError() << "has " << m
                             << " micro-batches but was not "
                                "shrunk to one (run --pc-micro-batch="
                                "\"phase=shrink\" before --pc-autodiff)";
    bool split = pipeline::splitsBackward(spec.kind);
    // A graph without a backward pass (evaluation, inference) runs its
    // forwards alone: its schedule holds F actions only.
    if (spec.backward &&
        llvm::none_of(old.without_terminator(),
                      [](Operation &op) { return attrs::isBackward(&op); }))
      attrs::setPipeline(f, PipelineAttr::get(&getContext(), pipe.getSchedule(),
                                              spec.devices, m,
                                              spec.virtualStages, false));

    // B or W: a backward op is B when an activation's gradient depends on
    // it (it is one, or a B op uses its result).
    DenseSet<Operation *> inB;
    for (Operation &op : llvm::reverse(old.without_terminator()))
      if (attrs::isBackward(&op) &&
          (attrs::isInputGrad(&op) ||
           llvm::any_of(op.getUsers(),
                        [&](Operation *u) { return inB.contains(u); })))
        inB.insert(&op);
    auto kindOf = [&](Operation *op) {
      if (!attrs::isBackward(op))
        return PipelineActionKind::F;
      return split && !inB.contains(op) ? PipelineActionKind::W
                                        : PipelineActionKind::B;
    };
    auto stageOf = [](Operation *op) {
      return attrs::getStage(op).value_or(0);
    };

    // The new body: the whole batch in, shared reads, micro-batches, and
    // the combined results.
    Block *body = new Block();
    OpBuilder b(&getContext());
    b.setInsertionPointToStart(body);
    SmallVector<Value> args;
    for (BlockArgument arg : old.getArguments()) {
      Type t = arg.getType();
      auto r = dyn_cast<RankedTensorType>(t);
      if (m > 1 && r && r.getRank() > 0) {
        SmallVector<int64_t> shape(r.getShape());
        shape[0] *= m;
        t = RankedTensorType::get(shape, r.getElementType(), r.getEncoding());
      }
      args.push_back(body->addArgument(t, arg.getLoc()));
    }
    IRMapping shared;
    for (Operation &op : old.without_terminator())
      if (isa<GetParamOp, ConstantOp>(op))
        b.clone(op, shared);

    auto ret = cast<func::ReturnOp>(old.getTerminator());
    SmallVector<SmallVector<Value>> perMb(ret.getNumOperands());
    auto tag = [&](Operation *op, PipelineActionKind kind, int64_t stage,
                   int64_t mb) {
      attrs::setStage(op, stage);
      attrs::setAction(op, ActionAttr::get(&getContext(), kind, stage, mb));
    };
    // Each batched input, grouped once as [n/m, m, ...] (one copy for the
    // step, not one per micro-batch), on the stage of its first user.
    SmallVector<Value> grouped(args.size());
    SmallVector<int64_t> inputStage(args.size(), 0);
    for (auto [i, arg] : llvm::enumerate(old.getArguments())) {
      // An input nothing reads (the labels of a graph cut at its logits)
      // needs no micro-batches.
      if (args[i].getType() == arg.getType() || arg.use_empty())
        continue;
      bool any = false;
      for (Operation *u : arg.getUsers()) {
        inputStage[i] = any ? std::min(inputStage[i], stageOf(u)) : stageOf(u);
        any = true;
      }
      grouped[i] = groupMicroBatches(b, args[i], m);
      tag(grouped[i].getDefiningOp(), PipelineActionKind::F, inputStage[i], 0);
    }
    for (int64_t k = 0; k < m; ++k) {
      IRMapping map = shared;
      for (auto [i, arg] : llvm::enumerate(old.getArguments())) {
        if (!grouped[i]) {
          map.map(arg, args[i]);
          continue;
        }
        Value piece = takeMicroBatch(b, grouped[i], arg.getType(), k);
        for (Operation *o = piece.getDefiningOp(); o && !attrs::getAction(o);
             o = o->getNumOperands() ? o->getOperand(0).getDefiningOp()
                                     : nullptr)
          tag(o, PipelineActionKind::F, inputStage[i], k);
        map.map(arg, piece);
      }
      for (Operation &op : old.without_terminator()) {
        if (isa<GetParamOp, ConstantOp>(op))
          continue;
        Operation *clone = b.clone(op, map);
        tag(clone, kindOf(&op), stageOf(&op), k);
        clone->removeAttr(attrs::kBackward);
        clone->removeAttr(attrs::kInputGrad);
      }
      for (auto [i, v] : llvm::enumerate(ret.getOperands()))
        perMb[i].push_back(map.lookup(v));
    }

    // Per result, how micro-batches combine it (and its rows per batch
    // element); the loss's combination scales the gradients too.
    auto combineOfResult = [&](unsigned i) -> std::pair<int64_t, int64_t> {
      if (!combineOf || 2 * i + 1 >= combineOf->size())
        return {attrs::kCombineMean, 1};
      return {(*combineOf)[2 * i], (*combineOf)[2 * i + 1]};
    };
    int64_t lossMode = attrs::kCombineMean;
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      if (attrs::isLoss(f, i))
        lossMode = combineOfResult(i).first;
    SmallVector<Value> results;
    for (auto [i, values] : llvm::enumerate(perMb)) {
      auto [mode, block] = combineOfResult(i);
      if (attrs::getGrad(f, i)) {
        mode = lossMode;
        block = 1;
      }
      results.push_back(combineResults(b, values, mode, block, m, tag));
    }
    func::ReturnOp::create(b, ret.getLoc(), results);

    // Swap the bodies.
    old.dropAllDefinedValueUses();
    f.getBody().getBlocks().clear();
    f.getBody().push_back(body);
    f.setType(FunctionType::get(&getContext(), body->getArgumentTypes(),
                                body->getTerminator()->getOperandTypes()));
    attrs::clearMicroBatch(f);
    ++numUnrolled;
    return success();
  }

  /// `whole` (dim 0 of n rows) as [n/m, m, ...]: row r is [r / m, r % m].
  static Value groupMicroBatches(OpBuilder &b, Value whole, int64_t m) {
    auto w = cast<RankedTensorType>(whole.getType());
    SmallVector<int64_t> shape{w.getDimSize(0) / m, m};
    llvm::append_range(shape, w.getShape().drop_front());
    return ReshapeOp::create(b, whole.getLoc(),
                             RankedTensorType::get(shape, w.getElementType()),
                             whole);
  }

  /// Rows k, k + m, ... of the whole batch: index k of `grouped`'s dim 1,
  /// back to [n/m, ...] with the micro-batch's type.
  static Value takeMicroBatch(OpBuilder &b, Value grouped, Type micro,
                              int64_t k) {
    Location loc = grouped.getLoc();
    auto g = cast<RankedTensorType>(grouped.getType());
    SmallVector<int64_t> shape(g.getShape());
    SmallVector<int64_t> start(shape.size(), 0), limit(shape);
    start[1] = k;
    limit[1] = k + 1;
    shape[1] = 1;
    Value one = SliceOp::create(
        b, loc, RankedTensorType::get(shape, g.getElementType()), grouped,
        b.getDenseI64ArrayAttr(start), b.getDenseI64ArrayAttr(limit));
    return ReshapeOp::create(b, loc, micro, one);
  }

  /// One result from its micro-batches' values, in micro-batch order.
  template <typename Tag>
  Value combineResults(OpBuilder &b, ArrayRef<Value> values, int64_t mode,
                       int64_t block, int64_t m, Tag &tag) {
    // Without the batch, every micro-batch computes the same value.
    if (m == 1 || mode == attrs::kCombineNone)
      return values.front();
    auto actionOf = [](Value v) {
      Operation *def = v.getDefiningOp();
      return def ? attrs::getAction(def) : ActionAttr();
    };
    auto tagLike = [&](Operation *op, Value from, int64_t mb) {
      ActionAttr a = actionOf(from);
      tag(op, a ? a.getKind() : PipelineActionKind::F, a ? a.getStage() : 0,
          mb);
    };
    Location loc = values.front().getLoc();
    auto t = cast<RankedTensorType>(values.front().getType());
    if (mode >= 0) {
      // Back in batch order: each micro-batch's [.., n block, ..] as
      // [.., n, 1, block, ..], joined along the new dim, then
      // [.., n m block, ..].
      SmallVector<int64_t> shape(t.getShape());
      shape[mode] /= block;
      shape.insert(shape.begin() + mode + 1, {1, block});
      SmallVector<Value> pieces;
      for (auto [k, v] : llvm::enumerate(values)) {
        auto p = ReshapeOp::create(
            b, loc, RankedTensorType::get(shape, t.getElementType()), v);
        tagLike(p, v, k);
        pieces.push_back(p);
      }
      shape[mode + 1] = m;
      auto joined = ConcatOp::create(
          b, loc, RankedTensorType::get(shape, t.getElementType()), pieces,
          b.getI64IntegerAttr(mode + 1));
      tagLike(joined, values.back(), m - 1);
      SmallVector<int64_t> whole(t.getShape());
      whole[mode] *= m;
      auto out = ReshapeOp::create(
          b, loc,
          RankedTensorType::get(whole, t.getElementType(), t.getEncoding()),
          joined);
      tagLike(out, values.back(), m - 1);
      return out;
    }
    Value acc = values.front();
    for (int64_t k = 1; k < m; ++k) {
      auto add = AddOp::create(b, loc, acc, values[k]);
      tagLike(add, values[k], k);
      acc = add;
    }
    if (mode == attrs::kCombineMean && isa<FloatType>(t.getElementType())) {
      auto scalar = RankedTensorType::get({}, t.getElementType());
      auto scale = ConstantOp::create(
          b, loc, scalar,
          DenseElementsAttr::get(
              scalar, b.getFloatAttr(t.getElementType(), 1.0 / double(m))));
      auto mul = MulOp::create(b, loc, acc.getType(), acc, scale);
      tagLike(scale, values.back(), m - 1);
      tagLike(mul, values.back(), m - 1);
      acc = mul;
    }
    return acc;
  }
};

} // namespace

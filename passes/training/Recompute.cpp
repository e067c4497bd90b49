//===- Recompute.cpp - --pc-recompute -------------------------------------===//
//
// Activation checkpointing as a rewrite of the backward pass. A segment's
// forward values keep their forward users only; the backward pass reads
// copies made again from the values the segment starts from. The copies
// are gated with pc.after on the first gradient that reaches the segment:
// the runtime fires an op once its operands exist, so without the gate the
// copies would run during the forward pass and hold as much as before.
//
//===----------------------------------------------------------------------===//

#include "passes/training/Recompute.h"
#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringExtras.h"

namespace pc {
#define GEN_PASS_DEF_RECOMPUTE
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

DenseSet<Operation *> pc::forwardOps(func::FuncOp f) {
  DenseSet<Operation *> forward;
  Operation *ret = f.getBody().front().getTerminator();
  SmallVector<Value> work;
  for (auto [i, v] : llvm::enumerate(ret->getOperands()))
    if (attrs::isLoss(f, i))
      work.push_back(v);
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !forward.insert(def).second)
      continue;
    for (Value v : def->getOperands())
      work.push_back(v);
  }
  return forward;
}

namespace {

/// Ops that are only read, never recomputed: parameter reads and
/// constants cost nothing to keep.
bool isShared(Operation *op) { return isa<GetParamOp, ConstantOp>(op); }

/// The layer in a parameter's name: its parts up to the first with a digit
/// (`h0.attn.q` -> `h0`, `layers.3.mlp.fc` -> `layers.3`), or "" when none
/// has one.
std::string layerOf(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (auto [i, part] : llvm::enumerate(parts))
    if (llvm::any_of(part, llvm::isDigit))
      return llvm::join(ArrayRef(parts).take_front(i + 1), ".");
  return "";
}

} // namespace

SmallVector<SmallVector<Operation *>>
pc::layerSegments(func::FuncOp f, const DenseSet<Operation *> &forward) {
  bool userSegments = false;
  f.walk([&](Operation *op) {
    userSegments |= attrs::getSegment(op).has_value();
  });
  SmallVector<SmallVector<Operation *>> segments;
  std::optional<std::string> current;
  std::optional<int64_t> currentStage;
  for (Operation &op : f.getBody().front().without_terminator()) {
    if (isShared(&op))
      continue;
    // Backward work in between ends a run: with micro-batches, one
    // micro-batch's last layer is not the next one's first.
    if (!forward.contains(&op)) {
      current.reset();
      continue;
    }
    std::optional<std::string> key;
    if (userSegments) {
      if (std::optional<int64_t> s = attrs::getSegment(&op))
        key = "#" + std::to_string(*s);
    } else {
      for (Value v : op.getOperands())
        if (auto get = v.getDefiningOp<GetParamOp>()) {
          key = layerOf(get.getName());
          break;
        }
    }
    // A segment never spans pipeline stages: its copies run in one.
    std::optional<int64_t> stage = attrs::getStage(&op);
    if (!current || (key && *key != *current) || stage != currentStage) {
      segments.emplace_back();
      current = key.value_or(current.value_or(""));
      currentStage = stage;
    }
    segments.back().push_back(&op);
  }
  return segments;
}

SmallVector<SmallVector<Operation *>>
pc::attentionCores(func::FuncOp f, const DenseSet<Operation *> &forward) {
  SmallVector<SmallVector<Operation *>> cores;
  f.walk([&](SoftmaxOp softmax) {
    if (!forward.contains(softmax) ||
        llvm::none_of(softmax->getUsers(),
                      [](Operation *u) { return isa<MatmulOp>(u); }))
      return;
    SmallVector<Operation *> core{softmax};
    ArrayRef<int64_t> scores = softmax.getType().getShape();
    Operation *op = softmax;
    while (!isa<MatmulOp>(op)) {
      Operation *next = nullptr;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && cast<RankedTensorType>(v.getType()).getShape() == scores &&
            forward.contains(def) && !isShared(def)) {
          next = def;
          break;
        }
      if (!next)
        break;
      core.push_back(next);
      op = next;
    }
    std::reverse(core.begin(), core.end());
    cores.push_back(std::move(core));
  });
  return cores;
}

namespace {

struct RecomputePass : public pc::impl::RecomputeBase<RecomputePass> {
  using RecomputeBase::RecomputeBase;

  void runOnOperation() override {
    if (mode != "full" && mode != "selective") {
      getOperation().emitError()
          << "--pc-recompute: mode is full or selective, not '" << mode << "'";
      return signalPassFailure();
    }
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      if (f.isExternal() || attrs::getGraph(f))
        continue;
      DenseSet<Operation *> forward = forwardOps(f);
      if (forward.empty())
        continue;
      auto segments = mode == "full" ? layerSegments(f, forward)
                                     : attentionCores(f, forward);
      DenseSet<Operation *> inAny;
      for (ArrayRef<Operation *> segment : segments)
        inAny.insert(segment.begin(), segment.end());
      // Last segment first: the backward pass meets them in that order, and
      // each waits for the readers of the copies before it (`previous`).
      SmallVector<Value> previous;
      for (ArrayRef<Operation *> segment : llvm::reverse(segments))
        recompute(f, segment, forward, inAny, previous);
    }
  }

  /// Gives `segment`'s backward users copies of its values.
  void recompute(func::FuncOp f, ArrayRef<Operation *> segment,
                 const DenseSet<Operation *> &forward,
                 const DenseSet<Operation *> &inAny,
                 SmallVectorImpl<Value> &previous) {
    Operation *ret = f.getBody().front().getTerminator();
    DenseSet<Operation *> inSegment(segment.begin(), segment.end());
    // Backward readers in the segment's pipeline stage; one in a later
    // stage reads the value sent there in the forward pass, which stays.
    std::optional<int64_t> stage = attrs::getStage(segment.front());
    // A value a later segment's forward ops read is a checkpoint: it is
    // kept anyway, so the backward pass reads it, not a copy (which would
    // start this segment's recomputation during the later one's backward).
    auto isCheckpoint = [&](Value v) {
      return llvm::any_of(v.getUsers(), [&](Operation *u) {
        return inAny.contains(u) && !inSegment.contains(u);
      });
    };
    auto isBackwardUse = [&](OpOperand &use) {
      Operation *user = use.getOwner();
      return user != ret && !forward.contains(user) &&
             !attrs::isRecompute(user) && attrs::getStage(user) == stage &&
             !isCheckpoint(use.get());
    };
    // The first backward op that reads the segment: the copies go before
    // it. The loss's segment has its backward pass right after it, and
    // a segment nothing backward reads needs no copies.
    Operation *first = nullptr;
    for (Operation *op : segment) {
      for (Value r : op->getResults())
        for (OpOperand &use : r.getUses())
          if (isBackwardUse(use) &&
              (!first || use.getOwner()->isBeforeInBlock(first)))
            first = use.getOwner();
    }
    if (!first || backwardFollows(segment, first, forward))
      return;
    auto [gate, gateLayout] = gateFor(first, forward);
    ActionAttr action = earliestAction(segment, isBackwardUse);
    auto mark = [&](Operation *op) {
      attrs::setRecompute(op);
      if (action)
        attrs::setAction(op, action);
    };
    OpBuilder b(first);
    // `input` through pc.after `dep`, in layout `layout` (the input's own
    // when null), reading `dep` in `depLayout`; layouts only once
    // propagation has given them.
    auto after = [&](Value input, Attribute layout, Value dep,
                     Attribute depLayout) -> Value {
      auto a = AfterOp::create(b, input.getLoc(), input, dep);
      a.getResult().setType(
          layout ? withSbp(input.getType(), cast<SbpAttr>(layout))
                 : cast<RankedTensorType>(input.getType()));
      if (depLayout)
        attrs::setOperandSbps(
            a, b.getArrayAttr(
                   {layout ? layout : Attribute(getSbp(input.getType())),
                    depLayout}));
      mark(a);
      return a;
    };
    // The copies also wait until the previous segment's copies have been
    // read: one segment's recomputed values at a time, whatever order the
    // runtime takes ready ops in (it would start this recomputation as soon
    // as the gradient exists, while weight gradients of the previous
    // segment still hold its copies).
    if (gate)
      for (Value r : previous) {
        Operation *def = r.getDefiningOp();
        // Only readers of this segment's action: under zb-h1 a W reader
        // runs after the B action the copies belong to.
        if (r == gate || !def->isBeforeInBlock(first) ||
            attrs::getStage(def) != stage || attrs::getAction(def) != action)
          continue;
        gate = after(gate, gateLayout, r,
                     gateLayout ? Attribute(getSbp(r.getType())) : Attribute());
      }

    // After SBP propagation the copies take their originals' layouts; each
    // checkpoint is read in the layout its reader wants, so boxing reuses
    // the forward pass's moves (between stages too) for it.
    IRMapping map;
    DenseMap<std::pair<Value, Attribute>, Value> gated;
    // The ops to copy: those the backward pass reads, and what they are
    // made from within the segment, back to its checkpoints (read as they
    // are).
    DenseSet<Operation *> needed;
    SmallVector<Operation *> work;
    for (Operation *op : segment)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUses(), isBackwardUse))
          work.push_back(op);
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!needed.insert(op).second)
        continue;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && inSegment.contains(def) && !isCheckpoint(v))
          work.push_back(def);
    }
    for (Operation *op : segment) {
      if (!needed.contains(op))
        continue;
      ArrayAttr wants = attrs::getOperandSbps(op);
      SmallVector<Value> operands;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        Operation *def = v.getDefiningOp();
        if (map.contains(v) || !gate || (def && isa<ConstantOp>(def))) {
          operands.push_back(map.lookupOrDefault(v));
          continue;
        }
        Attribute want = wants ? wants[i] : Attribute();
        Value &copied = gated[{v, want}];
        if (!copied) {
          // A weight ZeRO-3 gathers for the forward pass is gathered again
          // for the copies, not kept from the forward pass.
          GetParamOp get;
          auto gather = v.getDefiningOp<ToSbpOp>();
          if (gather) {
            Value in = gather.getInput();
            if (auto a = in.getDefiningOp<AfterOp>())
              in = a.getInput();
            get = in.getDefiningOp<GetParamOp>();
          }
          Attribute depLayout = wants ? gateLayout : Attribute();
          if (get) {
            Value shard = after(get, {}, gate, depLayout);
            Operation *regather =
                ToSbpOp::create(b, v.getLoc(), gather.getType(), shard);
            mark(regather);
            copied = regather->getResult(0);
          } else {
            copied = after(v, want, gate, depLayout);
          }
        }
        operands.push_back(copied);
      }
      Operation *copy = b.clone(*op, map);
      copy->setOperands(operands);
      copy->removeAttr(attrs::kSegment);
      mark(copy); // clone() mapped its results
      ++numRecomputed;
    }
    for (Operation *op : needed)
      for (Value r : op->getResults())
        r.replaceUsesWithIf(map.lookup(r),
                            [&](OpOperand &use) { return isBackwardUse(use); });
    // What the next segment's copies wait for: the backward readers of
    // these copies.
    previous.clear();
    for (Operation *op : needed)
      for (Value r : map.lookup(op->getResult(0)).getDefiningOp()->getResults())
        for (Operation *user : r.getUsers())
          if (!attrs::isRecompute(user) && user->getNumResults() == 1 &&
              isa<RankedTensorType>(user->getResult(0).getType()) &&
              !llvm::is_contained(previous, user->getResult(0)))
            previous.push_back(user->getResult(0));
    ++numSegments;
  }

  /// In a pipelined graph, the action the copies belong to: that of their
  /// earliest reader (B before W, under zb-h1), so that every reader runs
  /// after them.
  template <typename Pred>
  static ActionAttr earliestAction(ArrayRef<Operation *> segment,
                                   Pred isBackwardUse) {
    ActionAttr best;
    for (Operation *op : segment)
      for (Value r : op->getResults())
        for (OpOperand &use : r.getUses())
          if (ActionAttr a = attrs::getAction(use.getOwner());
              a && isBackwardUse(use) &&
              (!best || a.getKind() < best.getKind()))
            best = a;
    return best;
  }

  /// Whether the backward pass reaches `segment` right after it, with no
  /// other forward work in between: then recomputing it saves nothing.
  static bool backwardFollows(ArrayRef<Operation *> segment, Operation *first,
                              const DenseSet<Operation *> &forward) {
    if (first->isBeforeInBlock(segment.back()))
      return true;
    for (Operation *op = segment.back()->getNextNode(); op && op != first;
         op = op->getNextNode())
      if (forward.contains(op) && !isShared(op) &&
          !llvm::is_contained(segment, op))
        return false;
    return true;
  }

  /// What the copies wait for, and the layout to read it in: a backward
  /// value `first` reads (the gradient arriving at the segment), else the
  /// last backward value made before it; null when the backward pass has
  /// made nothing yet.
  static std::pair<Value, Attribute>
  gateFor(Operation *first, const DenseSet<Operation *> &forward) {
    ArrayAttr wants = attrs::getOperandSbps(first);
    for (auto [i, v] : llvm::enumerate(first->getOperands()))
      if (Operation *def = v.getDefiningOp();
          def && !forward.contains(def) && !isShared(def))
        return {v, wants ? wants[i] : Attribute(getSbp(v.getType()))};
    for (Operation *op = first->getPrevNode(); op; op = op->getPrevNode())
      if (!forward.contains(op) && !isShared(op) && op->getNumResults() == 1 &&
          attrs::getStage(op) == attrs::getStage(first)) {
        Value v = op->getResult(0);
        return {v, getSbp(v.getType())};
      }
    return {};
  }
};

} // namespace

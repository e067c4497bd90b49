//===- MemoryPlan.cpp - --pc-memory-plan ----------------------------------===//
//
// Predicts each per-device program's peak device memory by replaying its
// allocations in the order the runtime runs it, the way the executor makes
// and drops tensors:
//  - the stored pieces of parameters and optimizer state are live from the
//    start; a pc.set_param's value is kept to the end beside the old piece
//    (a step is a transaction: the session keeps the pieces it began with
//    until the run succeeds), or, under in-place updates, an old piece
//    that is stored over goes after its last reader;
//  - inputs are uploaded before the first op and go after their last use;
//    constants are made once, when the program is bound, and stay;
//  - every other result is allocated when its op runs and freed after its
//    last use, except views: a reshape shares its operand's memory, and a
//    collective over mesh axes of one member passes its operand on;
//  - results are kept to the end (they are downloaded).
// The order is the runtime's: an op runs once its operands are made, ready
// ops first come, first served, and the ordered ones (communication, and
// in a pipelined program every op, by its schedule's actions) in their
// order. It predicts one step run on its own; steps that overlap as
// iterations of one run hold more (docs/memory.md), which is why a budget
// runs one step per run.
//
//===----------------------------------------------------------------------===//

#include "passes/partition/MemoryPlan.h"

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>

namespace pc {
#define GEN_PASS_DEF_MEMORYPLAN
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

enum class Kind {
  Parameters,
  Gradients,
  OptimizerState,
  Activations,
  Workspace
};

int64_t bytesOf(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  if (!r)
    return 0;
  return r.getNumElements() * ((r.getElementTypeBitWidth() + 7) / 8);
}

/// What parameter `name` holds, as `at` sees it: optimizer state or weights.
Kind kindOfParam(Operation *at, FlatSymbolRefAttr name) {
  auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(at, name);
  return param && attrs::isOptimizerState(param) ? Kind::OptimizerState
                                                 : Kind::Parameters;
}

/// MemoryUse's field of each kind, in Kind's order.
constexpr int64_t attrs::MemoryUse::*kFieldOf[] = {
    &attrs::MemoryUse::parameters, &attrs::MemoryUse::gradients,
    &attrs::MemoryUse::optimizerState, &attrs::MemoryUse::activations,
    &attrs::MemoryUse::workspace};

/// Whether the runtime gives `op`'s result its operand's memory. A select
/// passes on one of its inputs: the plan takes it for `on_true` (the new
/// value of a step that is applied); a skipped step passes on its
/// `on_false`, a stored piece held anyway, and uses less.
Value viewed(Operation *op) {
  if (isa<ReshapeOp, AfterOp>(op))
    return op->getOperand(0);
  if (auto select = dyn_cast<SelectOp>(op))
    return select.getOnTrue();
  // A collective over a group of one.
  if (op->getNumOperands() != 1 || op->getNumResults() != 1 ||
      op->getOperand(0).getType() != op->getResult(0).getType())
    return {};
  auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
  if (!mesh || !axes)
    return {};
  auto m = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, mesh);
  if (!m)
    return {};
  int64_t members = 1;
  for (int64_t a : axes.asArrayRef()) {
    if (a < 0 || a >= static_cast<int64_t>(m.getShape().size()))
      return {};
    members *= m.getShape()[a];
  }
  return members == 1 ? op->getOperand(0) : Value();
}

bool isView(Operation *op) { return static_cast<bool>(viewed(op)); }

/// What each op's results are for: the optimizer's work (it reads
/// optimizer state or the learning rate), the forward pass (the loss
/// depends on it; in a pipelined program, an F action; or pc-recompute made
/// it again) or the backward.
struct Roles {
  DenseSet<Operation *> update, forward;
};

Roles rolesOf(func::FuncOp f) {
  Roles roles;
  Block &body = f.getBody().front();
  Operation *ret = body.getTerminator();
  roles.update = optimizerOps(f);
  bool scheduled = attrs::getSchedule(f).has_value();
  if (scheduled) {
    for (Operation &op : body.without_terminator())
      if (ActionAttr a = attrs::getAction(&op);
          (a && a.getKind() == PipelineActionKind::F) ||
          attrs::isRecompute(&op))
        roles.forward.insert(&op);
    return roles;
  }
  // The loss's ancestors; without a loss (a forward program) every op.
  SmallVector<Value> work;
  for (auto [i, v] : llvm::enumerate(ret->getOperands()))
    if (attrs::isLoss(f, i))
      work.push_back(v);
  if (work.empty()) {
    for (Operation &op : body.without_terminator())
      roles.forward.insert(&op);
    return roles;
  }
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !roles.forward.insert(def).second)
      continue;
    for (Value v : def->getOperands())
      work.push_back(v);
  }
  // Forward values made again for the backward pass (pc-recompute).
  for (Operation &op : body.without_terminator())
    if (attrs::isRecompute(&op))
      roles.forward.insert(&op);
  return roles;
}

/// The bytes of f32 temporaries `op` makes on the CPU backend beyond its
/// results: a compute op on 16-bit floats runs widened, on f32 copies of
/// its 16-bit operands into f32 results, then rounds those to its result
/// types. The most at once is the wide operands with the f32 results, or
/// the f32 results with the rounded ones (which are the op's own results).
int64_t wideningBytes(Operation *op) {
  if (isCommOp(op) || isa<GetParamOp, SetParamOp, ConstantOp, CastOp, ReshapeOp,
                          AfterOp, SelectOp, TransposeOp, BroadcastToOp,
                          SliceOp, ConcatOp, ToSbpOp, PieceOffsetOp>(op))
    return 0;
  auto isHalf = [](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && (r.getElementType().isF16() || r.getElementType().isBF16());
  };
  int64_t wideIn = 0, f32Out = 0, narrowOut = 0;
  for (Type t : op->getOperandTypes())
    if (isHalf(t))
      wideIn += 2 * bytesOf(t);
  for (Type t : op->getResultTypes())
    if (isHalf(t)) {
      f32Out += 2 * bytesOf(t);
      narrowOut += bytesOf(t);
    }
  if (wideIn == 0 && f32Out == 0)
    return 0;
  return std::max(wideIn + f32Out, f32Out + narrowOut) - narrowOut;
}

} // namespace

SmallVector<Operation *> pc::runOrder(func::FuncOp f, ReadyPick pick) {
  Block &body = f.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  // The ordered ops, in their order.
  SmallVector<Operation *> ordered;
  if (std::optional<SmallVector<ActionAttr>> schedule = attrs::getSchedule(f)) {
    DenseMap<Attribute, SmallVector<Operation *>> ofAction;
    for (Operation *op : ops)
      if (ActionAttr a = attrs::getAction(op))
        ofAction[a].push_back(op);
    for (ActionAttr a : *schedule)
      ordered.append(ofAction[a]);
  } else {
    for (Operation *op : ops)
      if (isCommOp(op))
        ordered.push_back(op);
  }
  DenseMap<Operation *, int64_t> waiting; // operands not yet made
  DenseMap<Operation *, size_t> place;    // in `ordered`
  for (auto [i, op] : llvm::enumerate(ordered))
    place[op] = i;
  for (Operation *op : ops)
    for (Value v : op->getOperands())
      waiting[op] += v.getDefiningOp() != nullptr;
  size_t nextOrdered = 0;
  std::deque<Operation *> ready;
  SmallVector<Operation *> offerLater; // the next ordered op, once it is
  DenseSet<Operation *> queued;
  auto offer = [&](Operation *op) {
    if (waiting[op] > 0 || queued.contains(op))
      return;
    auto p = place.find(op);
    if (p != place.end() && p->second != nextOrdered)
      return;
    queued.insert(op);
    ready.push_back(op);
    if (p != place.end()) {
      ++nextOrdered;
      if (nextOrdered < ordered.size())
        offerLater.push_back(ordered[nextOrdered]);
    }
  };
  SmallVector<Operation *> order;
  for (Operation *op : ops)
    offer(op);
  while (!ready.empty() || !offerLater.empty()) {
    // The next ordered op may have become offerable.
    while (!offerLater.empty()) {
      Operation *op = offerLater.pop_back_val();
      offer(op);
    }
    if (ready.empty())
      break;
    auto next = ready.begin();
    if (pick == ReadyPick::FirstInProgram)
      next = llvm::min_element(ready, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
    if (pick == ReadyPick::CommunicationLast)
      if (auto compute =
              llvm::find_if(ready, [](Operation *op) { return !isCommOp(op); });
          compute != ready.end())
        next = compute;
    Operation *op = *next;
    ready.erase(next);
    order.push_back(op);
    // Its users, told in program order (as the runtime's consumers are).
    SmallVector<Operation *> users;
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers())
        if (user->getBlock() == &body && !isa<func::ReturnOp>(user)) {
          --waiting[user];
          users.push_back(user);
        }
    llvm::sort(users, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *user : users)
      offer(user);
  }
  // Anything the replay could not reach (a malformed order) keeps its
  // program place, after the rest.
  if (order.size() < ops.size())
    for (Operation *op : ops)
      if (!queued.contains(op))
        order.push_back(op);
  return order;
}

namespace {

/// One buffer: its bytes, what it is, and how many uses are left.
struct Buffer {
  int64_t bytes = 0;
  Kind kind = Kind::Activations;
  int64_t uses = 0;
  bool kept = false; // a stored piece, a constant or a result
  bool live = true;
  bool host = false; // in host memory (pc-offload): not the device's
};

class Replay {
public:
  Replay(func::FuncOp f, bool inPlaceUpdates, ReadyPick pick)
      : f(f), roles(rolesOf(f)), inPlaceUpdates(inPlaceUpdates), pick(pick) {
    // The values that become stored pieces (through views), and as what.
    f.walk([&](SetParamOp set) {
      Value v = set.getValue();
      for (Operation *def = v.getDefiningOp(); def && isView(def);
           def = v.getDefiningOp())
        v = viewed(def);
      storedAs[v] = kindOfParam(set, set.getNameAttr());
      storedOver.insert(set.getNameAttr().getAttr());
    });
  }

  attrs::MemoryUse run() {
    Block &body = f.getBody().front();
    Operation *ret = body.getTerminator();
    // The stored pieces, the inputs and the constants come first.
    for (Operation &op : body.without_terminator())
      if (auto get = dyn_cast<GetParamOp>(op))
        bufferOf[get.getResult()] = storedPiece(get.getNameAttr(), get);
      else if (isa<ConstantOp, PieceOffsetOp>(op))
        bufferOf[op.getResult(0)] =
            add({bytesOf(op.getResult(0).getType()), Kind::Workspace, 0, true});
    for (BlockArgument arg : f.getArguments())
      bufferOf[arg] = add({bytesOf(arg.getType()), Kind::Activations, 0});
    // Their readers; other buffers count theirs when they are made.
    for (Operation &op : body.without_terminator())
      for (Value v : op.getOperands())
        if (auto it = bufferOf.find(v); it != bufferOf.end())
          ++buffers[it->second].uses;
    // In place, a piece that is stored over goes after its last reader:
    // the session lets go of it once every read of it has fired.
    if (inPlaceUpdates)
      for (auto [name, b] : pieceOf)
        if (storedOver.contains(name))
          buffers[b].kept = false;
    note();
    for (Operation *op : runOrder(f, pick)) {
      allocate(op);
      // Results are downloaded at the end: kept.
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *u) { return u == ret; }))
          buffers[bufferOf.lookup(r)].kept = true;
      note();
      release(op);
    }
    best.activationsPeak = activationsPeak;
    best.hostPeak = hostPeak;
    return best;
  }

private:
  size_t add(Buffer b) {
    buffers.push_back(b);
    if (b.host) {
      hostNow += b.bytes;
      hostPeak = std::max(hostPeak, hostNow);
    } else {
      now += b.bytes;
      if (b.kind == Kind::Activations)
        activations += b.bytes;
    }
    return buffers.size() - 1;
  }

  /// The buffer of parameter `name`'s stored piece (one per parameter).
  size_t storedPiece(FlatSymbolRefAttr name, Operation *reader) {
    auto it = pieceOf.find(name.getAttr());
    if (it != pieceOf.end())
      return it->second;
    auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(reader, name);
    size_t b =
        add({bytesOf(reader->getResult(0).getType()), kindOfParam(reader, name),
             0, true, true, param && attrs::isHost(param)});
    pieceOf[name.getAttr()] = b;
    return b;
  }

  void allocate(Operation *op) {
    if (isa<GetParamOp, ConstantOp, PieceOffsetOp>(op))
      return;
    if (auto set = dyn_cast<SetParamOp>(op)) {
      // The value becomes the stored piece once the step succeeds. Until
      // then the old piece stays too: a step is a transaction (a failed
      // step stores nothing), so the session holds the pieces it began
      // with until the run ends.
      size_t value = bufferOf.lookup(set.getValue());
      if (buffers[value].kind == Kind::Activations && buffers[value].live &&
          !buffers[value].host)
        activations -= buffers[value].bytes;
      buffers[value].kind = kindOfParam(op, set.getNameAttr());
      buffers[value].kept = true;
      return;
    }
    if (isView(op)) {
      size_t b = bufferOf.lookup(viewed(op));
      bufferOf[op->getResult(0)] = b;
      buffers[b].uses += usesOf(op->getResult(0));
      return;
    }
    Kind kind = roles.update.contains(op)    ? Kind::Workspace
                : gathersWeight(op)          ? Kind::Parameters
                : roles.forward.contains(op) ? Kind::Activations
                                             : Kind::Gradients;
    for (Value r : op->getResults()) {
      // A new weight or new state counts as one from the start.
      auto stored = storedAs.find(r);
      size_t b = add({bytesOf(r.getType()),
                      stored != storedAs.end() ? stored->second : kind,
                      usesOf(r), false, true, attrs::isHost(op)});
      bufferOf[r] = b;
    }
    if (int64_t wide = wideningBytes(op))
      transient =
          add({wide, Kind::Workspace, 0, false, true, attrs::isHost(op)});
  }

  /// Whether `op` gathers a model weight stored sharded (ZeRO-3): a
  /// collective whose input is a parameter read, through views.
  /// Under offload, the shard's copy to the device, and its gather, count
  /// as parameters too.
  static bool gathersWeight(Operation *op) {
    if (!(isCommOp(op) || isa<CopyOp>(op)) || op->getNumOperands() != 1)
      return false;
    Value v = op->getOperand(0);
    for (Operation *def = v.getDefiningOp();
         def && (isView(def) || isa<CopyOp>(def)); def = v.getDefiningOp())
      v = isView(def) ? viewed(def) : def->getOperand(0);
    auto get = v.getDefiningOp<GetParamOp>();
    return get && kindOfParam(get, get.getNameAttr()) == Kind::Parameters;
  }

  int64_t usesOf(Value v) {
    int64_t n = 0;
    for (OpOperand &u : v.getUses())
      n += !isa<func::ReturnOp>(u.getOwner());
    return n;
  }

  void release(Operation *op) {
    if (transient) {
      drop(*transient);
      transient.reset();
    }
    for (Value v : op->getOperands())
      if (auto it = bufferOf.find(v); it != bufferOf.end()) {
        --buffers[it->second].uses;
        drop(it->second);
      }
    // Results nothing reads go at once.
    for (Value r : op->getResults())
      if (auto it = bufferOf.find(r); it != bufferOf.end())
        drop(it->second);
  }

  void drop(size_t b) {
    Buffer &buf = buffers[b];
    if (buf.live && !buf.kept && buf.uses <= 0) {
      buf.live = false;
      if (buf.host) {
        hostNow -= buf.bytes;
      } else {
        now -= buf.bytes;
        if (buf.kind == Kind::Activations)
          activations -= buf.bytes;
      }
    }
  }

  void note() {
    activationsPeak = std::max(activationsPeak, activations);
    if (now <= best.peak && best.peak > 0)
      return;
    best = {};
    best.peak = now;
    for (const Buffer &b : buffers)
      if (b.live && !b.host)
        best.*kFieldOf[static_cast<int>(b.kind)] += b.bytes;
  }

  func::FuncOp f;
  Roles roles;
  bool inPlaceUpdates;
  ReadyPick pick;
  DenseMap<Value, Kind> storedAs;
  /// The parameters a pc.set_param stores.
  DenseSet<Attribute> storedOver;
  std::vector<Buffer> buffers;
  // Live activation bytes, and their most at any point (which the
  // activation formulas describe, wherever the overall peak falls).
  int64_t activations = 0, activationsPeak = 0;
  DenseMap<Value, size_t> bufferOf;
  DenseMap<Attribute, size_t> pieceOf;
  int64_t now = 0;
  // Host memory (pc-offload), outside the device's budget.
  int64_t hostNow = 0, hostPeak = 0;
  attrs::MemoryUse best;
  /// The running op's widening temporaries (wideningBytes).
  std::optional<size_t> transient;
};

struct MemoryPlanPass : public pc::impl::MemoryPlanBase<MemoryPlanPass> {
  using MemoryPlanBase::MemoryPlanBase;

  void runOnOperation() override {
    bool failedBudget = false;
    forEachGraph(getOperation(), [&](func::FuncOp f) {
      if (!attrs::getGraph(f))
        return;
      attrs::MemoryUse use = predictMemory(f, inPlaceUpdates);
      attrs::setMemoryUse(f, use);
      ++numPrograms;
      if (report)
        llvm::outs() << "@" << f.getSymName() << " (" << ranksText(f)
                     << "): " << describeMemory(use) << "\n";
      if (deviceMemory > 0 && use.peak > deviceMemory) {
        f.emitOpError() << "@" << f.getSymName() << " needs "
                        << formatBytes(use.peak) << " on " << ranksText(f)
                        << " (" << describeMemory(use)
                        << "), more than the device memory of "
                        << formatBytes(deviceMemory);
        failedBudget = true;
      }
    });
    if (failedBudget)
      signalPassFailure();
  }
};

} // namespace

attrs::MemoryUse pc::predictMemory(func::FuncOp program, bool inPlaceUpdates) {
  auto larger = [](attrs::MemoryUse a, attrs::MemoryUse b) {
    return b.peak > a.peak ? b : a;
  };
  // The communication stream keeps up, or falls as far behind as the
  // program lets it (a collective's members wait for each other while the
  // compute stream goes on, and what the collectives would free waits with
  // them): the larger of the two, as either can happen.
  attrs::MemoryUse kept =
      larger(Replay(program, false, ReadyPick::FirstReady).run(),
             Replay(program, false, ReadyPick::CommunicationLast).run());
  if (!inPlaceUpdates)
    return kept;
  // In place, the peak falls amid the backward pass and the updates, where
  // it also depends on which of the ops ready at once runs first (on when
  // the collectives' results come, on the kernels' times): the larger over
  // the ways the runtime's dispatcher picks.
  attrs::MemoryUse use =
      larger(larger(Replay(program, true, ReadyPick::FirstReady).run(),
                    Replay(program, true, ReadyPick::FirstInProgram).run()),
             Replay(program, true, ReadyPick::CommunicationLast).run());
  // Capped by the transaction's replay: in the same order the transaction
  // holds all that in place holds, and its peak (mostly at the step's end)
  // moves little with the order. (A pipelined program's program-first
  // order ran forwards early and came out above the transaction's.)
  return kept.peak < use.peak ? kept : use;
}

std::string pc::formatBytes(int64_t bytes) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (bytes < 1024)
    os << bytes << " B";
  else if (bytes < (int64_t(1) << 20))
    os << llvm::format("%.1f KiB", bytes / 1024.0);
  else if (bytes < (int64_t(1) << 30))
    os << llvm::format("%.1f MiB", bytes / double(1 << 20));
  else
    os << llvm::format("%.2f GiB", bytes / double(int64_t(1) << 30));
  return out;
}

std::string pc::describeMemory(const attrs::MemoryUse &use) {
  return "peak " + formatBytes(use.peak) + ": parameters " +
         formatBytes(use.parameters) + ", gradients " +
         formatBytes(use.gradients) + ", optimizer state " +
         formatBytes(use.optimizerState) + ", activations " +
         formatBytes(use.activations) + ", workspace " +
         formatBytes(use.workspace) +
         (use.hostPeak ? "; host memory " + formatBytes(use.hostPeak) : "");
}

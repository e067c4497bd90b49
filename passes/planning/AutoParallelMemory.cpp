//===- AutoParallelMemory.cpp - pc-auto-parallel's memory model ---------===//
//
// How many bytes a choice of layouts needs per device, for the budget
// (--pc-auto-parallel's device-memory): a replay of each graph in the
// runtime's order (runOrder), as pc-memory-plan replays the per-device
// programs that come of it - parameters and their state throughout, inputs
// until their last read, every result from its op to its last reader, a
// value converted to another layout from its first reader in that layout
// to its last, and each gradient's update making the new weight and state
// beside the old (a step is a transaction, docs/memory.md; in place, the
// old goes after its last reader). The solver prices memory per node
// (Node::priced, and keptBytes for converted copies the backward reads);
// this replay is what a plan is held to.
//
//===----------------------------------------------------------------------===//

#include "passes/planning/AutoParallelPlanner.h"

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/partition/MemoryPlan.h"
#include "passes/training/Recompute.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace pc;
using namespace pc::autoparallel;

double pc::autoparallel::localBytes(Type type, ArrayRef<SbpEntry> entries,
                                    ArrayRef<int64_t> meshShape) {
  auto t = cast<RankedTensorType>(type);
  double bytes = double(t.getNumElements()) * double(elementBytes(type));
  for (auto [axis, e] : llvm::enumerate(entries))
    if (e.isSplit())
      bytes /= double(meshShape[axis]);
  return bytes;
}

void Planner::findBackward() {
  // A pipelined graph marks its backward (pc-autodiff, for the schedule's
  // B and W); in any other training graph the backward is what the loss
  // does not depend on (before pc-optimizer, nothing else is left).
  forEachGraph(module, [&](func::FuncOp f) {
    Block &body = f.getBody().front();
    if (attrs::getPipeline(f)) {
      for (Operation &op : body.without_terminator())
        if (attrs::isBackward(&op))
          backwardOps.insert(&op);
      return;
    }
    bool trains = llvm::any_of(llvm::seq(f.getNumResults()), [&](unsigned i) {
      return static_cast<bool>(attrs::getGrad(f, i));
    });
    DenseSet<Operation *> forward = forwardOps(f);
    if (!trains || forward.empty())
      return;
    for (Operation &op : body.without_terminator())
      if (!forward.contains(&op))
        backwardOps.insert(&op);
  });
}

bool Planner::savedForBackward(Value v) {
  return llvm::any_of(v.getUsers(),
                      [&](Operation *u) { return isBackward(u); });
}

bool Planner::differs(SbpAttr have, SbpAttr want) {
  if (have == want)
    return false;
  if (have.getMesh() != want.getMesh())
    return true;
  return !sameLayout(have, want, meshes.lookup(want.getMesh()).getShape());
}

std::vector<double> Planner::keptBytes(const EdgeSpec &e,
                                       ArrayRef<SbpAttr> wants) {
  // A forward op's operand converted to another layout, where the
  // backward reads the value too: the copy is made once and read by both
  // (pc-insert-boxing converts a value once per layout), so it lives
  // across the step's middle, as a gathered weight does.
  Operation *consumer = nodes[e.to].op;
  if (!consumer || isBackward(consumer) || !savedForBackward(e.value))
    return {};
  ArrayRef<int64_t> meshShape = meshes.lookup(nodes[e.to].mesh).getShape();
  int64_t sa = nodes[e.from].states(), sb = nodes[e.to].states();
  std::vector<double> bytes(size_t(sa * sb), 0.0);
  bool any = false;
  for (int64_t x = 0; x < sa; ++x) {
    SbpAttr have = produced(e.from, e.value, x);
    for (int64_t y = 0; y < sb; ++y) {
      if (!differs(have, wants[y]))
        continue;
      bytes[size_t(x * sb + y)] =
          localBytes(e.value.getType(), wants[y].getEntries(), meshShape);
      any = true;
    }
  }
  return any ? bytes : std::vector<double>();
}

void Planner::addTrainedMemory(Node &node) {
  // Besides the weight's piece, the optimizer's state in its layout (as
  // pc-optimizer adds it), its gradient, and by the step's end the new
  // weight and state beside the old. ZeRO shards over its axis what the
  // layout leaves whole there: the state (1), the reduced gradient (2),
  // the stored weight (3, gathered where it is read).
  MeshOp mesh = meshes.lookup(node.mesh);
  int64_t axis = training.zero > 0 ? mesh.getAxisIndex(training.zeroAxis) : -1;
  ArrayRef<int64_t> shape = mesh.getShape();
  for (auto [s, layout] : llvm::enumerate(node.layouts)) {
    double piece = node.held[s], shards = 1;
    if (axis >= 0 && shape[axis] > 1 && !layout.getEntries()[axis].isSplit())
      shards = double(shape[axis]);
    double weight = training.zero >= 3 ? piece / shards : piece;
    double state = training.offload
                       ? 0.0
                       : double(training.states) * training.stateBytes * piece /
                             (training.zero >= 1 ? shards : 1);
    node.held[s] = weight + state;
    node.grad.push_back(training.zero >= 2 ? piece / shards : piece);
    node.shards.push_back(training.zero >= 2 ? shards : 1);
  }
}

int Planner::producerOf(Value v) {
  if (Operation *def = v.getDefiningOp()) {
    if (auto it = opNode.find(def); it != opNode.end())
      return it->second;
    if (auto get = dyn_cast<GetParamOp>(def)) {
      auto it = paramNode.find(get.getNameAttr().getAttr());
      return it == paramNode.end() ? -1 : it->second;
    }
  }
  auto it = valueNode.find(v);
  return it == valueNode.end() ? -1 : it->second;
}

/// One graph's peak under a choice: its ops in the runtime's order, each
/// value from its op to its last reader.
class pc::autoparallel::GraphReplay {
public:
  GraphReplay(Planner &planner, func::FuncOp f, const std::vector<int> &c)
      : p(planner), f(f), c(c), ret(f.getBody().front().getTerminator()),
        order(orderOf(planner, f)) {}

  double run(const llvm::SmallDenseMap<Attribute, double> &base);

private:
  /// The runtime's order (runOrder). Under recompute, program order: the
  /// backward's reads of a segment wait for its copies, made when the
  /// first gradient reaches it, which runs each layer's backward where
  /// pc-autodiff put it instead of where its inputs first allow.
  static SmallVector<Operation *> orderOf(Planner &p, func::FuncOp f) {
    if (p.training.recompute.empty())
      return runOrder(f);
    return llvm::to_vector(
        llvm::make_pointer_range(f.getBody().front().without_terminator()));
  }
  struct Layout {
    int node = -1;
    SbpAttr sbp;
  };
  /// A read through a copy: converted to another layout, gathered
  /// (ZeRO-3), or made again for the backward (recompute). `key` names
  /// the copy (a recomputed one's layout wrapped in an array, apart from
  /// a converted one); `fromValue`: the copy is made from the value.
  struct CopyRead {
    Attribute key;
    SbpAttr layout;
    bool fromValue;
  };

  Layout layoutOf(Value v);
  /// The layout the chosen signature of `user` reads operand k in (none:
  /// as it is).
  SbpAttr wantOf(Operation *user, unsigned k);
  double bytesIn(Value v, SbpAttr sbp);
  std::optional<CopyRead> copyOf(Operation *op, unsigned k);
  /// Positions, how each operand is read, last reads, and the gradients'
  /// parameters.
  void scan();
  /// Under recompute, the forward results the backward reads made again,
  /// and where (remadeAt).
  void findRemade();
  /// The name of a recomputed copy in layout `l`, apart from a converted
  /// copy's.
  Attribute remadeKey(SbpAttr l) { return ArrayAttr::get(f.getContext(), {l}); }
  void add(Attribute mesh, double bytes);
  void release(Value v);
  /// Makes the copies `op` reads; returns the values it reads directly.
  DenseSet<Value> makeCopies(Operation *op, unsigned at);
  /// A complete gradient is reduced into its weight's layout and updated
  /// at once (at position `at`); the update's new pieces stay to the end,
  /// and in place the old ones go after their last reader.
  void update(Value grad, int param, unsigned at);
  void releaseAfter(Operation *op, unsigned at, const DenseSet<Value> &direct);
  /// Results are downloaded at the end; gradients are consumed by updates.
  bool kept(Value v) { return returned.contains(v) && !gradOf.contains(v); }

  Planner &p;
  func::FuncOp f;
  const std::vector<int> &c;
  Operation *ret;
  SmallVector<Operation *> order;
  DenseMap<Operation *, unsigned> pos;
  DenseMap<Value, unsigned> lastRead;
  DenseMap<std::pair<Value, Attribute>, unsigned> lastCopyRead;
  /// Per position, how the op reads each operand (copyOf).
  std::vector<SmallVector<std::optional<CopyRead>, 4>> reads;
  DenseSet<std::pair<Value, Attribute>> copied;
  DenseMap<Value, int> gradOf;
  DenseSet<Value> returned;
  DenseMap<Value, unsigned> remadeAt;
  DenseMap<unsigned, SmallVector<Value>> remadeHere;
  /// Per parameter node, the position of the last read of its piece; per
  /// position, the old pieces (mesh, bytes) that go there (in place).
  DenseMap<int, unsigned> lastParamRead;
  DenseMap<unsigned, SmallVector<std::pair<Attribute, double>>> oldGoesAt;
  llvm::SmallDenseMap<Attribute, double> now;
  double peak = 0;
};

GraphReplay::Layout GraphReplay::layoutOf(Value v) {
  int n = p.producerOf(v);
  return n < 0 ? Layout{} : Layout{n, p.produced(n, v, c[n])};
}

SbpAttr GraphReplay::wantOf(Operation *user, unsigned k) {
  auto it = p.opNode.find(user);
  if (it == p.opNode.end() || p.nodes[it->second].sigs.empty())
    return {};
  const Node &n = p.nodes[it->second];
  return makeSbp(f.getContext(), n.mesh, n.sigs[c[it->second]].operands[k]);
}

double GraphReplay::bytesIn(Value v, SbpAttr sbp) {
  return localBytes(v.getType(), sbp.getEntries(),
                    p.meshes.lookup(sbp.getMesh()).getShape());
}

std::optional<GraphReplay::CopyRead> GraphReplay::copyOf(Operation *op,
                                                         unsigned k) {
  Value v = op->getOperand(k);
  Layout have = layoutOf(v);
  if (!have.sbp)
    return std::nullopt;
  SbpAttr want = wantOf(op, k);
  // Under recompute the backward reads a forward result made again from
  // its segment's start, not the one the forward made (which goes after
  // its last forward reader); the copy is in the original's layout.
  if (remadeAt.contains(v) && p.isBackward(op))
    return CopyRead{remadeKey(have.sbp), have.sbp, false};
  Operation *def = v.getDefiningOp();
  if (!want)
    return std::nullopt;
  // A ZeRO-3 weight is read through a gathered copy, even in its layout.
  const Node &n = p.nodes[have.node];
  bool gathered = p.training.zero >= 3 && isa_and_nonnull<GetParamOp>(def) &&
                  Node::at(n.shards, c[have.node]) > 1;
  if (gathered || p.differs(have.sbp, want))
    return CopyRead{want, want, true};
  return std::nullopt;
}

void GraphReplay::findRemade() {
  if (p.training.recompute != "full" && p.training.recompute != "selective")
    return;
  DenseSet<Operation *> forward = forwardOps(f);
  if (forward.empty())
    return;
  auto segments = p.training.recompute == "full" ? layerSegments(f, forward)
                                                 : attentionCores(f, forward);
  DenseMap<Operation *, size_t> segmentOf;
  for (auto [i, segment] : llvm::enumerate(segments))
    for (Operation *op : segment)
      segmentOf[op] = i;
  for (auto [i, segment] : llvm::enumerate(segments)) {
    // A value another segment's forward reads is a checkpoint, kept; the
    // rest that the backward reads are made again, together, before the
    // first backward reader of any of them.
    SmallVector<Value> remade;
    std::optional<unsigned> gate;
    for (Operation *op : segment)
      for (Value r : op->getResults()) {
        bool checkpoint = false;
        std::optional<unsigned> first;
        for (Operation *user : r.getUsers()) {
          auto s = segmentOf.find(user);
          checkpoint |= s != segmentOf.end() && s->second != i;
          if (user != ret && !forward.contains(user) && pos.contains(user))
            first = std::min(first.value_or(~0u), pos.lookup(user));
        }
        if (checkpoint || !first)
          continue;
        remade.push_back(r);
        gate = std::min(gate.value_or(~0u), *first);
      }
    for (Value r : remade) {
      remadeAt[r] = *gate;
      remadeHere[*gate].push_back(r);
    }
  }
}

void GraphReplay::scan() {
  for (Operation *op : order)
    pos.try_emplace(op, pos.size());
  findRemade();
  reads.resize(order.size());
  for (Operation *op : order) {
    unsigned at = pos.lookup(op);
    for (OpOperand &u : op->getOpOperands()) {
      // A read through a copy reads the value itself only where the copy
      // is made from it (its first reader).
      Value v = u.get();
      std::optional<CopyRead> &copy =
          reads[at].emplace_back(copyOf(op, u.getOperandNumber()));
      if (copy) {
        auto [it, first] = lastCopyRead.try_emplace({v, copy->key}, at);
        it->second = at;
        if (!first || !copy->fromValue)
          continue;
      }
      lastRead[v] = at;
      if (isa_and_nonnull<GetParamOp>(v.getDefiningOp()))
        if (int n = p.producerOf(v); n >= 0)
          lastParamRead[n] = std::max(lastParamRead.lookup(n), at);
    }
  }
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    returned.insert(v);
    if (FlatSymbolRefAttr g = attrs::getGrad(f, i))
      if (auto it = p.paramNode.find(g.getAttr()); it != p.paramNode.end())
        gradOf[v] = it->second;
  }
}

void GraphReplay::add(Attribute mesh, double bytes) {
  double &n = now[mesh];
  n += bytes;
  peak = std::max(peak, n);
}

void GraphReplay::release(Value v) {
  // Only what the step makes goes: inputs and results, not stored pieces.
  Layout l = layoutOf(v);
  Operation *def = v.getDefiningOp();
  if (l.sbp && (isa<BlockArgument>(v) || (def && p.opNode.contains(def))))
    now[p.nodes[l.node].mesh] -= bytesIn(v, l.sbp);
}

DenseSet<Value> GraphReplay::makeCopies(Operation *op, unsigned at) {
  // Each copy is a step of its own (pc-lower-boxing's): a value read only
  // to make them goes before the op's results are made.
  DenseSet<Value> direct;
  SmallVector<Value> copiedFrom;
  for (OpOperand &u : op->getOpOperands()) {
    Value v = u.get();
    const std::optional<CopyRead> &copy = reads[at][u.getOperandNumber()];
    if (!copy) {
      direct.insert(v);
      continue;
    }
    if (copied.insert({v, copy->key}).second) {
      add(copy->layout.getMesh(), bytesIn(v, copy->layout));
      if (copy->fromValue)
        copiedFrom.push_back(v);
    }
  }
  for (Value v : copiedFrom)
    if (lastRead.lookup(v) == at && !direct.contains(v) && !kept(v))
      release(v);
  return direct;
}

void GraphReplay::update(Value grad, int param, unsigned at) {
  const Node &n = p.nodes[param];
  Layout l = layoutOf(grad);
  SbpAttr stored = n.layouts[c[param]];
  double shards = Node::at(n.shards, c[param]);
  double reduced = l.sbp && (p.differs(l.sbp, stored) || shards > 1)
                       ? bytesIn(grad, stored) / shards
                       : 0;
  double fresh = n.fresh(c[param]);
  add(n.mesh, reduced + fresh);
  now[n.mesh] -= reduced;
  if (p.training.inPlaceUpdates)
    oldGoesAt[std::max(at, lastParamRead.lookup(param))].push_back(
        {n.mesh, fresh});
}

void GraphReplay::releaseAfter(Operation *op, unsigned at,
                               const DenseSet<Value> &direct) {
  llvm::SmallSetVector<Value, 8> done;
  for (OpOperand &u : op->getOpOperands()) {
    Value v = u.get();
    if (const std::optional<CopyRead> &copy = reads[at][u.getOperandNumber()]) {
      auto last = lastCopyRead.find({v, copy->key});
      if (last != lastCopyRead.end() && last->second == at &&
          copied.erase({v, copy->key}))
        now[copy->layout.getMesh()] -= bytesIn(v, copy->layout);
    }
    if (lastRead.lookup(v) == at && direct.contains(v) && !kept(v))
      done.insert(v);
  }
  // A result nobody reads goes at once.
  for (Value r : op->getResults())
    if (!lastRead.contains(r) && !kept(r))
      done.insert(r);
  for (Value v : done)
    release(v);
}

double GraphReplay::run(const llvm::SmallDenseMap<Attribute, double> &base) {
  scan();
  now = base;
  // Inputs are uploaded before the first op.
  for (BlockArgument a : f.getArguments())
    if (Layout l = layoutOf(a); l.sbp && !a.use_empty())
      add(p.nodes[l.node].mesh, bytesIn(a, l.sbp));
  for (Operation *op : order) {
    unsigned at = pos.lookup(op);
    for (Value v : remadeHere.lookup(at)) {
      SbpAttr l = layoutOf(v).sbp;
      if (copied.insert({v, remadeKey(l)}).second)
        add(l.getMesh(), bytesIn(v, l));
    }
    DenseSet<Value> direct = makeCopies(op, at);
    bool made = p.opNode.contains(op);
    for (Value r : op->getResults())
      if (Layout l = layoutOf(r); made && l.sbp)
        add(p.nodes[l.node].mesh, bytesIn(r, l.sbp));
    for (Value r : op->getResults())
      if (auto g = gradOf.find(r); g != gradOf.end())
        update(r, g->second, at);
    releaseAfter(op, at, direct);
    for (auto [mesh, bytes] : oldGoesAt.lookup(at))
      now[mesh] -= bytes;
  }
  return peak;
}

double Planner::memoryOf(const std::vector<int> &c) {
  // What lives throughout: each parameter's piece (a trained one's with
  // its moments) and the constants, made when a program is bound.
  llvm::SmallDenseMap<Attribute, double> base;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node &node = nodes[n];
    if (node.param || (node.value && node.value.getDefiningOp()))
      base[node.mesh] += Node::at(node.held, c[n]);
  }
  double most = 0;
  for (auto &[mesh, bytes] : base)
    most = std::max(most, bytes);
  forEachGraph(module, [&](func::FuncOp f) {
    most = std::max(most, GraphReplay(*this, f, c).run(base));
  });
  return most;
}

//===- Interpreter.cpp - Reference execution of pc programs ---------------===//

#include "runtime/reference/Interpreter.h"

#include "dialect/PcOps.h"
#include "passes/PassUtils.h"
#include "runtime/reference/Kernels.h"

#include "absl/strings/str_cat.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

using namespace mlir;

namespace pc::reference {
namespace {

Shape shapeOf(Type t) {
  auto s = cast<RankedTensorType>(t).getShape();
  return Shape(s.begin(), s.end());
}

int64_t elemBytesOf(Type t) { return elementBytes(t); }

absl::Status opError(Operation *op, const std::string &what) {
  return absl::InvalidArgumentError(
      absl::StrCat("'", op->getName().getStringRef().str(), "': ", what));
}

/// The members of the simulated machine meet here for collectives. Every
/// member deposits its array, waits for the others, copies them all, and
/// leaves; a failed member aborts the world so that no one waits forever.
class World {
public:
  /// The arrays of all `size` members of group `key`, in group order.
  absl::StatusOr<std::vector<Array>> exchange(int64_t rank,
                                              const std::string &key,
                                              int64_t index, int64_t size,
                                              const Array &mine) {
    std::unique_lock<std::mutex> lock(mu);
    int64_t seq = sequence[{rank, key}]++;
    Slot &slot = slots[{key, seq}];
    slot.parts.resize(size);
    slot.parts[index] = &mine;
    ++slot.arrived;
    cv.notify_all();
    cv.wait(lock, [&] { return slot.arrived == size || aborted; });
    if (aborted)
      return absl::AbortedError("another device failed");
    std::vector<Array> all;
    for (const Array *p : slot.parts)
      all.push_back(*p);
    if (++slot.departed == size)
      slots.erase({key, seq});
    else
      // The others still read `mine`: wait until they have.
      cv.wait(lock, [&] {
        return aborted || !slots.count({key, seq}) ||
               slots[{key, seq}].departed == size;
      });
    cv.notify_all();
    return all;
  }

  /// Leaves `piece` (the box `box` of the logical tensor) for `dstRank`
  /// under the transfer `key`.
  void post(const std::string &key, int64_t dstRank, Box box, Array piece) {
    std::lock_guard<std::mutex> lock(mu);
    mail[{key, dstRank}].push_back({std::move(box), std::move(piece)});
    cv.notify_all();
  }

  /// Waits for `expected` pieces of the transfer `key` for `rank`.
  absl::StatusOr<std::vector<std::pair<Box, Array>>>
  collect(const std::string &key, int64_t rank, size_t expected) {
    std::unique_lock<std::mutex> lock(mu);
    auto &box = mail[{key, rank}];
    cv.wait(lock, [&] { return box.size() >= expected || aborted; });
    if (aborted)
      return absl::AbortedError("another device failed");
    std::vector<std::pair<Box, Array>> pieces = std::move(box);
    mail.erase({key, rank});
    return pieces;
  }

  void abort() {
    std::lock_guard<std::mutex> lock(mu);
    aborted = true;
    cv.notify_all();
  }

  void record(int64_t rank, const std::string &kind, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu);
    traffic.bytesReceived[rank] += bytes;
    ++traffic.collectives[kind];
  }

  Traffic traffic;

private:
  struct Slot {
    std::vector<const Array *> parts;
    int64_t arrived = 0, departed = 0;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::pair<std::string, int64_t>, Slot> slots;
  std::map<std::pair<int64_t, std::string>, int64_t> sequence;
  std::map<std::pair<std::string, int64_t>, std::vector<std::pair<Box, Array>>>
      mail;
  bool aborted = false;
};

uint64_t fnv1a(llvm::StringRef s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

/// `logical` as the piece a device at `coords` holds in `sbp`: its box, and
/// for partial entries the value on the first member (sum) or on all
/// (max, min, avg).
Array pieceOf(const Array &logical, SbpAttr sbp, ArrayRef<int64_t> meshShape,
              ArrayRef<int64_t> coords) {
  Box box = localBox(logical.shape, meshShape, sbp.getEntries(), coords);
  Array piece = slice(logical, box.offsets, box.sizes);
  for (auto [axis, e] : llvm::enumerate(sbp.getEntries()))
    if (e.isPartial() && e.reduce == ReduceKind::Sum && coords[axis] != 0)
      std::fill(piece.data.begin(), piece.data.end(), 0.0);
  return piece;
}

class Evaluator {
public:
  Evaluator(ModuleOp module, uint64_t seed, int64_t rank, World *world)
      : module(module), meshes(module), seed(seed), rank(rank), world(world) {}

  absl::StatusOr<std::vector<Array>> run(func::FuncOp f,
                                         const std::vector<Array> &args);

private:
  bool distributed() const { return world != nullptr; }
  absl::Status eval(Operation *op);
  absl::Status evalStep(Operation *op);
  SmallVector<int64_t, 4> coordsOn(FlatSymbolRefAttr mesh) {
    MeshOp m = meshes.lookup(mesh);
    std::vector<int64_t> c =
        delinearize(m.getShape(), meshes.positionOf(mesh, rank));
    return SmallVector<int64_t, 4>(c.begin(), c.end());
  }
  /// The group over `axes` of `mesh` this rank is in: global ranks in group
  /// order, and this rank's index.
  std::pair<std::vector<int64_t>, int64_t> group(FlatSymbolRefAttr mesh,
                                                 ArrayRef<int64_t> axes) {
    MeshOp m = meshes.lookup(mesh);
    SmallVector<int64_t, 4> c = coordsOn(mesh);
    std::vector<int64_t> ranks;
    for (int64_t p : groupMembers(m.getShape(), c, axes))
      ranks.push_back(m.getRank(p));
    return {ranks, groupIndex(m.getShape(), c, axes)};
  }
  absl::StatusOr<std::vector<Array>> exchange(FlatSymbolRefAttr mesh,
                                              ArrayRef<int64_t> axes,
                                              const Array &mine,
                                              int64_t &index) {
    auto [ranks, idx] = group(mesh, axes);
    index = idx;
    std::string key = mesh.getValue().str() + "/";
    for (int64_t a : axes)
      key += std::to_string(a) + ",";
    key += "/";
    for (int64_t r : ranks)
      key += std::to_string(r) + ",";
    return world->exchange(rank, key, idx, ranks.size(), mine);
  }
  /// Extents of the members along `dim` for a group whose whole is `whole`.
  std::vector<int64_t> extents(FlatSymbolRefAttr mesh, ArrayRef<int64_t> axes,
                               int64_t whole) {
    return groupExtents(whole, meshes.lookup(mesh).getShape(), axes);
  }
  Array &valueOf(Value v) { return env[v]; }
  absl::Status evalTransfer(Operation *op, TypeAttr from, TypeAttr to,
                            Value input, Value result);

  ModuleOp module;
  MeshCache meshes;
  uint64_t seed;
  int64_t rank;
  World *world;
  DenseMap<Value, Array> env;
  std::vector<Array> results;
  std::map<std::string, int64_t> transferCount;
};

absl::StatusOr<std::vector<Array>>
Evaluator::run(func::FuncOp f, const std::vector<Array> &args) {
  for (auto [arg, value] : llvm::zip(f.getArguments(), args))
    env[arg] = value;
  for (Operation &op : f.getBody().front())
    if (absl::Status s = eval(&op); !s.ok())
      return s;
  return results;
}

absl::Status Evaluator::evalStep(Operation *op) {
  Array &in = valueOf(op->getOperand(0));
  Value result = op->getResult(0);
  if (!distributed()) {
    // A layout change keeps the logical value.
    env[result] = in;
    return absl::OkStatus();
  }
  auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
  int64_t elem = elemBytesOf(result.getType());
  Shape outShape = shapeOf(result.getType());
  int64_t index = 0;
  auto all = [&]() { return exchange(mesh, axes, in, index); };

  if (auto ar = dyn_cast<AllReduceOp>(op)) {
    auto parts = all();
    if (!parts.ok())
      return parts.status();
    env[result] = combine(*parts, toReduceKind(ar.getReduce()));
    // Counted as the ring moves it (passes/CostModel.h).
    int64_t n = parts->size(), total = in.size();
    auto chunk = [&](int64_t k) { return splitRange(total, n, k).size; };
    world->record(
        rank, "all_reduce",
        n == 1
            ? 0
            : (2 * total - chunk((index + n - 1) % n) - chunk(index)) * elem);
    return absl::OkStatus();
  }
  if (auto ag = dyn_cast<AllGatherOp>(op)) {
    auto parts = all();
    if (!parts.ok())
      return parts.status();
    env[result] = concat(*parts, ag.getDim());
    world->record(rank, "all_gather", (env[result].size() - in.size()) * elem);
    return absl::OkStatus();
  }
  if (auto rs = dyn_cast<ReduceScatterOp>(op)) {
    auto parts = all();
    if (!parts.ok())
      return parts.status();
    Array sum = combine(*parts, toReduceKind(rs.getReduce()));
    int64_t dim = rs.getDim();
    std::vector<int64_t> ext = extents(mesh, axes, in.shape[dim]);
    Shape start(in.shape.size(), 0);
    for (int64_t i = 0; i < index; ++i)
      start[dim] += ext[i];
    env[result] = slice(sum, start, outShape);
    int64_t n = parts->size();
    int64_t prevPiece = ext[(index + n - 1) % n] *
                        (in.size() / std::max<int64_t>(in.shape[dim], 1));
    world->record(rank, "reduce_scatter",
                  n == 1 ? 0 : (in.size() - prevPiece) * elem);
    return absl::OkStatus();
  }
  if (auto a2a = dyn_cast<AllToAllOp>(op)) {
    auto parts = all();
    if (!parts.ok())
      return parts.status();
    int64_t src = a2a.getSrcDim(), dst = a2a.getDstDim();
    std::vector<int64_t> ext = extents(mesh, axes, in.shape[dst]);
    int64_t offset = 0;
    for (int64_t i = 0; i < index; ++i)
      offset += ext[i];
    std::vector<Array> blocks;
    int64_t received = 0;
    for (auto [q, part] : llvm::enumerate(*parts)) {
      Shape start(part.shape.size(), 0), sizes = part.shape;
      start[dst] = offset;
      sizes[dst] = ext[index];
      blocks.push_back(slice(part, start, sizes));
      if (static_cast<int64_t>(q) != index)
        received += blocks.back().size();
    }
    env[result] = concat(blocks, src);
    world->record(rank, "all_to_all", received * elem);
    return absl::OkStatus();
  }
  if (auto ls = dyn_cast<LocalSliceOp>(op)) {
    auto [ranks, idx] = group(mesh, axes);
    int64_t dim = ls.getDim();
    std::vector<int64_t> ext = extents(mesh, axes, in.shape[dim]);
    Shape start(in.shape.size(), 0);
    for (int64_t i = 0; i < idx; ++i)
      start[dim] += ext[i];
    env[result] = slice(in, start, outShape);
    return absl::OkStatus();
  }
  if (auto lp = dyn_cast<LocalPartialOp>(op)) {
    auto [ranks, idx] = group(mesh, axes);
    if (!lp.getDim()) {
      Array out = in;
      if (lp.getReduce() == Reduction::sum && idx != 0)
        std::fill(out.data.begin(), out.data.end(), 0.0);
      env[result] = out;
      return absl::OkStatus();
    }
    int64_t dim = *lp.getDim();
    std::vector<int64_t> ext = extents(mesh, axes, outShape[dim]);
    Shape start(outShape.size(), 0);
    for (int64_t i = 0; i < idx; ++i)
      start[dim] += ext[i];
    Array out = Array::zeros(outShape);
    place(out, in, start);
    env[result] = out;
    return absl::OkStatus();
  }
  if (auto bc = dyn_cast<BroadcastOp>(op)) {
    auto parts = all();
    if (!parts.ok())
      return parts.status();
    if (bc.getRoot() >= parts->size())
      return opError(op, "root is outside the group");
    env[result] = (*parts)[bc.getRoot()];
    world->record(rank, "broadcast",
                  index == int64_t(bc.getRoot()) ? 0 : in.size() * elem);
    return absl::OkStatus();
  }
  return opError(op, "is not a boxing step");
}

absl::Status Evaluator::evalTransfer(Operation *op, TypeAttr from, TypeAttr to,
                                     Value input, Value result) {
  // Every rank derives the same pairing of boxes from the two layouts.
  SbpAttr src = getSbp(from.getValue()), dst = getSbp(to.getValue());
  Shape shape = shapeOf(from.getValue());
  boxing::Planner planner;
  boxing::TransferPlan plan = planner.planTransfer(
      shape, elemBytesOf(from.getValue()), meshInfo(meshes.lookup(src)),
      src.getEntries(), meshInfo(meshes.lookup(dst)), dst.getEntries());
  // The k-th send of a (from, to) pair on a rank matches the k-th receive.
  std::string pair;
  llvm::raw_string_ostream os(pair);
  os << from << "->" << to;
  std::string key =
      pair + "#" + std::to_string(transferCount[pair + (input ? "s" : "r")]++);
  MeshOp srcMesh = meshes.lookup(src), dstMesh = meshes.lookup(dst);
  if (input) {
    int64_t me = meshes.positionOf(src.getMesh(), rank);
    Box mine = localBox(shape, srcMesh.getShape(), src.getEntries(),
                        delinearize(srcMesh.getShape(), me));
    for (const boxing::Transfer &t : plan.transfers) {
      if (t.srcPosition != me)
        continue;
      Shape start(shape.size());
      for (size_t d = 0; d < shape.size(); ++d)
        start[d] = t.box.offsets[d] - mine.offsets[d];
      world->post(key, dstMesh.getRank(t.dstPosition), t.box,
                  slice(valueOf(input), start, t.box.sizes));
    }
    return absl::OkStatus();
  }
  int64_t me = meshes.positionOf(dst.getMesh(), rank);
  Box mine = localBox(shape, dstMesh.getShape(), dst.getEntries(),
                      delinearize(dstMesh.getShape(), me));
  size_t expected = 0;
  int64_t received = 0;
  for (const boxing::Transfer &t : plan.transfers)
    if (t.dstPosition == me) {
      ++expected;
      if (!t.local)
        received += product(t.box.sizes);
    }
  auto pieces = world->collect(key, rank, expected);
  if (!pieces.ok())
    return pieces.status();
  Array out = Array::zeros(mine.sizes);
  for (auto &[box, piece] : *pieces) {
    Shape start(shape.size());
    for (size_t d = 0; d < shape.size(); ++d)
      start[d] = box.offsets[d] - mine.offsets[d];
    place(out, piece, start);
  }
  env[result] = std::move(out);
  world->record(rank, "transfer", received * elemBytesOf(from.getValue()));
  return absl::OkStatus();
}

absl::Status Evaluator::eval(Operation *op) {
  auto in = [&](unsigned i) -> Array & { return valueOf(op->getOperand(i)); };
  auto set = [&](Array a) { env[op->getResult(0)] = std::move(a); };
  auto unary = [&](auto fn) {
    set(elementwise(in(0), fn));
    return absl::OkStatus();
  };
  auto binary = [&](auto fn) {
    set(broadcastBinary(in(0), in(1), shapeOf(op->getResult(0).getType()), fn));
    return absl::OkStatus();
  };
  bool intResult =
      op->getNumResults() == 1 &&
      isa<RankedTensorType>(op->getResult(0).getType()) &&
      isa<IntegerType>(
          cast<RankedTensorType>(op->getResult(0).getType()).getElementType());

  return llvm::TypeSwitch<Operation *, absl::Status>(op)
      .Case([&](func::ReturnOp ret) {
        for (Value v : ret.getOperands())
          results.push_back(valueOf(v));
        return absl::OkStatus();
      })
      .Case([&](GetParamOp get) -> absl::Status {
        absl::StatusOr<Array> value = initialParam(module, get.getName(), seed);
        if (!value.ok())
          return value.status();
        auto param = cast<ParamOp>(
            SymbolTable::lookupSymbolIn(module, get.getNameAttr()));
        SbpAttr sbp = getSbp(param.getType());
        if (distributed() && sbp && !getSbp(get.getType()))
          set(pieceOf(*value, sbp, meshes.lookup(sbp).getShape(),
                      coordsOn(sbp.getMesh())));
        else
          set(*value);
        return absl::OkStatus();
      })
      .Case([&](ConstantOp c) -> absl::Status {
        auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        if (!dense)
          return opError(op, "needs a dense value");
        Array a = Array::zeros(shapeOf(c.getType()));
        if (isa<FloatType>(dense.getElementType())) {
          auto values = dense.getValues<APFloat>();
          for (int64_t i = 0; i < a.size(); ++i)
            a.data[i] =
                (dense.isSplat() ? values[0] : values[i]).convertToDouble();
        } else {
          auto values = dense.getValues<APInt>();
          for (int64_t i = 0; i < a.size(); ++i)
            a.data[i] =
                (dense.isSplat() ? values[0] : values[i]).getSExtValue();
        }
        set(std::move(a));
        return absl::OkStatus();
      })
      .Case<ToSbpOp, BoxingOp, TransferOp>([&](Operation *) {
        if (distributed())
          return opError(op, "must be lowered before running per device");
        set(in(0));
        return absl::OkStatus();
      })
      .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, LocalSliceOp,
            LocalPartialOp, BroadcastOp>(
          [&](Operation *) { return evalStep(op); })
      .Case([&](PieceOffsetOp p) -> absl::Status {
        auto [ranks, idx] = group(p.getMeshAttr(), p.getAxes());
        double offset = 0;
        for (int64_t i = 0; i < idx; ++i)
          offset += p.getSizes()[i];
        set(Array{{}, {offset}});
        return absl::OkStatus();
      })
      .Case([&](SendOp send) {
        return evalTransfer(op, send.getFromAttr(), send.getToAttr(),
                            send.getInput(), Value());
      })
      .Case([&](RecvOp recv) {
        return evalTransfer(op, recv.getFromAttr(), recv.getToAttr(), Value(),
                            recv.getResult());
      })
      .Case([&](MatmulOp m) {
        set(matmul(in(0), in(1), m.getTransposeLhs(), m.getTransposeRhs(),
                   shapeOf(m.getType())));
        return absl::OkStatus();
      })
      .Case([&](AddOp) {
        return binary([](double a, double b) { return a + b; });
      })
      .Case([&](SubOp) {
        return binary([](double a, double b) { return a - b; });
      })
      .Case([&](MulOp) {
        return binary([](double a, double b) { return a * b; });
      })
      .Case([&](DivOp) {
        return binary([intResult](double a, double b) {
          return intResult ? std::trunc(a / b) : a / b;
        });
      })
      .Case([&](NegOp) { return unary([](double x) { return -x; }); })
      .Case([&](ExpOp) { return unary([](double x) { return std::exp(x); }); })
      .Case([&](LogOp) { return unary([](double x) { return std::log(x); }); })
      .Case(
          [&](TanhOp) { return unary([](double x) { return std::tanh(x); }); })
      .Case([&](ReluOp) {
        return unary([](double x) { return x > 0 ? x : 0.0; });
      })
      .Case([&](SigmoidOp) {
        return unary([](double x) { return 1 / (1 + std::exp(-x)); });
      })
      .Case([&](GeluOp g) {
        bool approx = g.getApproximate();
        return unary([approx](double x) {
          if (approx)
            return 0.5 * x *
                   (1 + std::tanh(std::sqrt(2 / M_PI) *
                                  (x + 0.044715 * x * x * x)));
          return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
        });
      })
      .Case([&](CastOp) {
        return unary(
            [intResult](double x) { return intResult ? std::trunc(x) : x; });
      })
      .Case([&](SoftmaxOp s) {
        int64_t rank = in(0).shape.size();
        set(softmax(in(0), (int64_t(s.getAxis()) + rank) % rank, false));
        return absl::OkStatus();
      })
      .Case([&](LogSoftmaxOp s) {
        int64_t rank = in(0).shape.size();
        set(softmax(in(0), (int64_t(s.getAxis()) + rank) % rank, true));
        return absl::OkStatus();
      })
      .Case([&](LayerNormOp n) {
        int64_t rank = in(0).shape.size();
        set(normalize(in(0), (int64_t(n.getAxis()) + rank) % rank, in(1),
                      &in(2), n.getEpsilon().convertToDouble(), false));
        return absl::OkStatus();
      })
      .Case([&](RmsNormOp n) {
        int64_t rank = in(0).shape.size();
        set(normalize(in(0), (int64_t(n.getAxis()) + rank) % rank, in(1),
                      nullptr, n.getEpsilon().convertToDouble(), true));
        return absl::OkStatus();
      })
      .Case([&](ReduceSumOp r) {
        set(reduce(in(0), r.getAxes(), r.getKeepdim(), Reduce::Sum));
        return absl::OkStatus();
      })
      .Case([&](ReduceMeanOp r) {
        set(reduce(in(0), r.getAxes(), r.getKeepdim(), Reduce::Mean));
        return absl::OkStatus();
      })
      .Case([&](ReduceMaxOp r) {
        set(reduce(in(0), r.getAxes(), r.getKeepdim(), Reduce::Max));
        return absl::OkStatus();
      })
      .Case([&](ReshapeOp r) {
        Array a = in(0);
        a.shape = shapeOf(r.getType());
        set(std::move(a));
        return absl::OkStatus();
      })
      .Case([&](TransposeOp t) {
        set(transpose(in(0), t.getPerm()));
        return absl::OkStatus();
      })
      .Case([&](BroadcastToOp b) {
        set(broadcastTo(in(0), shapeOf(b.getType())));
        return absl::OkStatus();
      })
      .Case([&](SliceOp s) {
        Shape start(s.getStart()), sizes;
        for (auto [a, b] : llvm::zip(s.getStart(), s.getLimit()))
          sizes.push_back(b - a);
        set(slice(in(0), start, sizes));
        return absl::OkStatus();
      })
      .Case([&](ConcatOp c) {
        std::vector<Array> parts;
        for (Value v : c.getInputs())
          parts.push_back(valueOf(v));
        int64_t rank = parts.front().shape.size();
        set(concat(parts, (int64_t(c.getAxis()) + rank) % rank));
        return absl::OkStatus();
      })
      .Case([&](EmbeddingOp e) -> absl::Status {
        absl::StatusOr<Array> r =
            embedding(in(0), in(1), e.getZeroOutOfRange());
        if (!r.ok())
          return r.status();
        set(*r);
        return absl::OkStatus();
      })
      .Case([&](CausalMaskOp) {
        set(causalMask(in(0)));
        return absl::OkStatus();
      })
      .Case([&](CrossEntropyOp) -> absl::Status {
        absl::StatusOr<Array> r = crossEntropy(in(0), in(1));
        if (!r.ok())
          return r.status();
        set(*r);
        return absl::OkStatus();
      })
      .Case([&](PickLabelsOp) {
        set(pickLabels(in(0), in(1)));
        return absl::OkStatus();
      })
      .Default([&](Operation *) {
        return opError(op, "is not supported by the reference interpreter");
      });
}

func::FuncOp findGraph(ModuleOp module, llvm::StringRef name) {
  return module.lookupSymbol<func::FuncOp>(name);
}

} // namespace

absl::StatusOr<Array> initialParam(ModuleOp module, llvm::StringRef name,
                                   uint64_t seed) {
  auto param = module.lookupSymbol<ParamOp>(name);
  if (!param)
    return absl::NotFoundError(absl::StrCat("no parameter @", name.str()));
  Array a = Array::zeros(shapeOf(param.getType()));
  InitAttr init = param.getInit();
  std::mt19937_64 rng(seed ^ fnv1a(name));
  double x = init.getFirst(), y = init.getSecond();
  for (double &v : a.data) {
    switch (init.getKind()) {
    case InitKind::zeros:
      v = 0;
      break;
    case InitKind::ones:
      v = 1;
      break;
    case InitKind::constant:
      v = x;
      break;
    case InitKind::normal:
      v = std::normal_distribution<double>(x, y)(rng);
      break;
    case InitKind::truncated_normal:
      do
        v = std::normal_distribution<double>(x, y)(rng);
      while (std::abs(v - x) > 2 * y);
      break;
    case InitKind::uniform:
      v = std::uniform_real_distribution<double>(x, y)(rng);
      break;
    }
  }
  return a;
}

absl::StatusOr<std::vector<Array>>
randomInputs(ModuleOp module, llvm::StringRef graph, uint64_t seed) {
  func::FuncOp f = findGraph(module, graph);
  if (!f)
    return absl::NotFoundError(absl::StrCat("no graph @", graph.str()));
  std::mt19937_64 rng(seed);
  std::vector<Array> inputs;
  for (BlockArgument arg : f.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    Array a = Array::zeros(shapeOf(type));
    if (isa<FloatType>(type.getElementType())) {
      for (double &x : a.data)
        x = std::uniform_real_distribution<double>(-1, 1)(rng);
    } else {
      int64_t bound = int64_t(1) << 20;
      for (Operation *user : arg.getUsers()) {
        if (auto e = dyn_cast<EmbeddingOp>(user))
          bound = std::min(bound, e.getTable().getType().getShape()[0]);
        if (auto c = dyn_cast<CrossEntropyOp>(user))
          bound = std::min(bound, c.getLogits().getType().getShape().back());
      }
      for (double &x : a.data)
        x = std::uniform_int_distribution<int64_t>(0, bound - 1)(rng);
    }
    inputs.push_back(std::move(a));
  }
  return inputs;
}

absl::StatusOr<double> maxRelativeError(const std::vector<Array> &actual,
                                        const std::vector<Array> &expected) {
  if (actual.size() != expected.size())
    return absl::InvalidArgumentError(absl::StrCat(
        actual.size(), " results but ", expected.size(), " expected"));
  double worst = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i].shape != expected[i].shape)
      return absl::InvalidArgumentError(
          absl::StrCat("result ", i, " has another shape"));
    for (int64_t j = 0; j < expected[i].size(); ++j) {
      double e = expected[i].data[j], a = actual[i].data[j];
      double err = std::abs(a - e) / (1 + std::abs(e));
      if (std::isnan(err) || (std::isinf(e) != std::isinf(a)))
        err = std::isinf(e) && a == e ? 0 : HUGE_VAL;
      worst = std::max(worst, err);
    }
  }
  return worst;
}

absl::StatusOr<std::vector<Array>> runLogical(ModuleOp module,
                                              llvm::StringRef graph,
                                              const std::vector<Array> &inputs,
                                              uint64_t seed) {
  func::FuncOp f = findGraph(module, graph);
  if (!f)
    return absl::NotFoundError(absl::StrCat("no graph @", graph.str()));
  if (f.getNumArguments() != inputs.size())
    return absl::InvalidArgumentError(
        absl::StrCat("@", graph.str(), " takes ", f.getNumArguments(),
                     " inputs, not ", inputs.size()));
  return Evaluator(module, seed, /*rank=*/0, nullptr).run(f, inputs);
}

absl::StatusOr<std::vector<Array>>
runDistributed(ModuleOp module, llvm::StringRef graph,
               const std::vector<Array> &inputs, uint64_t seed,
               Traffic *traffic) {
  MeshCache meshes(module);
  struct Job {
    func::FuncOp program;
    int64_t rank;
    std::vector<Array> args;
    absl::StatusOr<std::vector<Array>> results = std::vector<Array>{};
  };
  std::vector<Job> jobs;
  for (auto f : module.getOps<func::FuncOp>()) {
    auto g = f->getAttrOfType<StringAttr>("pc.graph");
    if (!g || g.getValue() != graph)
      continue;
    for (int64_t rank :
         f->getAttrOfType<DenseI64ArrayAttr>("pc.ranks").asArrayRef()) {
      Job job{f, rank, {}};
      for (BlockArgument arg : f.getArguments()) {
        auto index =
            f.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "pc.index")
                .getInt();
        Type logical =
            f.getArgAttrOfType<TypeAttr>(arg.getArgNumber(), "pc.logical_type")
                .getValue();
        if (index >= static_cast<int64_t>(inputs.size()))
          return absl::InvalidArgumentError("too few inputs");
        SbpAttr sbp = getSbp(logical);
        MeshOp mesh = meshes.lookup(sbp);
        std::vector<int64_t> c = delinearize(
            mesh.getShape(), meshes.positionOf(sbp.getMesh(), rank));
        job.args.push_back(pieceOf(inputs[index], sbp, mesh.getShape(), c));
      }
      jobs.push_back(std::move(job));
    }
  }
  if (jobs.empty())
    return absl::NotFoundError(
        absl::StrCat("no per-device programs of @", graph.str()));

  World world;
  std::vector<std::thread> threads;
  for (Job &job : jobs)
    threads.emplace_back([&, j = &job] {
      j->results =
          Evaluator(module, seed, j->rank, &world).run(j->program, j->args);
      if (!j->results.ok())
        world.abort();
    });
  for (std::thread &t : threads)
    t.join();
  for (Job &job : jobs)
    if (!job.results.ok() && !absl::IsAborted(job.results.status()))
      return job.results.status();
  for (Job &job : jobs)
    if (!job.results.ok())
      return job.results.status();

  // Assemble each logical result from the mesh positions holding it.
  std::map<int64_t, std::pair<Type, std::map<int64_t, Array>>> pieces;
  for (Job &job : jobs)
    for (auto [i, value] : llvm::enumerate(*job.results)) {
      auto index =
          job.program.getResultAttrOfType<IntegerAttr>(i, "pc.index").getInt();
      Type logical =
          job.program.getResultAttrOfType<TypeAttr>(i, "pc.logical_type")
              .getValue();
      pieces[index].first = logical;
      pieces[index].second[job.rank] = value;
    }
  std::vector<Array> out;
  for (auto &[index, entry] : pieces) {
    auto &[logical, byRank] = entry;
    SbpAttr sbp = getSbp(logical);
    MeshOp mesh = meshes.lookup(sbp);
    ArrayRef<int64_t> meshShape = mesh.getShape();
    int64_t n = mesh.getNumDevices();
    std::vector<Array> at(n);
    for (int64_t p = 0; p < n; ++p)
      at[p] = byRank.at(mesh.getRank(p));
    // Partials reduce from the last axis inward.
    for (size_t axis = meshShape.size(); axis-- > 0;) {
      SbpEntry e = sbp.getEntries()[axis];
      if (!e.isPartial())
        continue;
      std::vector<Array> next = at;
      for (int64_t p = 0; p < n; ++p) {
        std::vector<Array> members;
        for (int64_t m : groupMembers(meshShape, delinearize(meshShape, p),
                                      std::vector<int64_t>{int64_t(axis)}))
          members.push_back(at[m]);
        next[p] = combine(members, e.reduce);
      }
      at = std::move(next);
    }
    Array whole = Array::zeros(shapeOf(logical));
    for (int64_t p = 0; p < n; ++p)
      place(whole, at[p],
            localBox(whole.shape, meshShape, sbp.getEntries(),
                     delinearize(meshShape, p))
                .offsets);
    out.push_back(std::move(whole));
  }
  if (traffic)
    *traffic = world.traffic;
  return out;
}

absl::StatusOr<CheckResult>
checkCompiled(MLIRContext &context, llvm::StringRef source,
              llvm::StringRef graph, llvm::StringRef pipeline, uint64_t seed) {
  OwningOpRef<ModuleOp> logical = parseSourceString<ModuleOp>(source, &context);
  OwningOpRef<ModuleOp> compiled =
      parseSourceString<ModuleOp>(source, &context);
  if (!logical || !compiled)
    return absl::InvalidArgumentError("the model does not parse");
  absl::StatusOr<std::vector<Array>> inputs =
      randomInputs(*logical, graph, seed);
  if (!inputs.ok())
    return inputs.status();
  absl::StatusOr<std::vector<Array>> expected =
      runLogical(*logical, graph, *inputs, seed);
  if (!expected.ok())
    return expected.status();
  PassManager pm = PassManager::on<ModuleOp>(&context);
  if (failed(parsePassPipeline(pipeline, pm)))
    return absl::InvalidArgumentError(
        absl::StrCat("bad pipeline '", pipeline.str(), "'"));
  if (failed(pm.run(*compiled)))
    return absl::InvalidArgumentError("the pipeline failed");
  CheckResult result;
  absl::StatusOr<std::vector<Array>> actual =
      runDistributed(*compiled, graph, *inputs, seed, &result.traffic);
  if (!actual.ok())
    return actual.status();
  absl::StatusOr<double> error = maxRelativeError(*actual, *expected);
  if (!error.ok())
    return error.status();
  result.maxRelativeError = *error;
  return result;
}

} // namespace pc::reference

//===- Evaluator.cpp - Running one function on one simulated device -------===//

#include "runtime/reference/Evaluator.h"

#include "absl/strings/str_cat.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace pc::reference::detail {

namespace {
int64_t elemBytesOf(Type t) { return elementBytes(t); }

absl::Status opError(Operation *op, const std::string &what) {
  return absl::InvalidArgumentError(
      absl::StrCat("'", op->getName().getStringRef().str(), "': ", what));
}

} // namespace

Shape shapeOf(Type t) {
  auto s = cast<RankedTensorType>(t).getShape();
  return Shape(s.begin(), s.end());
}

Array pieceOf(const Array &logical, SbpAttr sbp, ArrayRef<int64_t> meshShape,
              ArrayRef<int64_t> coords) {
  Box box = localBox(logical.shape, meshShape, sbp.getEntries(), coords);
  Array piece = slice(logical, box.offsets, box.sizes);
  for (auto [axis, e] : llvm::enumerate(sbp.getEntries()))
    if (e.isPartial() && e.reduce == ReduceKind::Sum && coords[axis] != 0)
      std::fill(piece.data.begin(), piece.data.end(), 0.0);
  return piece;
}

SmallVector<int64_t, 4> Evaluator::coordsOn(FlatSymbolRefAttr mesh) {
  MeshOp m = meshes.lookup(mesh);
  std::vector<int64_t> c =
      delinearize(m.getShape(), meshes.positionOf(mesh, rank));
  return SmallVector<int64_t, 4>(c.begin(), c.end());
}

std::pair<std::vector<int64_t>, int64_t>
Evaluator::group(FlatSymbolRefAttr mesh, ArrayRef<int64_t> axes) {
  MeshOp m = meshes.lookup(mesh);
  SmallVector<int64_t, 4> c = coordsOn(mesh);
  std::vector<int64_t> ranks;
  for (int64_t p : groupMembers(m.getShape(), c, axes))
    ranks.push_back(m.getRank(p));
  return {ranks, groupIndex(m.getShape(), c, axes)};
}

absl::StatusOr<std::vector<Array>> Evaluator::exchange(FlatSymbolRefAttr mesh,
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

std::vector<int64_t> Evaluator::extents(FlatSymbolRefAttr mesh,
                                        ArrayRef<int64_t> axes, int64_t whole) {
  return groupExtents(whole, meshes.lookup(mesh).getShape(), axes);
}

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
    // Counted as the ring moves it (boxing/CostModel.h).
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

absl::Status Evaluator::evalRedistribute(RedistributeOp op) {
  if (!distributed())
    return opError(op, "runs only per device");
  // By what it means, not by the runtime's pairing: every element of this
  // device's new piece is taken from a device whose old piece holds it.
  SbpAttr from = getSbp(op.getFrom()), to = getSbp(op.getTo());
  ArrayRef<int64_t> meshShape = meshes.lookup(from).getShape();
  SmallVector<int64_t> axes;
  for (size_t a = 0; a < meshShape.size(); ++a)
    axes.push_back(a);
  int64_t index = 0;
  auto parts = exchange(from.getMesh(), axes, valueOf(op.getInput()), index);
  if (!parts.ok())
    return parts.status();
  Shape shape = shapeOf(op.getFrom());
  Box want = localBox(shape, meshShape, to.getEntries(),
                      delinearize(meshShape, index));
  Box mine = localBox(shape, meshShape, from.getEntries(),
                      delinearize(meshShape, index));
  Array out = Array::zeros(want.sizes);
  for (size_t q = 0; q < parts->size(); ++q) {
    Box have = localBox(shape, meshShape, from.getEntries(),
                        delinearize(meshShape, q));
    Box part = boxing::intersect(have, want);
    if (product(part.sizes) == 0)
      continue;
    Shape at(shape.size()), into(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      at[d] = part.offsets[d] - have.offsets[d];
      into[d] = part.offsets[d] - want.offsets[d];
    }
    place(out, slice((*parts)[q], at, part.sizes), into);
  }
  env[op.getResult()] = std::move(out);
  world->record(rank, "redistribute",
                (product(want.sizes) - boxing::overlapVolume(mine, want)) *
                    elemBytesOf(op.getFrom()));
  return absl::OkStatus();
}

absl::Status Evaluator::evalTransfer(Operation *op, TypeAttr from, TypeAttr to,
                                     Value input, Value result) {
  // Every rank derives the same pairing of boxes from the two layouts.
  SbpAttr src = getSbp(from.getValue()), dst = getSbp(to.getValue());
  Shape shape = shapeOf(from.getValue());
  // As the compiler planned it (Partition): with the module's costs.
  boxing::Planner planner(costParams(meshes.getModule()));
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
        if (params)
          if (auto it = params->find(get.getName().str());
              it != params->end()) {
            env[get] = it->second;
            return absl::OkStatus();
          }
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
      .Case([&](RedistributeOp r) { return evalRedistribute(r); })
      .Case([&](SendOp send) {
        return evalTransfer(op, send.getFromAttr(), send.getToAttr(),
                            send.getInput(), Value());
      })
      .Case([&](RecvOp recv) {
        return evalTransfer(op, recv.getFromAttr(), recv.getToAttr(), Value(),
                            recv.getResult());
      })
      .Case([&](MatmulOp m) {
        Array r = matmul(in(0), in(1), m.getTransposeLhs(), m.getTransposeRhs(),
                         shapeOf(m.getType()));
        if (double alpha = m.getScale(); alpha != 1.0)
          for (double &v : r.data)
            v *= alpha;
        if (m.getAddend())
          r = broadcastBinary(r, in(2), r.shape,
                              [](double p, double a) { return p + a; });
        set(std::move(r));
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
      .Case(
          [&](SqrtOp) { return unary([](double x) { return std::sqrt(x); }); })
      .Case([&](ErfOp) { return unary([](double x) { return std::erf(x); }); })
      .Case([&](CompareOp c) {
        Comparison p = c.getPredicate();
        return binary([p](double a, double b) {
          switch (p) {
          case Comparison::eq:
            return a == b ? 1.0 : 0.0;
          case Comparison::ne:
            return a != b ? 1.0 : 0.0;
          case Comparison::lt:
            return a < b ? 1.0 : 0.0;
          case Comparison::le:
            return a <= b ? 1.0 : 0.0;
          case Comparison::gt:
            return a > b ? 1.0 : 0.0;
          case Comparison::ge:
            return a >= b ? 1.0 : 0.0;
          }
          return 0.0;
        });
      })
      .Case([&](OneHotOp o) {
        set(oneHot(in(0), shapeOf(o.getType()).back()));
        return absl::OkStatus();
      })
      .Case([&](EmbeddingGradOp e) {
        set(embeddingGrad(in(0), in(1), shapeOf(e.getType())[0]));
        return absl::OkStatus();
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
      .Case([&](AdamUpdateOp a) {
        double b1 = a.getBeta1().convertToDouble(),
               b2 = a.getBeta2().convertToDouble(),
               eps = a.getEpsilon().convertToDouble(),
               wd = a.getWeightDecay().convertToDouble();
        double lr = in(4).data[0], c1 = in(5).data[0], c2 = in(6).data[0];
        Array w = in(0), m = in(2), v = in(3);
        const Array &g = in(1);
        for (int64_t i = 0; i < w.size(); ++i) {
          m.data[i] = m.data[i] * b1 + g.data[i] * (1 - b1);
          v.data[i] = v.data[i] * b2 + g.data[i] * g.data[i] * (1 - b2);
          double step = m.data[i] / c1 / (std::sqrt(v.data[i] / c2) + eps) +
                        wd * w.data[i];
          w.data[i] -= lr * step;
        }
        env[op->getResult(0)] = std::move(w);
        env[op->getResult(1)] = std::move(m);
        env[op->getResult(2)] = std::move(v);
        return absl::OkStatus();
      })
      .Case([&](GeluGradOp g) {
        bool approx = g.getApproximate();
        return binary([approx](double dy, double x) {
          if (approx) {
            double k = std::sqrt(2 / M_PI), c = 0.044715;
            double t = std::tanh(k * (x + c * x * x * x));
            return dy * (0.5 * (1 + t) +
                         0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x));
          }
          return dy * (0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
                       x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI));
        });
      })
      .Case([&](LayerNormGradOp n) {
        int64_t rank = in(0).shape.size();
        set(layerNormGrad(in(0), in(1), in(2),
                          (int64_t(n.getAxis()) + rank) % rank,
                          n.getEpsilon().convertToDouble()));
        return absl::OkStatus();
      })
      .Case([&](LayerNormScaleGradOp n) {
        int64_t rank = in(0).shape.size();
        set(layerNormScaleGrad(in(0), in(1),
                               (int64_t(n.getAxis()) + rank) % rank,
                               n.getEpsilon().convertToDouble()));
        return absl::OkStatus();
      })
      .Case([&](SoftmaxGradOp s) {
        int64_t rank = in(0).shape.size();
        int64_t axis = (int64_t(s.getAxis()) + rank) % rank;
        if (!s.getCausal()) {
          set(softmaxGrad(in(0), in(1), axis));
          return absl::OkStatus();
        }
        // Causal, by definition: the full form over the entries on and
        // below the diagonal (the others read as 0), and 0 above it.
        set(causalMask(
            softmaxGrad(causalMask(in(0), true), causalMask(in(1), true), axis),
            true));
        return absl::OkStatus();
      })
      .Case([&](CastOp) {
        return unary(
            [intResult](double x) { return intResult ? std::trunc(x) : x; });
      })
      .Case([&](SoftmaxOp s) {
        int64_t rank = in(0).shape.size();
        // Causal: the definition, the softmax of the masked input.
        set(softmax(s.getCausal() ? causalMask(in(0)) : in(0),
                    (int64_t(s.getAxis()) + rank) % rank, false));
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
      .Case([&](AfterOp) {
        set(in(0));
        return absl::OkStatus();
      })
      .Case([&](CopyOp) {
        set(in(0));
        return absl::OkStatus();
      })
      .Case([&](SelectOp) {
        set(in(0).data.at(0) != 0 ? in(1) : in(2));
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
      .Case([&](CausalMaskOp m) {
        set(causalMask(in(0), m.getZero()));
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

} // namespace pc::reference::detail

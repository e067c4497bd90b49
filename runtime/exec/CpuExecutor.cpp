//===- CpuExecutor.cpp - Per-device programs on CPU virtual devices -------===//

#include "runtime/exec/CpuExecutor.h"

#include "dialect/PcOps.h"
#include "passes/BoxingPlanner.h"
#include "passes/PassUtils.h"
#include "runtime/comm/BoxingSteps.h"
#include "runtime/cpu/SharedMemoryComm.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/reference/Interpreter.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "llvm/ADT/TypeSwitch.h"

#include <chrono>
#include <cstring>
#include <thread>

using namespace mlir;

namespace pc::runtime {
namespace {

using Shape = std::vector<int64_t>;

Shape shapeOf(Type t) {
  auto s = cast<RankedTensorType>(t).getShape();
  return Shape(s.begin(), s.end());
}

absl::StatusOr<CommType> typeOf(Type t) {
  Type e = cast<RankedTensorType>(t).getElementType();
  if (e.isF32())
    return CommType::F32;
  if (e.isInteger(64))
    return CommType::I64;
  if (e.isInteger(32))
    return CommType::I32;
  std::string name;
  llvm::raw_string_ostream os(name);
  os << e;
  return absl::UnimplementedError(absl::StrCat(
      "the CPU backend runs f32, i32 and i64 tensors for now, not ", name));
}

double readAt(const HostTensor &t, int64_t i) {
  switch (t.type) {
  case CommType::F32:
    return t.as<float>()[i];
  case CommType::F64:
    return t.as<double>()[i];
  case CommType::I32:
    return t.as<int32_t>()[i];
  case CommType::I64:
    return static_cast<double>(t.as<int64_t>()[i]);
  }
  return 0;
}

void writeAt(HostTensor &t, int64_t i, double v) {
  switch (t.type) {
  case CommType::F32:
    t.as<float>()[i] = static_cast<float>(v);
    break;
  case CommType::F64:
    t.as<double>()[i] = v;
    break;
  case CommType::I32:
    t.as<int32_t>()[i] = static_cast<int32_t>(v);
    break;
  case CommType::I64:
    t.as<int64_t>()[i] = static_cast<int64_t>(v);
    break;
  }
}

/// Broadcasting elementwise op on any type, element by element; the f32
/// kernels cover the hot float cases.
HostTensor generic(const HostTensor &a, const HostTensor *b, const Shape &shape,
                   CommType type,
                   const std::function<double(double, double)> &fn) {
  HostTensor out = HostTensor::zeros(shape, type);
  auto strides = [](const Shape &s) {
    Shape st(s.size(), 1);
    for (size_t i = s.size(); i-- > 1;)
      st[i - 1] = st[i] * s[i];
    return st;
  };
  auto offsetOf = [&](const HostTensor &t, const Shape &st, const Shape &idx) {
    int64_t off = idx.size() - t.shape.size(), linear = 0;
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (t.shape[d] != 1)
        linear += idx[d + off] * st[d];
    return linear;
  };
  Shape sa = strides(a.shape), sb = b ? strides(b->shape) : Shape();
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    Shape idx = delinearize(shape, i);
    double x = readAt(a, offsetOf(a, sa, idx));
    double y = b ? readAt(*b, offsetOf(*b, sb, idx)) : 0;
    writeAt(out, i, fn(x, y));
  }
  return out;
}

/// `logical`'s piece at `coords` in `sbp`: its box, zeros on all but the
/// first member of sum partials.
HostTensor pieceOf(const HostTensor &logical, SbpAttr sbp,
                   ArrayRef<int64_t> meshShape, ArrayRef<int64_t> coords) {
  Box box = localBox(logical.shape, meshShape, sbp.getEntries(), coords);
  HostTensor t = HostTensor::zeros(box.sizes, logical.type);
  copyBox(logical.bytes.data(), logical.shape, box.offsets, t.bytes.data(),
          t.shape, Shape(t.shape.size(), 0), t.shape, sizeOf(logical.type));
  for (auto [axis, e] : llvm::enumerate(sbp.getEntries()))
    if (e.isPartial() && e.reduce == ReduceKind::Sum && coords[axis] != 0)
      std::fill(t.bytes.begin(), t.bytes.end(), 0);
  return t;
}

class Device {
public:
  Device(ModuleOp module, CpuSession &session, int64_t rank, Communicator &comm)
      : module(module), meshes(module), session(session), rank(rank),
        comm(comm) {}

  absl::StatusOr<std::vector<HostTensor>>
  run(func::FuncOp f, std::vector<HostTensor> args,
      std::chrono::steady_clock::time_point origin) {
    // A value dies after its last use; the live bytes give the peak.
    DenseMap<Operation *, SmallVector<Value>> dying;
    auto noteLastUse = [&](Value v) {
      Operation *last = nullptr;
      for (Operation *user : v.getUsers())
        if (!last || last->isBeforeInBlock(user))
          last = user;
      if (last)
        dying[last].push_back(v);
    };
    for (auto [arg, value] : llvm::zip(f.getArguments(), args)) {
      live += value.bytes.size();
      env[arg] = std::make_shared<const HostTensor>(std::move(value));
      noteLastUse(arg);
    }
    peak = live;
    for (Operation &op : f.getBody().front()) {
      auto start = std::chrono::steady_clock::now();
      if (absl::Status s = eval(&op); !s.ok()) {
        // Name the op and where the user wrote it: the per-device program
        // keeps the logical op's location.
        std::string where;
        llvm::raw_string_ostream os(where);
        os << op.getLoc();
        absl::Status named(s.code(),
                           absl::StrCat("rank ", rank, ": '",
                                        op.getName().getStringRef().str(),
                                        "' at ", where, ": ", s.message()));
        s.ForEachPayload([&](absl::string_view url, const absl::Cord &p) {
          named.SetPayload(url, p);
        });
        return named;
      }
      auto end = std::chrono::steady_clock::now();
      using us = std::chrono::duration<double, std::micro>;
      events.push_back({op.getName().getStringRef().str(),
                        us(start - origin).count(), us(end - start).count()});
      for (Value r : op.getResults()) {
        noteLastUse(r);
        if (auto it = env.find(r); it != env.end())
          live += it->second->bytes.size();
      }
      peak = std::max(peak, live);
      for (Value v : dying.lookup(&op))
        if (auto it = env.find(v); it != env.end()) {
          live -= it->second->bytes.size();
          env.erase(it);
        }
    }
    return std::move(results);
  }

  int64_t peakBytes() const { return peak; }
  std::vector<OpEvent> takeEvents() { return std::move(events); }

private:
  absl::Status eval(Operation *op);
  absl::Status evalStep(Operation *op);
  /// This rank's side of a transfer between meshes: sends its boxes of
  /// `input`, or receives its boxes into `output`.
  absl::Status transfer(TypeAttr from, TypeAttr to, const HostTensor *input,
                        HostTensor *output);
  Shape coordsOn(FlatSymbolRefAttr mesh) {
    return delinearize(meshes.lookup(mesh).getShape(),
                       meshes.positionOf(mesh, rank));
  }
  MeshView viewOf(FlatSymbolRefAttr mesh) {
    MeshOp m = meshes.lookup(mesh);
    MeshView v{Shape(m.getShape().begin(), m.getShape().end()), {}};
    for (int64_t p = 0; p < m.getNumDevices(); ++p)
      v.ranks.push_back(m.getRank(p));
    return v;
  }

  ModuleOp module;
  MeshCache meshes;
  CpuSession &session;
  int64_t rank;
  Communicator &comm;
  DenseMap<Value, std::shared_ptr<const HostTensor>> env;
  std::map<std::string, int64_t> transferCount;
  int64_t live = 0, peak = 0;
  std::vector<OpEvent> events;
  std::vector<HostTensor> results;
};

absl::Status Device::transfer(TypeAttr from, TypeAttr to,
                              const HostTensor *input, HostTensor *output) {
  // Every rank derives the same pairing of boxes from the two layouts
  // (boxing::Planner::planTransfer); the k-th transfer of a (from, to) pair
  // is tag k.
  SbpAttr src = getSbp(from.getValue()), dst = getSbp(to.getValue());
  Shape shape = shapeOf(from.getValue());
  int64_t elem = elementBytes(from.getValue());
  boxing::Planner planner;
  boxing::TransferPlan plan = planner.planTransfer(
      shape, elem, meshInfo(meshes.lookup(src)), src.getEntries(),
      meshInfo(meshes.lookup(dst)), dst.getEntries());
  std::string pair;
  llvm::raw_string_ostream os(pair);
  os << from << "->" << to;
  int64_t tag = transferCount[pair + (input ? "/send" : "/recv")]++;
  tag = tag * 1000003 + static_cast<int64_t>(llvm::hash_value(pair) & 0xffff);
  MeshOp srcMesh = meshes.lookup(src), dstMesh = meshes.lookup(dst);
  const HostTensor &probe = input ? *input : *output;
  int64_t e = sizeOf(probe.type);
  auto relative = [](const Box &b, const Box &origin) {
    Shape off(b.offsets.size());
    for (size_t d = 0; d < off.size(); ++d)
      off[d] = b.offsets[d] - origin.offsets[d];
    return off;
  };
  if (input) {
    int64_t me = meshes.positionOf(src.getMesh(), rank);
    Box mine = localBox(shape, srcMesh.getShape(), src.getEntries(),
                        delinearize(srcMesh.getShape(), me));
    for (const boxing::Transfer &t : plan.transfers) {
      if (t.srcPosition != me)
        continue;
      HostTensor piece = HostTensor::zeros(t.box.sizes, input->type);
      copyBox(input->bytes.data(), input->shape, relative(t.box, mine),
              piece.bytes.data(), piece.shape, Shape(shape.size(), 0),
              t.box.sizes, e);
      if (absl::Status s =
              comm.send(piece.bytes.data(), piece.numel(), piece.type,
                        dstMesh.getRank(t.dstPosition), tag);
          !s.ok())
        return s;
    }
    return absl::OkStatus();
  }
  int64_t me = meshes.positionOf(dst.getMesh(), rank);
  Box mine = localBox(shape, dstMesh.getShape(), dst.getEntries(),
                      delinearize(dstMesh.getShape(), me));
  for (const boxing::Transfer &t : plan.transfers) {
    if (t.dstPosition != me)
      continue;
    HostTensor piece = HostTensor::zeros(t.box.sizes, output->type);
    if (absl::Status s =
            comm.recv(piece.bytes.data(), piece.numel(), piece.type,
                      srcMesh.getRank(t.srcPosition), tag);
        !s.ok())
      return s;
    copyBox(piece.bytes.data(), piece.shape, Shape(shape.size(), 0),
            output->bytes.data(), output->shape, relative(t.box, mine),
            t.box.sizes, e);
  }
  return absl::OkStatus();
}

absl::Status Device::evalStep(Operation *op) {
  auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
  const HostTensor &in = *env[op->getOperand(0)];
  Shape out = shapeOf(op->getResult(0).getType());
  TransitionKind kind;
  ReduceKind reduce = ReduceKind::Sum;
  bool fromBroadcast = true;
  int64_t dim = 0, dst = 0;
  if (auto ar = dyn_cast<AllReduceOp>(op)) {
    kind = TransitionKind::AllReduce;
    reduce = toReduceKind(ar.getReduce());
  } else if (auto ag = dyn_cast<AllGatherOp>(op)) {
    kind = TransitionKind::AllGather;
    dim = ag.getDim();
  } else if (auto rs = dyn_cast<ReduceScatterOp>(op)) {
    kind = TransitionKind::ReduceScatter;
    reduce = toReduceKind(rs.getReduce());
    dim = rs.getDim();
  } else if (auto a2a = dyn_cast<AllToAllOp>(op)) {
    kind = TransitionKind::AllToAll;
    dim = a2a.getSrcDim();
    dst = a2a.getDstDim();
  } else if (auto ls = dyn_cast<LocalSliceOp>(op)) {
    kind = TransitionKind::LocalSlice;
    dim = ls.getDim();
  } else {
    auto lp = cast<LocalPartialOp>(op);
    kind = TransitionKind::LocalPartial;
    reduce = toReduceKind(lp.getReduce());
    fromBroadcast = !lp.getDim();
    dim = lp.getDim().value_or(0);
  }
  absl::StatusOr<HostTensor> r =
      runLocalStep(comm, kind, reduce, fromBroadcast, axes, dim, dst,
                   viewOf(mesh), coordsOn(mesh), in, out);
  if (!r.ok())
    return r.status();
  env[op->getResult(0)] = std::make_shared<const HostTensor>(std::move(*r));
  return absl::OkStatus();
}

absl::Status Device::eval(Operation *op) {
  auto in = [&](unsigned i) -> const HostTensor & {
    return *env[op->getOperand(i)];
  };
  auto fresh = [&]() -> absl::StatusOr<HostTensor> {
    Type t = op->getResult(0).getType();
    absl::StatusOr<CommType> type = typeOf(t);
    if (!type.ok())
      return type.status();
    return HostTensor::zeros(shapeOf(t), *type);
  };
  auto done = [&](absl::Status s, HostTensor out) {
    if (s.ok())
      env[op->getResult(0)] =
          std::make_shared<const HostTensor>(std::move(out));
    return s;
  };
  auto kernel = [&](auto fn) -> absl::Status {
    absl::StatusOr<HostTensor> out = fresh();
    if (!out.ok())
      return out.status();
    absl::Status s = fn(*out);
    return done(s, std::move(*out));
  };
  auto isFloat = [&](unsigned i) { return in(i).type == CommType::F32; };
  auto binaryOp = [&](cpu::Binary b, std::function<double(double, double)> fn) {
    if (isFloat(0))
      return kernel(
          [&](HostTensor &o) { return cpu::binary(b, in(0), in(1), o); });
    absl::StatusOr<HostTensor> out = fresh();
    if (!out.ok())
      return out.status();
    return done(absl::OkStatus(),
                generic(in(0), &in(1), out->shape, out->type, fn));
  };
  auto unaryOp = [&](cpu::Unary u) {
    return kernel([&](HostTensor &o) { return cpu::unary(u, in(0), o); });
  };
  auto axisOf = [&](int64_t axis) {
    int64_t r = in(0).shape.size();
    return (axis + r) % r;
  };

  return llvm::TypeSwitch<Operation *, absl::Status>(op)
      .Case([&](func::ReturnOp ret) {
        for (Value v : ret.getOperands())
          results.push_back(*env[v]);
        return absl::OkStatus();
      })
      .Case([&](GetParamOp get) -> absl::Status {
        absl::StatusOr<std::shared_ptr<const HostTensor>> value =
            session.param(rank, get.getName(), get.getType());
        if (!value.ok())
          return value.status();
        env[get] = *value; // Shared, not copied: parameters are large.
        return absl::OkStatus();
      })
      .Case([&](ConstantOp c) -> absl::Status {
        auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        absl::StatusOr<HostTensor> out = fresh();
        if (!dense || !out.ok())
          return dense ? out.status()
                       : absl::InvalidArgumentError("pc.constant: not dense");
        for (int64_t i = 0; i < out->numel(); ++i) {
          int64_t j = dense.isSplat() ? 0 : i;
          writeAt(*out, i,
                  isa<FloatType>(dense.getElementType())
                      ? dense.getValues<APFloat>()[j].convertToDouble()
                      : static_cast<double>(
                            dense.getValues<APInt>()[j].getSExtValue()));
        }
        return done(absl::OkStatus(), std::move(*out));
      })
      .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, LocalSliceOp,
            LocalPartialOp>([&](Operation *) { return evalStep(op); })
      .Case([&](BroadcastOp b) -> absl::Status {
        HostTensor t = in(0);
        Shape c = coordsOn(b.getMeshAttr());
        MeshView v = viewOf(b.getMeshAttr());
        std::vector<int64_t> group;
        for (int64_t p : groupMembers(v.shape, c, b.getAxes()))
          group.push_back(v.ranks[p]);
        absl::Status s = comm.broadcast(t.bytes.data(), t.numel(), t.type,
                                        b.getRoot(), group);
        return done(s, std::move(t));
      })
      .Case([&](PieceOffsetOp p) {
        Shape c = coordsOn(p.getMeshAttr());
        int64_t idx = groupIndex(meshes.lookup(p.getMeshAttr()).getShape(), c,
                                 p.getAxes());
        HostTensor t = HostTensor::zeros({}, CommType::I64);
        for (int64_t i = 0; i < idx; ++i)
          t.as<int64_t>()[0] += p.getSizes()[i];
        return done(absl::OkStatus(), std::move(t));
      })
      .Case([&](MatmulOp m) {
        return kernel([&](HostTensor &o) {
          return cpu::matmul(in(0), in(1), m.getTransposeLhs(),
                             m.getTransposeRhs(), o);
        });
      })
      .Case([&](AddOp) {
        return binaryOp(cpu::Binary::Add,
                        [](double a, double b) { return a + b; });
      })
      .Case([&](SubOp) {
        return binaryOp(cpu::Binary::Sub,
                        [](double a, double b) { return a - b; });
      })
      .Case([&](MulOp) {
        return binaryOp(cpu::Binary::Mul,
                        [](double a, double b) { return a * b; });
      })
      .Case([&](DivOp) {
        return binaryOp(cpu::Binary::Div,
                        [](double a, double b) { return std::trunc(a / b); });
      })
      .Case([&](NegOp) {
        if (!isFloat(0))
          return done(absl::OkStatus(),
                      generic(in(0), nullptr, in(0).shape, in(0).type,
                              [](double a, double) { return -a; }));
        return unaryOp(cpu::Unary::Neg);
      })
      .Case([&](ExpOp) { return unaryOp(cpu::Unary::Exp); })
      .Case([&](LogOp) { return unaryOp(cpu::Unary::Log); })
      .Case([&](TanhOp) { return unaryOp(cpu::Unary::Tanh); })
      .Case([&](ReluOp) { return unaryOp(cpu::Unary::Relu); })
      .Case([&](SigmoidOp) { return unaryOp(cpu::Unary::Sigmoid); })
      .Case([&](GeluOp g) {
        return unaryOp(g.getApproximate() ? cpu::Unary::GeluTanh
                                          : cpu::Unary::Gelu);
      })
      .Case([&](SoftmaxOp s) {
        return kernel([&](HostTensor &o) {
          return cpu::softmax(in(0), axisOf(s.getAxis()), false, o);
        });
      })
      .Case([&](LogSoftmaxOp s) {
        return kernel([&](HostTensor &o) {
          return cpu::softmax(in(0), axisOf(s.getAxis()), true, o);
        });
      })
      .Case([&](LayerNormOp n) {
        return kernel([&](HostTensor &o) {
          return cpu::normalize(in(0), axisOf(n.getAxis()), in(1), &in(2),
                                n.getEpsilon().convertToDouble(), false, o);
        });
      })
      .Case([&](RmsNormOp n) {
        return kernel([&](HostTensor &o) {
          return cpu::normalize(in(0), axisOf(n.getAxis()), in(1), nullptr,
                                n.getEpsilon().convertToDouble(), true, o);
        });
      })
      .Case([&](ReduceSumOp r) {
        return kernel([&](HostTensor &o) {
          return cpu::reduce(cpu::Reduction::Sum, in(0), r.getAxes(), o);
        });
      })
      .Case([&](ReduceMeanOp r) {
        return kernel([&](HostTensor &o) {
          return cpu::reduce(cpu::Reduction::Mean, in(0), r.getAxes(), o);
        });
      })
      .Case([&](ReduceMaxOp r) {
        return kernel([&](HostTensor &o) {
          return cpu::reduce(cpu::Reduction::Max, in(0), r.getAxes(), o);
        });
      })
      .Case([&](ReshapeOp r) {
        HostTensor t = in(0);
        t.shape = shapeOf(r.getType());
        return done(absl::OkStatus(), std::move(t));
      })
      .Case([&](TransposeOp t) {
        return kernel([&](HostTensor &o) {
          return cpu::transpose(in(0), t.getPerm(), o);
        });
      })
      .Case([&](BroadcastToOp) {
        return done(absl::OkStatus(),
                    generic(in(0), nullptr, shapeOf(op->getResult(0).getType()),
                            in(0).type, [](double a, double) { return a; }));
      })
      .Case([&](SliceOp s) {
        return kernel([&](HostTensor &o) {
          copyBox(in(0).bytes.data(), in(0).shape, s.getStart(), o.bytes.data(),
                  o.shape, Shape(o.shape.size(), 0), o.shape, sizeOf(o.type));
          return absl::OkStatus();
        });
      })
      .Case([&](ConcatOp c) {
        return kernel([&](HostTensor &o) {
          Shape start(o.shape.size(), 0);
          int64_t axis =
              (int64_t(c.getAxis()) + o.shape.size()) % o.shape.size();
          for (Value v : c.getInputs()) {
            const HostTensor &part = *env[v];
            copyBox(part.bytes.data(), part.shape, Shape(part.shape.size(), 0),
                    o.bytes.data(), o.shape, start, part.shape, sizeOf(o.type));
            start[axis] += part.shape[axis];
          }
          return absl::OkStatus();
        });
      })
      .Case([&](EmbeddingOp e) {
        return kernel([&](HostTensor &o) {
          return cpu::embedding(in(0), in(1), e.getZeroOutOfRange(), o);
        });
      })
      .Case([&](CausalMaskOp) {
        return kernel([&](HostTensor &o) { return cpu::causalMask(in(0), o); });
      })
      .Case([&](CrossEntropyOp) {
        return kernel(
            [&](HostTensor &o) { return cpu::crossEntropy(in(0), in(1), o); });
      })
      .Case([&](PickLabelsOp) {
        return kernel(
            [&](HostTensor &o) { return cpu::pickLabels(in(0), in(1), o); });
      })
      .Case([&](CastOp) {
        return kernel([&](HostTensor &o) { return cpu::cast(in(0), o); });
      })
      .Case([&](SendOp send) {
        return transfer(send.getFromAttr(), send.getToAttr(), &in(0), nullptr);
      })
      .Case([&](RecvOp recv) -> absl::Status {
        absl::StatusOr<HostTensor> out = fresh();
        if (!out.ok())
          return out.status();
        absl::Status s =
            transfer(recv.getFromAttr(), recv.getToAttr(), nullptr, &*out);
        return done(s, std::move(*out));
      })
      .Default([&](Operation *) {
        return absl::UnimplementedError(
            "this op does not run on the CPU backend yet");
      });
}

} // namespace

absl::Status CpuSession::load(std::map<std::string, HostTensor> values) {
  for (auto p : module.getOps<ParamOp>()) {
    std::string name = p.getSymName().str();
    auto it = values.find(name);
    if (it == values.end())
      return absl::NotFoundError(
          absl::StrCat("the parameters have no tensor '", name, "'"));
    Shape shape = shapeOf(p.getType());
    absl::StatusOr<CommType> type = typeOf(p.getType());
    if (!type.ok())
      return type.status();
    if (it->second.shape != shape || it->second.type != *type)
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "' does not match @", name,
                       " (its shape or element type differs)"));
  }
  std::lock_guard<std::mutex> lock(mu);
  loaded = std::move(values);
  params.clear();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const HostTensor>>
CpuSession::param(int64_t rank, llvm::StringRef name, Type local) {
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(rank, name.str());
  auto it = params.find(key);
  if (it != params.end())
    return it->second;
  absl::StatusOr<CommType> type = typeOf(local);
  if (!type.ok())
    return type.status();
  // A loaded parameter is sliced from the file's tensor without copying the
  // whole of it first; a generated one is built in `generated`.
  HostTensor generated;
  const HostTensor *whole = &generated;
  if (auto l = loaded.find(name.str()); l != loaded.end()) {
    whole = &l->second;
  } else {
    absl::StatusOr<reference::Array> value =
        reference::initialParam(module, name, seed);
    if (!value.ok())
      return value.status();
    generated = HostTensor::zeros(value->shape, *type);
    for (int64_t i = 0; i < generated.numel(); ++i)
      writeAt(generated, i, value->data[i]);
  }
  auto p = module.lookupSymbol<ParamOp>(name);
  SbpAttr sbp = getSbp(p.getType());
  HostTensor piece;
  if (sbp && !getSbp(local)) {
    MeshCache meshes(module);
    MeshOp mesh = meshes.lookup(sbp);
    piece = pieceOf(
        *whole, sbp, mesh.getShape(),
        delinearize(mesh.getShape(), meshes.positionOf(sbp.getMesh(), rank)));
  } else {
    piece = whole == &generated ? std::move(generated) : *whole;
  }
  return params
      .emplace(key, std::make_shared<const HostTensor>(std::move(piece)))
      .first->second;
}

absl::StatusOr<CpuRun> runOnCpu(ModuleOp module, llvm::StringRef graph,
                                const std::vector<HostTensor> &inputs,
                                uint64_t seed) {
  CpuSession session(module, seed);
  return session.run(graph, inputs);
}

absl::StatusOr<CpuRun> CpuSession::run(llvm::StringRef graph,
                                       const std::vector<HostTensor> &inputs) {
  MeshCache meshes(module);
  struct Job {
    func::FuncOp program;
    int64_t rank;
    std::vector<HostTensor> args;
    absl::StatusOr<std::vector<HostTensor>> results = std::vector<HostTensor>{};
    CommStats stats;
    int64_t peak = 0;
    std::vector<OpEvent> events;
  };
  std::vector<Job> jobs;
  int64_t worldSize = 0;
  for (auto f : module.getOps<func::FuncOp>()) {
    auto g = f->getAttrOfType<StringAttr>("pc.graph");
    if (!g || g.getValue() != graph)
      continue;
    for (int64_t rank :
         f->getAttrOfType<DenseI64ArrayAttr>("pc.ranks").asArrayRef()) {
      worldSize = std::max(worldSize, rank + 1);
      Job job{f, rank, {}};
      for (BlockArgument arg : f.getArguments()) {
        unsigned i = arg.getArgNumber();
        int64_t index = f.getArgAttrOfType<IntegerAttr>(i, "pc.index").getInt();
        Type logical =
            f.getArgAttrOfType<TypeAttr>(i, "pc.logical_type").getValue();
        if (index >= static_cast<int64_t>(inputs.size()))
          return absl::InvalidArgumentError(absl::StrCat(
              "@", graph.str(), " needs input #", index, ", not given"));
        if (inputs[index].shape != shapeOf(logical))
          return absl::InvalidArgumentError(absl::StrCat(
              "input #", index, " has the wrong shape for @", graph.str()));
        SbpAttr sbp = getSbp(logical);
        MeshOp mesh = meshes.lookup(sbp);
        job.args.push_back(
            pieceOf(inputs[index], sbp, mesh.getShape(),
                    delinearize(mesh.getShape(),
                                meshes.positionOf(sbp.getMesh(), rank))));
      }
      jobs.push_back(std::move(job));
    }
  }
  if (jobs.empty())
    return absl::NotFoundError(
        absl::StrCat("no per-device programs of @", graph.str()));

  SharedMemoryWorld world(worldSize);
  std::vector<std::thread> threads;
  auto origin = std::chrono::steady_clock::now();
  for (Job &job : jobs)
    threads.emplace_back([&, j = &job] {
      auto comm = world.endpoint(j->rank);
      Device device(module, *this, j->rank, *comm);
      j->results = device.run(j->program, std::move(j->args), origin);
      if (!j->results.ok())
        world.abort(j->results.status());
      j->stats = comm->stats();
      j->peak = device.peakBytes();
      j->events = device.takeEvents();
    });
  for (std::thread &t : threads)
    t.join();
  // Report the cause, from the lowest rank that had one, not the ranks its
  // abort released from their collectives.
  for (Job &job : jobs)
    if (!job.results.ok() && !isReleasedByAbort(job.results.status()))
      return job.results.status();
  for (Job &job : jobs)
    if (!job.results.ok())
      return job.results.status();

  CpuRun run;
  std::map<int64_t, std::pair<Type, std::map<int64_t, HostTensor>>> pieces;
  for (Job &job : jobs) {
    run.comm[job.rank] = job.stats;
    run.peakBytes[job.rank] = job.peak;
    run.events[job.rank] = std::move(job.events);
    for (auto [i, value] : llvm::enumerate(*job.results)) {
      int64_t index =
          job.program.getResultAttrOfType<IntegerAttr>(i, "pc.index").getInt();
      pieces[index].first =
          job.program.getResultAttrOfType<TypeAttr>(i, "pc.logical_type")
              .getValue();
      pieces[index].second[job.rank] = value;
    }
  }
  for (auto &[index, entry] : pieces) {
    auto &[logical, byRank] = entry;
    SbpAttr sbp = getSbp(logical);
    MeshOp mesh = meshes.lookup(sbp);
    ArrayRef<int64_t> meshShape = mesh.getShape();
    int64_t n = mesh.getNumDevices();
    std::vector<HostTensor> at(n);
    for (int64_t p = 0; p < n; ++p)
      at[p] = byRank.at(mesh.getRank(p));
    at = reducePartials(
        std::move(at), meshShape, sbp.getEntries(),
        [](const std::vector<HostTensor> &members, ReduceKind kind) {
          HostTensor acc = members[0];
          for (size_t m = 1; m < members.size(); ++m)
            for (int64_t i = 0; i < acc.numel(); ++i) {
              double x = readAt(acc, i), y = readAt(members[m], i);
              writeAt(acc, i,
                      kind == ReduceKind::Max   ? std::max(x, y)
                      : kind == ReduceKind::Min ? std::min(x, y)
                                                : x + y);
            }
          if (kind == ReduceKind::Avg)
            for (int64_t i = 0; i < acc.numel(); ++i)
              writeAt(acc, i, readAt(acc, i) / members.size());
          return acc;
        });
    absl::StatusOr<CommType> type = typeOf(logical);
    if (!type.ok())
      return type.status();
    HostTensor whole = HostTensor::zeros(shapeOf(logical), *type);
    for (int64_t p = 0; p < n; ++p) {
      Box box = localBox(whole.shape, meshShape, sbp.getEntries(),
                         delinearize(meshShape, p));
      copyBox(at[p].bytes.data(), at[p].shape, Shape(box.sizes.size(), 0),
              whole.bytes.data(), whole.shape, box.offsets, box.sizes,
              sizeOf(*type));
    }
    run.results.push_back(std::move(whole));
  }
  return run;
}

} // namespace pc::runtime

//===- ComputeKernels.cpp - The compute ops' CPU kernels, registered ------===//
//
// Binds every compute op of a per-device program to the CPU kernels
// (runtime/kernels/CpuKernels.h): f32 natively, f16 and bf16 widened to f32
// (KernelRegistry::addWidening), and i32/i64 where the IR allows integers,
// through an exact element-by-element path.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/KernelRegistry.h"

#include "dialect/PcOps.h"
#include "runtime/device/HostTensor.h"
#include "runtime/exec/OpConstants.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/kernels/OneDnn.h"
#include "runtime/kernels/Quant8.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace mlir;

namespace pc::runtime {
namespace {

using Shape = std::vector<int64_t>;
using Inputs = std::span<const Tensor *const>;

/// The kind of device these kernels run on: their memory is the host's.
constexpr llvm::StringLiteral kCpu = "cpu";

/// A kernel with one result of `type`'s shape that `fn(inputs, out)` fills:
/// every kernel writes all of its result, so it is not zeroed first.
template <typename Fn>
absl::StatusOr<Kernel> produce(Type type, const BindContext &c, Fn fn) {
  absl::StatusOr<CommType> elem = resultType(type, c);
  if (!elem.ok())
    return elem.status();
  return Kernel([shape = shapeOf(type), elem = *elem, fn](KernelIO &io) {
    absl::StatusOr<std::shared_ptr<Tensor>> out =
        io.context.allocate(shape, elem);
    if (!out.ok())
      return out.status();
    if (absl::Status s = fn(io.inputs, **out); !s.ok())
      return s;
    io.outputs[0] = *std::move(out);
    return absl::OkStatus();
  });
}

bool isHalf(CommType t) { return t == CommType::F16 || t == CommType::BF16; }

/// Registers `factory`, written for f32, for f16 and bf16 too: the bound
/// kernel widens float inputs to f32, runs, and rounds float outputs back
/// to the op's type once.
void addWidening(KernelRegistry &r, llvm::StringRef op, KernelFactory factory) {
  r.add(kCpu, op, {CommType::F32}, StreamKind::Compute, factory);
  KernelFactory widened = [factory](Operation *o,
                                    BindContext &c) -> absl::StatusOr<Kernel> {
    // The inner kernel is bound as if the op's float types were f32.
    c.widen = true;
    absl::StatusOr<Kernel> inner = factory(o, c);
    c.widen = false;
    if (!inner.ok())
      return inner.status();
    std::vector<CommType> resultTypes;
    for (Type t : o->getResultTypes()) {
      absl::StatusOr<CommType> type = commTypeOf(t);
      if (!type.ok())
        return type.status();
      resultTypes.push_back(*type);
    }
    return Kernel([inner = *std::move(inner),
                   resultTypes](KernelIO &io) -> absl::Status {
      // Temporaries from the device, like any tensor.
      auto convert =
          [&](const Tensor &from,
              CommType to) -> absl::StatusOr<std::shared_ptr<Tensor>> {
        absl::StatusOr<std::shared_ptr<Tensor>> t =
            io.context.allocate(from.shape, to);
        if (t.ok())
          convertInto(from, **t);
        return t;
      };
      std::vector<std::shared_ptr<Tensor>> wide(io.inputs.size());
      std::vector<const Tensor *> in(io.inputs.begin(), io.inputs.end());
      for (size_t i = 0; i < in.size(); ++i)
        if (isHalf(in[i]->type)) {
          absl::StatusOr<std::shared_ptr<Tensor>> w =
              convert(*in[i], CommType::F32);
          if (!w.ok())
            return w.status();
          wide[i] = *std::move(w);
          in[i] = wide[i].get();
        }
      KernelIO inner32{io.context, in, {}, io.outputs};
      if (absl::Status s = inner(inner32); !s.ok())
        return s;
      wide.clear();
      for (size_t r = 0; r < resultTypes.size(); ++r)
        if (isHalf(resultTypes[r]) && io.outputs[r]->type != resultTypes[r]) {
          absl::StatusOr<std::shared_ptr<Tensor>> narrow =
              convert(*io.outputs[r], resultTypes[r]);
          if (!narrow.ok())
            return narrow.status();
          io.outputs[r] = *std::move(narrow);
        }
      return absl::OkStatus();
    });
  };
  r.add(kCpu, op, {CommType::F16, CommType::BF16}, StreamKind::Compute,
        widened);
}

/// A factory for ops whose kernel needs only the op itself: `make(op)`
/// returns fn(inputs, out).
template <typename Op, typename Make> KernelFactory simple(Make make) {
  return [make](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
    return produce(op->getResult(0).getType(), c, make(cast<Op>(op)));
  };
}

using IntFn = int64_t (*)(int64_t, int64_t);

/// The linear offset in `t` (broadcast NumPy-style into `idx`'s shape).
int64_t broadcastOffset(const Tensor &t, const Shape &strides,
                        const Shape &idx) {
  int64_t off = idx.size() - t.shape.size(), linear = 0;
  for (size_t d = 0; d < t.shape.size(); ++d)
    if (t.shape[d] != 1)
      linear += idx[d + off] * strides[d];
  return linear;
}

Shape stridesOf(const Shape &s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

int64_t readInt(const Tensor &t, int64_t i) {
  return t.type == CommType::I64 ? t.as<int64_t>()[i] : t.as<int32_t>()[i];
}

/// NumPy-broadcasting elementwise op on i32/i64, in 64-bit two's complement
/// arithmetic, wrapped to the result type as C++ integer types do.
void integerOp(const Tensor &a, const Tensor *b, Tensor &out, IntFn fn) {
  Shape sa = stridesOf(a.shape), sb = b ? stridesOf(b->shape) : Shape();
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    Shape idx = delinearize(out.shape, i);
    int64_t x = readInt(a, broadcastOffset(a, sa, idx));
    int64_t y = b ? readInt(*b, broadcastOffset(*b, sb, idx)) : 0;
    int64_t z = fn(x, y);
    if (out.type == CommType::I64)
      out.as<int64_t>()[i] = z;
    else
      out.as<int32_t>()[i] = static_cast<int32_t>(static_cast<uint32_t>(z));
  }
}

/// Wrapping arithmetic without signed overflow.
int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }

void addBinary(KernelRegistry &r, llvm::StringRef name, cpu::Binary op,
               IntFn fn) {
  KernelFactory f = [op, fn](Operation *o,
                             BindContext &c) -> absl::StatusOr<Kernel> {
    return produce(o->getResult(0).getType(), c,
                   [op, fn](Inputs in, Tensor &out) {
                     if (out.type == CommType::F32)
                       return cpu::binary(op, *in[0], *in[1], out);
                     integerOp(*in[0], in[1], out, fn);
                     return absl::OkStatus();
                   });
  };
  addWidening(r, name, f);
  r.add(kCpu, name, {CommType::I32, CommType::I64}, StreamKind::Compute, f);
}

void addUnary(KernelRegistry &r, llvm::StringRef name, cpu::Unary op,
              IntFn integer = nullptr) {
  KernelFactory f = [op, integer](Operation *o,
                                  BindContext &c) -> absl::StatusOr<Kernel> {
    Type type = o->getResult(0).getType();
    cpu::UnaryPlan plan(op, product(shapeOf(type)));
    return produce(type, c, [op, integer, plan](Inputs in, Tensor &out) {
      if (out.type == CommType::F32 || !integer)
        return plan.run(*in[0], out);
      integerOp(*in[0], nullptr, out, integer);
      return absl::OkStatus();
    });
  };
  addWidening(r, name, f);
  if (integer)
    r.add(kCpu, name, {CommType::I32, CommType::I64}, StreamKind::Compute, f);
}

/// `count` copies of the `bytes`-byte element at `src` from `dst` on.
void fillElement(char *dst, const char *src, int64_t count, int64_t bytes) {
  auto fill = [&](auto word) {
    std::memcpy(&word, src, sizeof(word));
    std::fill_n(reinterpret_cast<decltype(word) *>(dst), count, word);
  };
  switch (bytes) {
  case 2:
    return fill(uint16_t());
  case 4:
    return fill(uint32_t());
  case 8:
    return fill(uint64_t());
  default:
    for (int64_t i = 0; i < count; ++i)
      std::memcpy(dst + i * bytes, src, bytes);
  }
}

/// Replicates `in` NumPy-style into `out`'s shape, element bytes exactly.
/// The output is written in order, in runs: the trailing dims the input
/// has whole are one copy, and a broadcast last dim is one fill, so that
/// the cost per element is a store (a gradient of a mean broadcasts a row
/// of scalars over the row).
void broadcastBytes(const Tensor &in, Tensor &out) {
  const int64_t e = sizeOf(in.type);
  const size_t rank = out.shape.size();
  if (out.numel() == 0)
    return;
  // The input's dims aligned to the output's, and their strides in
  // elements: 0 where a dim broadcasts.
  Shape dims(rank, 1), strides(rank, 0);
  Shape st = stridesOf(in.shape);
  size_t lead = rank - in.shape.size();
  for (size_t d = 0; d < in.shape.size(); ++d) {
    dims[lead + d] = in.shape[d];
    strides[lead + d] = in.shape[d] == 1 ? 0 : st[d];
  }
  size_t outer = rank;
  int64_t chunk = 1, run = 1;
  while (outer > 0 && dims[outer - 1] == out.shape[outer - 1])
    chunk *= out.shape[--outer];
  if (chunk == 1 && outer > 0)
    run = out.shape[--outer]; // the last dim broadcasts one element
  char *dst = out.data();
  Shape idx(outer, 0);
  int64_t from = 0; // the input's element for idx
  for (int64_t i = 0, n = out.numel() / (chunk * run); i < n; ++i) {
    const char *src = in.data() + from * e;
    if (run > 1)
      fillElement(dst, src, run, e);
    else
      std::memcpy(dst, src, chunk * e);
    dst += chunk * run * e;
    for (size_t d = outer; d-- > 0;) {
      from += strides[d];
      if (++idx[d] < out.shape[d])
        break;
      from -= strides[d] * out.shape[d];
      idx[d] = 0;
    }
  }
}

} // namespace

void registerViewKernels(KernelRegistry &r, llvm::StringRef kind) {
  r.add(kind, "pc.reshape", kAllTypes, StreamKind::Compute,
        [](Operation *op, BindContext &) -> absl::StatusOr<Kernel> {
          Shape shape = shapeOf(op->getResult(0).getType());
          // A view of the input's memory: no bytes move.
          return Kernel([shape](KernelIO &io) {
            io.outputs[0] = std::make_shared<Tensor>(
                Tensor::reshaped(io.sharedInputs[0], shape));
            return absl::OkStatus();
          });
        });
  r.add(kind, "pc.after", kAllTypes, StreamKind::Compute,
        [](Operation *, BindContext &) -> absl::StatusOr<Kernel> {
          // The input itself, once the dependency (only waited for) is
          // there.
          return Kernel([](KernelIO &io) {
            io.outputs[0] = io.sharedInputs[0];
            return absl::OkStatus();
          });
        });
}

namespace {

/// Ops that only move bytes: any element type, no widening.
void registerDataMovement(KernelRegistry &r) {
  registerViewKernels(r, kCpu);
  // A copy into the memory of the actor's side (host for an op marked
  // pc.host, else the device), on the copy stream. CPU memory is host
  // memory: a plain copy.
  for (std::initializer_list<CommType> types : {kAllTypes, {CommType::U8}})
    r.add(kCpu, "pc.copy", types, StreamKind::Copy,
          [](Operation *op, BindContext &) -> absl::StatusOr<Kernel> {
            absl::StatusOr<CommType> type =
                commTypeOf(op->getResult(0).getType());
            if (!type.ok())
              return type.status();
            return Kernel([shape = shapeOf(op->getResult(0).getType()),
                           type = *type](KernelIO &io) -> absl::Status {
              absl::StatusOr<std::shared_ptr<Tensor>> out =
                  io.context.allocate(shape, type);
              if (!out.ok())
                return out.status();
              std::memcpy((*out)->data(), io.inputs[0]->data(),
                          (*out)->byteSize());
              io.outputs[0] = *std::move(out);
              return absl::OkStatus();
            });
          });
  // One of two inputs passed on whole (its memory, no bytes moved), so a
  // NaN in the other never reaches the result.
  for (std::initializer_list<CommType> types : {kAllTypes, {CommType::U8}})
    r.add(kCpu, "pc.select", types, StreamKind::Compute,
          [](Operation *, BindContext &) -> absl::StatusOr<Kernel> {
            return Kernel([](KernelIO &io) {
              bool pick = TensorView(*io.inputs[0]).get(0) != 0;
              io.outputs[0] = io.sharedInputs[pick ? 1 : 2];
              return absl::OkStatus();
            });
          });
  r.add(kCpu, "pc.transpose", kAllTypes, StreamKind::Compute,
        [](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
          auto t = cast<TransposeOp>(op);
          absl::StatusOr<CommType> type = commTypeOf(t.getType());
          if (!type.ok())
            return type.status();
          cpu::TransposePlan plan(
              shapeOf(t.getInput().getType()),
              std::vector<int64_t>(t.getPerm().begin(), t.getPerm().end()),
              sizeOf(*type));
          return produce(t.getType(), c, [plan](Inputs in, Tensor &out) {
            return plan.run(*in[0], out);
          });
        });
  r.add(kCpu, "pc.broadcast_to", kAllTypes, StreamKind::Compute,
        simple<BroadcastToOp>([](BroadcastToOp) {
          return [](Inputs in, Tensor &out) {
            broadcastBytes(*in[0], out);
            return absl::OkStatus();
          };
        }));
  r.add(kCpu, "pc.slice", kAllTypes, StreamKind::Compute,
        simple<SliceOp>([](SliceOp s) {
          Shape start(s.getStart().begin(), s.getStart().end());
          return [start](Inputs in, Tensor &out) {
            copyBox(in[0]->data(), in[0]->shape, start, out.data(), out.shape,
                    Shape(out.shape.size(), 0), out.shape, sizeOf(out.type));
            return absl::OkStatus();
          };
        }));
  r.add(kCpu, "pc.concat", kAllTypes, StreamKind::Compute,
        simple<ConcatOp>([](ConcatOp c) {
          int64_t axis = c.getAxis();
          return [axis](Inputs in, Tensor &out) {
            Shape start(out.shape.size(), 0);
            int64_t a = axisIn(axis, out.shape.size());
            for (const Tensor *part : in) {
              copyBox(part->data(), part->shape, Shape(part->shape.size(), 0),
                      out.data(), out.shape, start, part->shape,
                      sizeOf(out.type));
              start[a] += part->shape[a];
            }
            return absl::OkStatus();
          };
        }));
  r.add(kCpu, "pc.cast", kAllTypes, StreamKind::Compute,
        simple<CastOp>([](CastOp) {
          return [](Inputs in, Tensor &out) { return cpu::cast(*in[0], out); };
        }));
  r.add(kCpu, "pc.constant", kAllTypes, StreamKind::Compute,
        [](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
          auto dense =
              dyn_cast<DenseElementsAttr>(cast<ConstantOp>(op).getValue());
          if (!dense)
            return absl::InvalidArgumentError("the value is not dense");
          absl::StatusOr<CommType> type =
              commTypeOf(op->getResult(0).getType());
          if (!type.ok())
            return type.status();
          // Materialized once, on the device; every firing shares it.
          absl::StatusOr<std::shared_ptr<Tensor>> made =
              c.tensors.allocate(shapeOf(op->getResult(0).getType()), *type);
          if (!made.ok())
            return made.status();
          fillConstant(dense, TensorView(**made));
          return Kernel([value = std::shared_ptr<const Tensor>(
                             *std::move(made))](KernelIO &io) {
            io.outputs[0] = value;
            return absl::OkStatus();
          });
        });
}

} // namespace

void registerCpuComputeKernels(KernelRegistry &r) {
  registerDataMovement(r);
  addWidening(r, "pc.matmul", simple<MatmulOp>([](MatmulOp m) {
                std::optional<Shape> addend;
                if (Value c = m.getAddend())
                  addend = shapeOf(c.getType());
                cpu::MatmulPlan plan(shapeOf(m.getLhs().getType()),
                                     shapeOf(m.getRhs().getType()),
                                     m.getTransposeLhs(), m.getTransposeRhs(),
                                     shapeOf(m.getType()),
                                     static_cast<float>(m.getScale()), addend);
                return [plan](Inputs in, Tensor &out) {
                  if (in.size() > 2) {
                    TensorView c(*in[2]);
                    return plan.run(*in[0], *in[1], &c, out);
                  }
                  return plan.run(*in[0], *in[1], out);
                };
              }));
  addBinary(r, "pc.add", cpu::Binary::Add, [](int64_t a, int64_t b) {
    return wrap(uint64_t(a) + uint64_t(b));
  });
  addBinary(r, "pc.sub", cpu::Binary::Sub, [](int64_t a, int64_t b) {
    return wrap(uint64_t(a) - uint64_t(b));
  });
  addBinary(r, "pc.mul", cpu::Binary::Mul, [](int64_t a, int64_t b) {
    return wrap(uint64_t(a) * uint64_t(b));
  });
  // Integer division truncates, as in C; by zero it is 0 (and the one
  // overflowing quotient wraps) rather than undefined.
  addBinary(r, "pc.div", cpu::Binary::Div, [](int64_t a, int64_t b) {
    return b == 0 ? 0 : b == -1 ? wrap(0 - uint64_t(a)) : a / b;
  });
  addUnary(r, "pc.neg", cpu::Unary::Neg,
           [](int64_t a, int64_t) { return wrap(0 - uint64_t(a)); });
  addUnary(r, "pc.relu", cpu::Unary::Relu,
           [](int64_t a, int64_t) { return a > 0 ? a : 0; });
  addUnary(r, "pc.exp", cpu::Unary::Exp);
  addUnary(r, "pc.log", cpu::Unary::Log);
  addUnary(r, "pc.tanh", cpu::Unary::Tanh);
  addUnary(r, "pc.sigmoid", cpu::Unary::Sigmoid);
  addUnary(r, "pc.sqrt", cpu::Unary::Sqrt);
  addUnary(r, "pc.erf", cpu::Unary::Erf);
  addWidening(r, "pc.compare", simple<CompareOp>([](CompareOp c) {
                cpu::Comparison p =
                    static_cast<cpu::Comparison>(c.getPredicate());
                return [p](Inputs in, Tensor &out) {
                  return cpu::compare(p, *in[0], *in[1], out);
                };
              }));
  addWidening(r, "pc.one_hot", simple<OneHotOp>([](OneHotOp) {
                return [](Inputs in, Tensor &out) {
                  return cpu::oneHot(*in[0], out);
                };
              }));
  addWidening(r, "pc.embedding_grad",
              simple<EmbeddingGradOp>([](EmbeddingGradOp) {
                return [](Inputs in, Tensor &out) {
                  return cpu::embeddingGrad(*in[0], *in[1], out);
                };
              }));
  addWidening(r, "pc.gelu", simple<GeluOp>([](GeluOp g) {
                cpu::UnaryPlan plan(g.getApproximate() ? cpu::Unary::GeluTanh
                                                       : cpu::Unary::Gelu,
                                    product(shapeOf(g.getType())));
                return [plan](Inputs in, Tensor &out) {
                  return plan.run(*in[0], out);
                };
              }));
  for (bool log : {false, true})
    addWidening(r, log ? "pc.log_softmax" : "pc.softmax",
                [log](Operation *op, BindContext &c) {
                  int64_t axis =
                      op->getAttrOfType<IntegerAttr>("axis").getInt();
                  Type type = op->getResult(0).getType();
                  Shape shape = shapeOf(type);
                  cpu::SoftmaxPlan plan(shape, axisIn(axis, shape.size()), log,
                                        op->hasAttr("causal"));
                  return produce(type, c, [plan](Inputs in, Tensor &out) {
                    return plan.run(*in[0], out);
                  });
                });
  addWidening(r, "pc.layer_norm", simple<LayerNormOp>([](LayerNormOp n) {
                int64_t axis = n.getAxis();
                float eps = n.getEpsilon().convertToDouble();
                return [axis, eps](Inputs in, Tensor &out) {
                  TensorView beta(*in[2]);
                  return cpu::normalize(*in[0],
                                        axisIn(axis, in[0]->shape.size()),
                                        *in[1], &beta, eps, false, out);
                };
              }));
  addWidening(r, "pc.rms_norm", simple<RmsNormOp>([](RmsNormOp n) {
                int64_t axis = n.getAxis();
                float eps = n.getEpsilon().convertToDouble();
                return [axis, eps](Inputs in, Tensor &out) {
                  return cpu::normalize(*in[0],
                                        axisIn(axis, in[0]->shape.size()),
                                        *in[1], nullptr, eps, true, out);
                };
              }));
  struct Reduce {
    const char *name;
    cpu::Reduction kind;
    bool integers;
  };
  for (Reduce red : {Reduce{"pc.reduce_sum", cpu::Reduction::Sum, true},
                     Reduce{"pc.reduce_mean", cpu::Reduction::Mean, false},
                     Reduce{"pc.reduce_max", cpu::Reduction::Max, true}}) {
    KernelFactory f = [kind = red.kind](Operation *op, BindContext &c) {
      auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
      Shape a(axes.begin(), axes.end());
      return produce(op->getResult(0).getType(), c,
                     [kind, a](Inputs in, Tensor &out) {
                       return cpu::reduce(kind, *in[0], a, out);
                     });
    };
    addWidening(r, red.name, f);
    if (red.integers)
      r.add(kCpu, red.name, {CommType::I32, CommType::I64}, StreamKind::Compute,
            f);
  }
  addWidening(r, "pc.embedding", simple<EmbeddingOp>([](EmbeddingOp e) {
                bool zero = e.getZeroOutOfRange();
                return [zero](Inputs in, Tensor &out) {
                  return cpu::embedding(*in[0], *in[1], zero, out);
                };
              }));
  addWidening(r, "pc.causal_mask", simple<CausalMaskOp>([](CausalMaskOp m) {
                bool zero = m.getZero();
                return [zero](Inputs in, Tensor &out) {
                  return cpu::causalMask(*in[0], out, zero);
                };
              }));
  r.add(kCpu, "pc.adam8_update", {CommType::F32}, StreamKind::Compute,
        [](Operation *op, BindContext &) -> absl::StatusOr<Kernel> {
          auto a = cast<Adam8UpdateOp>(op);
          cpu::AdamConstants k = adamConstants(a);
          std::vector<std::pair<Shape, CommType>> outs;
          for (Value r : a.getResults()) {
            absl::StatusOr<CommType> type = commTypeOf(r.getType());
            if (!type.ok())
              return type.status();
            outs.push_back({shapeOf(r.getType()), *type});
          }
          return Kernel([k, outs](KernelIO &io) -> absl::Status {
            std::shared_ptr<Tensor> out[5];
            for (int i = 0; i < 5; ++i) {
              absl::StatusOr<std::shared_ptr<Tensor>> made =
                  io.context.allocate(outs[i].first, outs[i].second);
              if (!made.ok())
                return made.status();
              out[i] = *std::move(made);
            }
            auto scalar = [&](int i) { return io.inputs[i]->as<float>()[0]; };
            if (absl::Status s = cpu::adam8Update(
                    *io.inputs[0], *io.inputs[1], *io.inputs[2], *io.inputs[3],
                    *io.inputs[4], *io.inputs[5], scalar(6), scalar(7),
                    scalar(8), k, *out[0], *out[1], *out[2], *out[3], *out[4]);
                !s.ok())
              return s;
            for (int i = 0; i < 5; ++i)
              io.outputs[i] = std::move(out[i]);
            return absl::OkStatus();
          });
        });
  r.add(kCpu, "pc.adam_update", {CommType::F32}, StreamKind::Compute,
        [](Operation *op, BindContext &) -> absl::StatusOr<Kernel> {
          auto a = cast<AdamUpdateOp>(op);
          cpu::AdamConstants k = adamConstants(a);
          Shape shape = shapeOf(a.getWeight().getType());
          return Kernel([k, shape](KernelIO &io) -> absl::Status {
            std::shared_ptr<Tensor> out[3];
            for (auto &t : out) {
              absl::StatusOr<std::shared_ptr<Tensor>> made =
                  io.context.allocate(shape, CommType::F32);
              if (!made.ok())
                return made.status();
              t = *std::move(made);
            }
            auto scalar = [&](int i) { return io.inputs[i]->as<float>()[0]; };
            if (absl::Status s =
                    cpu::adamUpdate(*io.inputs[0], *io.inputs[1], *io.inputs[2],
                                    *io.inputs[3], scalar(4), scalar(5),
                                    scalar(6), k, *out[0], *out[1], *out[2]);
                !s.ok())
              return s;
            for (int i = 0; i < 3; ++i)
              io.outputs[i] = std::move(out[i]);
            return absl::OkStatus();
          });
        });
  addWidening(
      r, "pc.layer_norm_grad", simple<LayerNormGradOp>([](LayerNormGradOp n) {
        int64_t axis = axisIn(n.getAxis(), shapeOf(n.getType()).size());
        float eps = n.getEpsilon().convertToDouble();
        return [axis, eps](Inputs in, Tensor &out) {
          return cpu::layerNormGrad(*in[0], *in[1], *in[2], axis, eps, out);
        };
      }));
  addWidening(r, "pc.layer_norm_scale_grad",
              simple<LayerNormScaleGradOp>([](LayerNormScaleGradOp n) {
                int64_t axis =
                    axisIn(n.getAxis(), shapeOf(n.getInput().getType()).size());
                float eps = n.getEpsilon().convertToDouble();
                return [axis, eps](Inputs in, Tensor &out) {
                  return cpu::layerNormScaleGrad(*in[0], *in[1], axis, eps,
                                                 out);
                };
              }));
  addWidening(r, "pc.gelu_grad", simple<GeluGradOp>([](GeluGradOp g) {
                cpu::GeluGradPlan plan(product(shapeOf(g.getType())),
                                       g.getApproximate());
                return [plan](Inputs in, Tensor &out) {
                  return plan.run(*in[0], *in[1], out);
                };
              }));
  addWidening(r, "pc.softmax_grad", simple<SoftmaxGradOp>([](SoftmaxGradOp s) {
                int64_t rank = shapeOf(s.getType()).size();
                int64_t axis = axisIn(s.getAxis(), rank);
                bool causal = s.getCausal();
                return [axis, causal](Inputs in, Tensor &out) {
                  return cpu::softmaxGrad(*in[0], *in[1], axis, causal, out);
                };
              }));
  addWidening(r, "pc.cross_entropy", simple<CrossEntropyOp>([](CrossEntropyOp) {
                return [](Inputs in, Tensor &out) {
                  return cpu::crossEntropy(*in[0], *in[1], out);
                };
              }));
  addWidening(r, "pc.pick_labels", simple<PickLabelsOp>([](PickLabelsOp) {
                return [](Inputs in, Tensor &out) {
                  return cpu::pickLabels(*in[0], *in[1], out);
                };
              }));
}

} // namespace pc::runtime

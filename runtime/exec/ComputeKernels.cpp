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
#include "runtime/kernels/CpuKernels.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <cstring>

using namespace mlir;

namespace pc::runtime {
namespace {

using Shape = std::vector<int64_t>;
using Inputs = std::span<const HostTensor *const>;

/// A kernel with one result of `type`'s shape, freshly zeroed, that
/// `fn(inputs, out)` fills.
template <typename Fn>
absl::StatusOr<Kernel> produce(Type type, const BindContext &c, Fn fn) {
  absl::StatusOr<CommType> elem = resultType(type, c);
  if (!elem.ok())
    return elem.status();
  return Kernel([shape = shapeOf(type), elem = *elem, fn](KernelIO &io) {
    auto out = std::make_shared<HostTensor>(HostTensor::zeros(shape, elem));
    if (absl::Status s = fn(io.inputs, *out); !s.ok())
      return s;
    io.outputs[0] = std::move(out);
    return absl::OkStatus();
  });
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
int64_t broadcastOffset(const HostTensor &t, const Shape &strides,
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

int64_t readInt(const HostTensor &t, int64_t i) {
  return t.type == CommType::I64 ? t.as<int64_t>()[i] : t.as<int32_t>()[i];
}

/// NumPy-broadcasting elementwise op on i32/i64, in 64-bit two's complement
/// arithmetic, wrapped to the result type as C++ integer types do.
void integerOp(const HostTensor &a, const HostTensor *b, HostTensor &out,
               IntFn fn) {
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
                   [op, fn](Inputs in, HostTensor &out) {
                     if (out.type == CommType::F32)
                       return cpu::binary(op, *in[0], *in[1], out);
                     integerOp(*in[0], in[1], out, fn);
                     return absl::OkStatus();
                   });
  };
  r.addWidening(name, StreamKind::Compute, f);
  r.add(name, {CommType::I32, CommType::I64}, StreamKind::Compute, f);
}

void addUnary(KernelRegistry &r, llvm::StringRef name, cpu::Unary op,
              IntFn integer = nullptr) {
  KernelFactory f = [op, integer](Operation *o,
                                  BindContext &c) -> absl::StatusOr<Kernel> {
    return produce(o->getResult(0).getType(), c,
                   [op, integer](Inputs in, HostTensor &out) {
                     if (out.type == CommType::F32 || !integer)
                       return cpu::unary(op, *in[0], out);
                     integerOp(*in[0], nullptr, out, integer);
                     return absl::OkStatus();
                   });
  };
  r.addWidening(name, StreamKind::Compute, f);
  if (integer)
    r.add(name, {CommType::I32, CommType::I64}, StreamKind::Compute, f);
}

/// Replicates `in` NumPy-style into `out`'s shape, element bytes exactly.
void broadcastBytes(const HostTensor &in, HostTensor &out) {
  Shape st = stridesOf(in.shape);
  int64_t e = sizeOf(in.type);
  for (int64_t i = 0, n = out.numel(); i < n; ++i)
    std::memcpy(out.bytes.data() + i * e,
                in.bytes.data() +
                    broadcastOffset(in, st, delinearize(out.shape, i)) * e,
                e);
}

int64_t axisIn(int64_t axis, int64_t rank) { return (axis + rank) % rank; }

/// Ops that only move bytes: any element type, no widening.
void registerDataMovement(KernelRegistry &r) {
  r.add("pc.reshape", kAllTypes, StreamKind::Compute,
        [](Operation *op, BindContext &) -> absl::StatusOr<Kernel> {
          Shape shape = shapeOf(op->getResult(0).getType());
          return Kernel([shape](KernelIO &io) {
            auto t = std::make_shared<HostTensor>(*io.inputs[0]);
            t->shape = shape;
            io.outputs[0] = std::move(t);
            return absl::OkStatus();
          });
        });
  r.add("pc.transpose", kAllTypes, StreamKind::Compute,
        simple<TransposeOp>([](TransposeOp t) {
          Shape perm(t.getPerm().begin(), t.getPerm().end());
          return [perm](Inputs in, HostTensor &out) {
            return cpu::transpose(*in[0], perm, out);
          };
        }));
  r.add("pc.broadcast_to", kAllTypes, StreamKind::Compute,
        simple<BroadcastToOp>([](BroadcastToOp) {
          return [](Inputs in, HostTensor &out) {
            broadcastBytes(*in[0], out);
            return absl::OkStatus();
          };
        }));
  r.add("pc.slice", kAllTypes, StreamKind::Compute,
        simple<SliceOp>([](SliceOp s) {
          Shape start(s.getStart().begin(), s.getStart().end());
          return [start](Inputs in, HostTensor &out) {
            copyBox(in[0]->bytes.data(), in[0]->shape, start, out.bytes.data(),
                    out.shape, Shape(out.shape.size(), 0), out.shape,
                    sizeOf(out.type));
            return absl::OkStatus();
          };
        }));
  r.add("pc.concat", kAllTypes, StreamKind::Compute,
        simple<ConcatOp>([](ConcatOp c) {
          int64_t axis = c.getAxis();
          return [axis](Inputs in, HostTensor &out) {
            Shape start(out.shape.size(), 0);
            int64_t a = axisIn(axis, out.shape.size());
            for (const HostTensor *part : in) {
              copyBox(part->bytes.data(), part->shape,
                      Shape(part->shape.size(), 0), out.bytes.data(), out.shape,
                      start, part->shape, sizeOf(out.type));
              start[a] += part->shape[a];
            }
            return absl::OkStatus();
          };
        }));
  r.add("pc.cast", kAllTypes, StreamKind::Compute, simple<CastOp>([](CastOp) {
          return
              [](Inputs in, HostTensor &out) { return cpu::cast(*in[0], out); };
        }));
  r.add("pc.constant", kAllTypes, StreamKind::Compute,
        [](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
          auto dense =
              dyn_cast<DenseElementsAttr>(cast<ConstantOp>(op).getValue());
          if (!dense)
            return absl::InvalidArgumentError("the value is not dense");
          absl::StatusOr<CommType> type =
              commTypeOf(op->getResult(0).getType());
          if (!type.ok())
            return type.status();
          // Materialized once; every firing shares it.
          auto value = std::make_shared<HostTensor>(
              HostTensor::zeros(shapeOf(op->getResult(0).getType()), *type));
          bool isFloat = isa<FloatType>(dense.getElementType());
          for (int64_t i = 0; i < value->numel(); ++i) {
            int64_t j = dense.isSplat() ? 0 : i;
            value->set(
                i, isFloat ? dense.getValues<APFloat>()[j].convertToDouble()
                           : static_cast<double>(
                                 dense.getValues<APInt>()[j].getSExtValue()));
          }
          return Kernel(
              [value = std::shared_ptr<const HostTensor>(value)](KernelIO &io) {
                io.outputs[0] = value;
                return absl::OkStatus();
              });
        });
  r.add("pc.set_param", kAllTypes, StreamKind::Compute,
        [](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
          if (!c.store)
            return absl::FailedPreconditionError(
                "this session cannot store parameters");
          std::string name = cast<SetParamOp>(op).getName().str();
          auto store = c.store;
          // The value is shared, not copied: it is the next step's piece.
          return Kernel([name, store](KernelIO &io) {
            store(name, io.sharedInputs[0]);
            return absl::OkStatus();
          });
        });
  r.add("pc.get_param", kAllTypes, StreamKind::Compute,
        [](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
          auto get = cast<GetParamOp>(op);
          // Fetched (and initialized) at bind time; shared, never copied.
          absl::StatusOr<std::shared_ptr<const HostTensor>> value =
              c.param(get.getName(), get.getType());
          if (!value.ok())
            return value.status();
          return Kernel([value = *value](KernelIO &io) {
            io.outputs[0] = value;
            return absl::OkStatus();
          });
        });
}

} // namespace

void registerComputeKernels(KernelRegistry &r) {
  registerDataMovement(r);
  r.addWidening("pc.matmul", StreamKind::Compute,
                simple<MatmulOp>([](MatmulOp m) {
                  bool ta = m.getTransposeLhs(), tb = m.getTransposeRhs();
                  return [ta, tb](Inputs in, HostTensor &out) {
                    return cpu::matmul(*in[0], *in[1], ta, tb, out);
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
  r.addWidening(
      "pc.compare", StreamKind::Compute, simple<CompareOp>([](CompareOp c) {
        cpu::Comparison p = static_cast<cpu::Comparison>(c.getPredicate());
        return [p](Inputs in, HostTensor &out) {
          return cpu::compare(p, *in[0], *in[1], out);
        };
      }));
  r.addWidening("pc.one_hot", StreamKind::Compute,
                simple<OneHotOp>([](OneHotOp) {
                  return [](Inputs in, HostTensor &out) {
                    return cpu::oneHot(*in[0], out);
                  };
                }));
  r.addWidening("pc.embedding_grad", StreamKind::Compute,
                simple<EmbeddingGradOp>([](EmbeddingGradOp) {
                  return [](Inputs in, HostTensor &out) {
                    return cpu::embeddingGrad(*in[0], *in[1], out);
                  };
                }));
  r.addWidening("pc.gelu", StreamKind::Compute, simple<GeluOp>([](GeluOp g) {
                  cpu::Unary u = g.getApproximate() ? cpu::Unary::GeluTanh
                                                    : cpu::Unary::Gelu;
                  return [u](Inputs in, HostTensor &out) {
                    return cpu::unary(u, *in[0], out);
                  };
                }));
  for (bool log : {false, true})
    r.addWidening(
        log ? "pc.log_softmax" : "pc.softmax", StreamKind::Compute,
        [log](Operation *op, BindContext &c) {
          int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
          return produce(op->getResult(0).getType(), c,
                         [axis, log](Inputs in, HostTensor &out) {
                           return cpu::softmax(
                               *in[0], axisIn(axis, in[0]->shape.size()), log,
                               out);
                         });
        });
  r.addWidening("pc.layer_norm", StreamKind::Compute,
                simple<LayerNormOp>([](LayerNormOp n) {
                  int64_t axis = n.getAxis();
                  float eps = n.getEpsilon().convertToDouble();
                  return [axis, eps](Inputs in, HostTensor &out) {
                    return cpu::normalize(*in[0],
                                          axisIn(axis, in[0]->shape.size()),
                                          *in[1], in[2], eps, false, out);
                  };
                }));
  r.addWidening(
      "pc.rms_norm", StreamKind::Compute, simple<RmsNormOp>([](RmsNormOp n) {
        int64_t axis = n.getAxis();
        float eps = n.getEpsilon().convertToDouble();
        return [axis, eps](Inputs in, HostTensor &out) {
          return cpu::normalize(*in[0], axisIn(axis, in[0]->shape.size()),
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
                     [kind, a](Inputs in, HostTensor &out) {
                       return cpu::reduce(kind, *in[0], a, out);
                     });
    };
    r.addWidening(red.name, StreamKind::Compute, f);
    if (red.integers)
      r.add(red.name, {CommType::I32, CommType::I64}, StreamKind::Compute, f);
  }
  r.addWidening("pc.embedding", StreamKind::Compute,
                simple<EmbeddingOp>([](EmbeddingOp e) {
                  bool zero = e.getZeroOutOfRange();
                  return [zero](Inputs in, HostTensor &out) {
                    return cpu::embedding(*in[0], *in[1], zero, out);
                  };
                }));
  r.addWidening("pc.causal_mask", StreamKind::Compute,
                simple<CausalMaskOp>([](CausalMaskOp) {
                  return [](Inputs in, HostTensor &out) {
                    return cpu::causalMask(*in[0], out);
                  };
                }));
  r.addWidening("pc.cross_entropy", StreamKind::Compute,
                simple<CrossEntropyOp>([](CrossEntropyOp) {
                  return [](Inputs in, HostTensor &out) {
                    return cpu::crossEntropy(*in[0], *in[1], out);
                  };
                }));
  r.addWidening("pc.pick_labels", StreamKind::Compute,
                simple<PickLabelsOp>([](PickLabelsOp) {
                  return [](Inputs in, HostTensor &out) {
                    return cpu::pickLabels(*in[0], *in[1], out);
                  };
                }));
}

} // namespace pc::runtime

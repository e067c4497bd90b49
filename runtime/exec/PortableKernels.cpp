//===- PortableKernels.cpp - Compute ops bound to the device kernels ------===//
//
// Binds every compute op of a per-device program to a DeviceKernels
// (runtime/kernels/portable/DeviceKernels.h): the CUDA backend's kernels,
// or the same kernels built for the host. Unlike the CPU backend's binding
// (ComputeKernels.cpp), nothing here reads or writes tensor memory from
// the host: every byte moves through a kernel or a copy on the firing's
// stream, so that the binding is the GPU backend's. What follows from the
// IR alone (shapes, indexes, constants) is derived once, at bind time.
//
// f16 and bf16 are native types of these kernels (loaded into f32,
// computed in f32, rounded once), not widened copies.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/PortableKernels.h"
#include "runtime/exec/PortableBinding.h"

#include "dialect/PcOps.h"
#include "runtime/device/HostTensor.h"
#include "runtime/exec/OpConstants.h"
#include "runtime/kernels/Quant8.h"

#include "absl/strings/str_cat.h"

using namespace mlir;

namespace pc::runtime {
namespace {

using namespace portable_binding;

//===-- Elementwise -----------------------------------------------------===//

void addElementwise(KernelRegistry &r, llvm::StringRef kind, const Kernels &k) {
  struct Binary {
    const char *name;
    portable::BinaryOp op;
  };
  for (Binary b : {Binary{"pc.add", portable::BinaryOp::Add},
                   Binary{"pc.sub", portable::BinaryOp::Sub},
                   Binary{"pc.mul", portable::BinaryOp::Mul},
                   Binary{"pc.div", portable::BinaryOp::Div}}) {
    KernelFactory f = plainFactory([k, op = b.op](Operation *o) {
      Shape out = shapeOf(o->getResult(0).getType());
      Index ia = broadcastIndex(shapeOf(o->getOperand(0).getType()), out);
      Index ib = broadcastIndex(shapeOf(o->getOperand(1).getType()), out);
      return [=](KernelIO &io, Tensor &t) {
        k->binary(launchOf(io), op, elemOf(t.type), io.inputs[0]->data(), ia,
                  io.inputs[1]->data(), ib, t.data(), t.numel());
        return absl::OkStatus();
      };
    });
    addGuarded(r, kind, b.name, kFloats, StreamKind::Compute, f);
    addGuarded(r, kind, b.name, kInts, StreamKind::Compute, f);
  }
  struct Unary {
    const char *name;
    portable::UnaryOp op;
    bool integers;
  };
  for (Unary u : {Unary{"pc.neg", portable::UnaryOp::Neg, true},
                  Unary{"pc.relu", portable::UnaryOp::Relu, true},
                  Unary{"pc.exp", portable::UnaryOp::Exp, false},
                  Unary{"pc.log", portable::UnaryOp::Log, false},
                  Unary{"pc.tanh", portable::UnaryOp::Tanh, false},
                  Unary{"pc.sigmoid", portable::UnaryOp::Sigmoid, false},
                  Unary{"pc.sqrt", portable::UnaryOp::Sqrt, false},
                  Unary{"pc.erf", portable::UnaryOp::Erf, false}}) {
    KernelFactory f = plainFactory([k, op = u.op](Operation *) {
      return [=](KernelIO &io, Tensor &t) {
        k->unary(launchOf(io), op, elemOf(t.type), io.inputs[0]->data(),
                 t.data(), t.numel());
        return absl::OkStatus();
      };
    });
    addGuarded(r, kind, u.name, kFloats, StreamKind::Compute, f);
    if (u.integers)
      addGuarded(r, kind, u.name, kInts, StreamKind::Compute, f);
  }
  addGuarded(r, kind, "pc.gelu", kFloats, StreamKind::Compute,
             simple<GeluOp>([k](GeluOp g) {
               auto op = g.getApproximate() ? portable::UnaryOp::GeluTanh
                                            : portable::UnaryOp::Gelu;
               return [=](KernelIO &io, Tensor &t) {
                 k->unary(launchOf(io), op, elemOf(t.type),
                          io.inputs[0]->data(), t.data(), t.numel());
                 return absl::OkStatus();
               };
             }));
  addGuarded(r, kind, "pc.gelu_grad", kFloats, StreamKind::Compute,
             simple<GeluGradOp>([k](GeluGradOp g) {
               bool approximate = g.getApproximate();
               return [=](KernelIO &io, Tensor &t) {
                 k->geluGrad(launchOf(io), elemOf(t.type), io.inputs[0]->data(),
                             io.inputs[1]->data(), t.data(), t.numel(),
                             approximate);
                 return absl::OkStatus();
               };
             }));
  addGuarded(r, kind, "pc.compare", kFloats, StreamKind::Compute,
             simple<CompareOp>([k](CompareOp c) {
               Shape out = shapeOf(c.getType());
               Index ia = broadcastIndex(shapeOf(c.getLhs().getType()), out);
               Index ib = broadcastIndex(shapeOf(c.getRhs().getType()), out);
               auto p = static_cast<portable::CompareOp>(c.getPredicate());
               return [=](KernelIO &io, Tensor &t) {
                 k->compare(launchOf(io), p, elemOf(t.type),
                            io.inputs[0]->data(), ia, io.inputs[1]->data(), ib,
                            t.data(), t.numel());
                 return absl::OkStatus();
               };
             }));
  addGuarded(r, kind, "pc.causal_mask", kFloats, StreamKind::Compute,
             simple<CausalMaskOp>([k](CausalMaskOp m) {
               bool zero = m.getZero();
               return [=](KernelIO &io, Tensor &t) {
                 size_t rank = t.shape.size();
                 int64_t q = t.shape[rank - 2], kk = t.shape[rank - 1];
                 k->causalMask(launchOf(io), elemOf(t.type),
                               io.inputs[0]->data(), t.data(),
                               kk ? t.numel() / kk : 0, q, kk, zero);
                 return absl::OkStatus();
               };
             }));
}

//===-- Rows and reductions ---------------------------------------------===//

void addRows(KernelRegistry &r, llvm::StringRef kind, const Kernels &k) {
  for (bool log : {false, true})
    addGuarded(
        r, kind, log ? "pc.log_softmax" : "pc.softmax", kFloats,
        StreamKind::Compute,
        [k, log](Operation *op, BindContext &c) -> absl::StatusOr<Kernel> {
          Shape shape = shapeOf(op->getResult(0).getType());
          int64_t axis = axisIn(op->getAttrOfType<IntegerAttr>("axis").getInt(),
                                shape.size());
          bool causal = op->hasAttr("causal");
          int64_t outer = product(Shape(shape.begin(), shape.begin() + axis));
          int64_t inner = product(Shape(shape.begin() + axis + 1, shape.end()));
          int64_t q = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
          return produce(op->getResult(0).getType(),
                         [=, len = shape[axis]](KernelIO &io, Tensor &t) {
                           k->softmax(launchOf(io), elemOf(t.type),
                                      io.inputs[0]->data(), t.data(), outer,
                                      len, inner, log, causal, q);
                           return absl::OkStatus();
                         });
        });
  addGuarded(r, kind, "pc.softmax_grad", kFloats, StreamKind::Compute,
             simple<SoftmaxGradOp>([k](SoftmaxGradOp s) {
               Shape shape = shapeOf(s.getType());
               int64_t axis = axisIn(s.getAxis(), shape.size());
               int64_t outer =
                   product(Shape(shape.begin(), shape.begin() + axis));
               int64_t inner =
                   product(Shape(shape.begin() + axis + 1, shape.end()));
               int64_t q = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
               bool causal = s.getCausal();
               return [=, len = shape[axis]](KernelIO &io, Tensor &t) {
                 k->softmaxGrad(launchOf(io), elemOf(t.type),
                                io.inputs[0]->data(), io.inputs[1]->data(),
                                t.data(), outer, len, inner, causal, q);
                 return absl::OkStatus();
               };
             }));
  // Rows of dims [axis, rank).
  auto rowsOf = [](const Shape &shape, int64_t axis) {
    int64_t width =
        product(Shape(shape.begin() + axisIn(axis, shape.size()), shape.end()));
    return std::pair<int64_t, int64_t>{width ? product(shape) / width : 0,
                                       width};
  };
  for (bool rms : {false, true})
    addGuarded(
        r, kind, rms ? "pc.rms_norm" : "pc.layer_norm", kFloats,
        StreamKind::Compute,
        [k, rms, rowsOf](Operation *op,
                         BindContext &) -> absl::StatusOr<Kernel> {
          auto [rows, width] =
              rowsOf(shapeOf(op->getResult(0).getType()),
                     op->getAttrOfType<IntegerAttr>("axis").getInt());
          float eps = static_cast<float>(
              op->getAttrOfType<FloatAttr>("epsilon").getValueAsDouble());
          return produce(
              op->getResult(0).getType(), [=](KernelIO &io, Tensor &t) {
                k->normalize(launchOf(io), elemOf(t.type), io.inputs[0]->data(),
                             io.inputs[1]->data(),
                             rms ? nullptr : io.inputs[2]->data(), t.data(),
                             rows, width, eps, rms);
                return absl::OkStatus();
              });
        });
  addGuarded(r, kind, "pc.layer_norm_grad", kFloats, StreamKind::Compute,
             simple<LayerNormGradOp>([k, rowsOf](LayerNormGradOp n) {
               auto [rows, width] = rowsOf(shapeOf(n.getType()), n.getAxis());
               float eps = n.getEpsilon().convertToDouble();
               return [=](KernelIO &io, Tensor &t) {
                 k->layerNormGrad(launchOf(io), elemOf(t.type),
                                  io.inputs[0]->data(), io.inputs[1]->data(),
                                  io.inputs[2]->data(), t.data(), rows, width,
                                  eps);
                 return absl::OkStatus();
               };
             }));
  addGuarded(r, kind, "pc.layer_norm_scale_grad", kFloats, StreamKind::Compute,
             simple<LayerNormScaleGradOp>([k, rowsOf](LayerNormScaleGradOp n) {
               auto [rows, width] =
                   rowsOf(shapeOf(n.getInput().getType()), n.getAxis());
               float eps = n.getEpsilon().convertToDouble();
               return [=](KernelIO &io, Tensor &t) {
                 return withScratch(io, [&](portable::Scratch &s) {
                   k->layerNormScaleGrad(
                       launchOf(io), elemOf(t.type), io.inputs[0]->data(),
                       io.inputs[1]->data(), t.data(), rows, width, eps, s);
                   return absl::OkStatus();
                 });
               };
             }));
  struct Reduce {
    const char *name;
    portable::Reduction op;
    bool integers;
  };
  for (Reduce red : {Reduce{"pc.reduce_sum", portable::Reduction::Sum, true},
                     Reduce{"pc.reduce_mean", portable::Reduction::Mean, false},
                     Reduce{"pc.reduce_max", portable::Reduction::Max, true}}) {
    KernelFactory f = [k,
                       op = red.op](Operation *o,
                                    BindContext &) -> absl::StatusOr<Kernel> {
      Shape in = shapeOf(o->getOperand(0).getType());
      if (absl::Status s = checkRank(in.size(), o); !s.ok())
        return s;
      std::vector<bool> reduced(in.size(), false);
      int64_t count = 1;
      for (int64_t a :
           o->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef()) {
        int64_t d = axisIn(a, in.size());
        reduced[d] = true;
        count *= in[d];
      }
      // The last dim, when reduced, is each reduced row's contiguous run.
      int64_t width = !in.empty() && reduced.back() ? in.back() : 1;
      Shape st = stridesOf(in), keptSizes, keptStrides, redSizes, redStrides;
      for (size_t d = 0; d < in.size(); ++d) {
        if (!reduced[d]) {
          keptSizes.push_back(in[d]);
          keptStrides.push_back(st[d]);
        } else if (d + 1 < in.size() || width == 1) {
          redSizes.push_back(in[d]);
          redStrides.push_back(st[d]);
        }
      }
      Index kept = indexOf(keptSizes, keptStrides),
            red = indexOf(redSizes, redStrides);
      return produce(o->getResult(0).getType(), [=](KernelIO &io, Tensor &t) {
        return withScratch(io, [&](portable::Scratch &s) {
          k->reduce(launchOf(io), op, elemOf(t.type), io.inputs[0]->data(),
                    kept, red, width, count, t.data(), t.numel(), s);
          return absl::OkStatus();
        });
      });
    };
    addGuarded(r, kind, red.name, kFloats, StreamKind::Compute, f);
    if (red.integers)
      addGuarded(r, kind, red.name, kInts, StreamKind::Compute, f);
  }
}

//===-- Ids and labels --------------------------------------------------===//

void addLabels(KernelRegistry &r, llvm::StringRef kind, const Kernels &k) {
  addGuarded(
      r, kind, "pc.embedding", kFloats, StreamKind::Compute,
      simple<EmbeddingOp>([k](EmbeddingOp e) {
        bool zero = e.getZeroOutOfRange();
        return [=](KernelIO &io, Tensor &t) {
          const Tensor &ids = *io.inputs[0], &table = *io.inputs[1];
          return withScratch(io, [&](portable::Scratch &s) -> absl::Status {
            portable::BadIndex bad =
                k->embedding(launchOf(io), elemOf(t.type), elemOf(ids.type),
                             ids.data(), ids.numel(), table.data(),
                             table.shape[0], table.shape[1], zero, t.data(), s);
            if (bad.position < 0)
              return absl::OkStatus();
            return absl::OutOfRangeError(absl::StrCat(
                "pc.embedding: id ", bad.value, " at position ", bad.position,
                " is outside [0, ", table.shape[0], ")"));
          });
        };
      }));
  addGuarded(r, kind, "pc.embedding_grad", kFloats, StreamKind::Compute,
             simple<EmbeddingGradOp>([k](EmbeddingGradOp) {
               return [=](KernelIO &io, Tensor &t) {
                 const Tensor &ids = *io.inputs[0];
                 return withScratch(io, [&](portable::Scratch &s) {
                   k->embeddingGrad(launchOf(io), elemOf(t.type),
                                    elemOf(ids.type), ids.data(), ids.numel(),
                                    io.inputs[1]->data(), t.shape[0],
                                    t.shape[1], t.data(), s);
                   return absl::OkStatus();
                 });
               };
             }));
  addGuarded(r, kind, "pc.one_hot", kFloats, StreamKind::Compute,
             simple<OneHotOp>([k](OneHotOp) {
               return [=](KernelIO &io, Tensor &t) {
                 const Tensor &labels = *io.inputs[0];
                 k->oneHot(launchOf(io), elemOf(t.type), elemOf(labels.type),
                           labels.data(), labels.numel(), t.shape.back(),
                           t.data());
                 return absl::OkStatus();
               };
             }));
  addGuarded(r, kind, "pc.pick_labels", kFloats, StreamKind::Compute,
             simple<PickLabelsOp>([k](PickLabelsOp) {
               return [=](KernelIO &io, Tensor &t) {
                 const Tensor &values = *io.inputs[0], &labels = *io.inputs[1];
                 k->pickLabels(launchOf(io), elemOf(t.type),
                               elemOf(labels.type), values.data(),
                               labels.data(), labels.numel(),
                               values.shape.back(), t.data());
                 return absl::OkStatus();
               };
             }));
  addGuarded(
      r, kind, "pc.cross_entropy", kFloats, StreamKind::Compute,
      simple<CrossEntropyOp>([k](CrossEntropyOp) {
        return [=](KernelIO &io, Tensor &t) {
          const Tensor &logits = *io.inputs[0], &labels = *io.inputs[1];
          return withScratch(io, [&](portable::Scratch &s) -> absl::Status {
            portable::BadIndex bad = k->crossEntropy(
                launchOf(io), elemOf(t.type), elemOf(labels.type),
                logits.data(), labels.data(), labels.numel(),
                logits.shape.back(), t.data(), s);
            if (bad.position < 0)
              return absl::OkStatus();
            return absl::OutOfRangeError(absl::StrCat(
                "pc.cross_entropy: label ", bad.value, " at position ",
                bad.position, " is outside [0, ", logits.shape.back(), ")"));
          });
        };
      }));
}

} // namespace

void registerPortableComputeKernels(KernelRegistry &r, llvm::StringRef kind,
                                    std::shared_ptr<DeviceKernels> kernels) {
  registerViewKernels(r, kind);
  addElementwise(r, kind, kernels);
  addRows(r, kind, kernels);
  addLabels(r, kind, kernels);
  registerPortableMoves(r, kind, kernels);
}

} // namespace pc::runtime

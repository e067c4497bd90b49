//===- GradientRules.cpp - The gradient of each logical op ----------------===//
//
// Each rule builds operand gradients from the result gradients with logical
// ops only, so the backward pass distributes like the forward pass: the
// gradient of a matmul is two matmuls, of a broadcast a reduce_sum, of a
// cross-entropy a softmax built from reductions that split over classes.
//
//===----------------------------------------------------------------------===//

#include "passes/training/GradientRules.h"

#include "dialect/PcOps.h"
#include "passes/training/LogicalEmitter.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

namespace pc {
namespace {

using Shape = SmallVector<int64_t, 4>;

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }
ArrayRef<int64_t> shapeOf(Value v) { return typeOf(v).getShape(); }
Type elemOf(Value v) { return typeOf(v).getElementType(); }
bool isFloat(Value v) { return isa<FloatType>(elemOf(v)); }

/// The logical-op shorthand, plus the reduction helpers gradients need.
class Emitter : public LogicalEmitter {
public:
  using LogicalEmitter::LogicalEmitter;
  Value scalar(double v, Value like) { return scalarLike(v, like); }

  /// `reduced` (a reduction of `original` over `axes`) with the reduced dims
  /// kept as 1, so that it broadcasts against `original`.
  Value keepDims(Value reduced, Value original, ArrayRef<int64_t> axes,
                 bool keepdim) {
    if (keepdim)
      return reduced;
    Shape kept(shapeOf(original));
    for (int64_t a : normalized(axes, kept.size()))
      kept[a] = 1;
    return reshape(reduced, kept);
  }

  static Shape normalized(ArrayRef<int64_t> axes, int64_t rank) {
    Shape out;
    for (int64_t a : axes)
      out.push_back((a + rank) % rank);
    return out;
  }
};

/// Dims [axis, rank) of a value of rank `rank`.
Shape trailingDims(int64_t axis, int64_t rank) {
  Shape dims;
  for (int64_t d = (axis + rank) % rank; d < rank; ++d)
    dims.push_back(d);
  return dims;
}

} // namespace

Value sumToShape(OpBuilder &b, Location loc, Value grad,
                 ArrayRef<int64_t> shape) {
  ArrayRef<int64_t> g = shapeOf(grad);
  if (g == shape)
    return grad;
  Emitter e(b, loc);
  int64_t extra = g.size() - shape.size();
  Shape axes;
  for (int64_t d = 0; d < static_cast<int64_t>(g.size()); ++d)
    if (d < extra || (shape[d - extra] == 1 && g[d] != 1))
      axes.push_back(d);
  Value summed = axes.empty() ? grad : e.sum(grad, axes, /*keepdim=*/true);
  return e.reshape(summed, shape);
}

LogicalResult buildGradients(GradientContext &c,
                             SmallVectorImpl<Value> &grads) {
  Operation *op = c.op;
  grads.assign(op->getNumOperands(), Value());
  Emitter e(c.builder, op->getLoc());
  Value dy = c.resultGrads.empty() ? Value() : c.resultGrads[0];
  auto need = [&](unsigned i) {
    return c.needsGrad(i) && isFloat(op->getOperand(i));
  };
  auto set = [&](unsigned i, auto build) {
    if (need(i))
      grads[i] = build();
  };
  auto unbroadcast = [&](unsigned i, Value g) {
    return sumToShape(c.builder, op->getLoc(), g, shapeOf(op->getOperand(i)));
  };
  Value x = op->getNumOperands() ? op->getOperand(0) : Value();
  Value y = op->getNumResults() ? op->getResult(0) : Value();

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](MatmulOp m) {
        Value a = m.getLhs(), bm = m.getRhs();
        bool ta = m.getTransposeLhs(), tb = m.getTransposeRhs();
        // The product's scale scales both gradients.
        double alpha = m.getScale();
        auto mm = [&](Value x, Value y, bool tx, bool ty) {
          return e.matmul(x, y, tx, ty, alpha);
        };
        set(0, [&] {
          Value da =
              ta ? (tb ? mm(bm, dy, true, true) : mm(bm, dy, false, true))
                 : (tb ? mm(dy, bm, false, false) : mm(dy, bm, false, true));
          return unbroadcast(0, da);
        });
        set(1, [&] {
          ArrayRef<int64_t> as = shapeOf(a);
          if (shapeOf(bm).size() == 2 && as.size() > 2 && !ta) {
            // A weight against batched activations: fold the batch dims
            // into the rows, one matmul instead of a batch and a sum.
            int64_t rows = 1;
            for (int64_t d : as.drop_back())
              rows *= d;
            Value a2 = e.reshape(a, {rows, as.back()});
            Value dy2 = e.reshape(dy, {rows, shapeOf(dy).back()});
            return tb ? mm(dy2, a2, true, false) : mm(a2, dy2, true, false);
          }
          Value db =
              ta ? (tb ? mm(dy, a, true, true) : mm(a, dy, false, false))
                 : (tb ? mm(dy, a, true, false) : mm(a, dy, true, false));
          return unbroadcast(1, db);
        });
        // The addend is added once, unscaled.
        if (m.getAddend())
          set(2, [&] { return unbroadcast(2, dy); });
        return success();
      })
      .Case([&](AddOp) {
        set(0, [&] { return unbroadcast(0, dy); });
        set(1, [&] { return unbroadcast(1, dy); });
        return success();
      })
      .Case([&](SubOp) {
        set(0, [&] { return unbroadcast(0, dy); });
        set(1, [&] { return unbroadcast(1, e.neg(dy)); });
        return success();
      })
      .Case([&](MulOp m) {
        set(0, [&] { return unbroadcast(0, e.mul(dy, m.getRhs())); });
        set(1, [&] { return unbroadcast(1, e.mul(dy, m.getLhs())); });
        return success();
      })
      .Case([&](DivOp d) {
        // d(a/b)/db = -(a/b)/b.
        set(0, [&] { return unbroadcast(0, e.div(dy, d.getRhs())); });
        set(1, [&] {
          return unbroadcast(1, e.neg(e.div(e.mul(dy, y), d.getRhs())));
        });
        return success();
      })
      .Case([&](NegOp) {
        set(0, [&] { return e.neg(dy); });
        return success();
      })
      .Case([&](ExpOp) {
        set(0, [&] { return e.mul(dy, y); });
        return success();
      })
      .Case([&](LogOp) {
        set(0, [&] { return e.div(dy, x); });
        return success();
      })
      .Case([&](TanhOp) {
        set(0, [&] { return e.mul(dy, e.sub(e.scalar(1, y), e.mul(y, y))); });
        return success();
      })
      .Case([&](SigmoidOp) {
        set(0, [&] { return e.mul(e.mul(dy, y), e.sub(e.scalar(1, y), y)); });
        return success();
      })
      .Case([&](ReluOp) {
        // The subgradient 0 at 0, as in PyTorch.
        set(0, [&] {
          return e.mul(dy, e.compare(x, e.scalar(0, x), Comparison::gt));
        });
        return success();
      })
      .Case([&](SqrtOp) {
        set(0, [&] { return e.div(e.scale(dy, 0.5), y); });
        return success();
      })
      .Case([&](ErfOp) {
        set(0, [&] {
          return e.mul(e.scale(dy, 2 / std::sqrt(M_PI)),
                       e.exp(e.neg(e.mul(x, x))));
        });
        return success();
      })
      .Case([&](GeluOp g) {
        // One fused op: the derivative spelt out is a dozen passes over
        // memory.
        set(0, [&] {
          return GeluGradOp::create(c.builder, op->getLoc(), dy, x,
                                    g.getApproximate())
              .getResult();
        });
        return success();
      })
      .Case([&](SoftmaxOp s) {
        set(0, [&] {
          return SoftmaxGradOp::create(c.builder, op->getLoc(), dy, y,
                                       s.getAxis(), s.getCausal())
              .getResult();
        });
        return success();
      })
      .Case([&](LogSoftmaxOp s) {
        set(0, [&] {
          int64_t axis = static_cast<int64_t>(s.getAxis());
          Value total = e.sum(dy, {axis}, /*keepdim=*/true);
          return e.sub(dy, e.mul(e.exp(y), total));
        });
        return success();
      })
      .Case([&](LayerNormOp n) {
        // The input's gradient and gamma's are one fused op each.
        set(0, [&] {
          return LayerNormGradOp::create(c.builder, op->getLoc(), dy, x,
                                         n.getGamma(), n.getAxis(),
                                         n.getEpsilon())
              .getResult();
        });
        set(1, [&] {
          return LayerNormScaleGradOp::create(
                     c.builder, op->getLoc(),
                     RankedTensorType::get(shapeOf(n.getGamma()), elemOf(x)),
                     dy, x, n.getAxis(), n.getEpsilon())
              .getResult();
        });
        set(2, [&] { return unbroadcast(2, dy); });
        return success();
      })
      .Case([&](RmsNormOp n) {
        Shape dims = trailingDims(n.getAxis(), shapeOf(x).size());
        double eps = n.getEpsilon().convertToDouble();
        Value r =
            e.div(e.scalar(1, x),
                  e.sqrt(e.add(e.mean(e.mul(x, x), dims), e.scalar(eps, x))));
        set(0, [&] {
          Value g = e.mul(dy, n.getGamma());
          Value inner = e.mul(e.mul(x, e.mul(r, r)), e.mean(e.mul(g, x), dims));
          return e.mul(r, e.sub(g, inner));
        });
        set(1, [&] { return unbroadcast(1, e.mul(dy, e.mul(x, r))); });
        return success();
      })
      .Case([&](ReduceSumOp r) {
        set(0, [&] {
          return e.broadcastTo(e.keepDims(dy, x, r.getAxes(), r.getKeepdim()),
                               shapeOf(x));
        });
        return success();
      })
      .Case([&](ReduceMeanOp r) {
        set(0, [&] {
          int64_t count = 1;
          for (int64_t a : Emitter::normalized(r.getAxes(), shapeOf(x).size()))
            count *= shapeOf(x)[a];
          Value g = e.keepDims(dy, x, r.getAxes(), r.getKeepdim());
          return e.broadcastTo(e.scale(g, 1.0 / count), shapeOf(x));
        });
        return success();
      })
      .Case([&](ReduceMaxOp r) {
        // Ties share the gradient equally.
        set(0, [&] {
          Value top = e.keepDims(y, x, r.getAxes(), r.getKeepdim());
          Value mask = e.compare(x, top, Comparison::eq);
          Value count = e.sum(mask, r.getAxes(), /*keepdim=*/true);
          Value g = e.keepDims(dy, x, r.getAxes(), r.getKeepdim());
          return e.mul(e.div(mask, count), g);
        });
        return success();
      })
      .Case([&](ReshapeOp) {
        set(0, [&] { return e.reshape(dy, shapeOf(x)); });
        return success();
      })
      .Case([&](TransposeOp t) {
        set(0, [&] {
          Shape inverse(t.getPerm().size());
          for (auto [i, p] : llvm::enumerate(t.getPerm()))
            inverse[p] = i;
          return Value(
              TransposeOp::create(c.builder, op->getLoc(), dy, inverse));
        });
        return success();
      })
      .Case([&](BroadcastToOp) {
        set(0, [&] { return unbroadcast(0, dy); });
        return success();
      })
      .Case([&](SliceOp s) {
        set(0, [&] {
          // Zeros around the slice, one dim at a time.
          Value g = dy;
          ArrayRef<int64_t> full = shapeOf(x);
          for (size_t d = 0; d < full.size(); ++d) {
            int64_t before = s.getStart()[d], after = full[d] - s.getLimit()[d];
            if (!before && !after)
              continue;
            SmallVector<Value> parts;
            Shape pad(shapeOf(g));
            if (before) {
              pad[d] = before;
              parts.push_back(e.fill(0, pad, elemOf(g)));
            }
            parts.push_back(g);
            if (after) {
              pad[d] = after;
              parts.push_back(e.fill(0, pad, elemOf(g)));
            }
            g = e.concat(parts, d);
          }
          return g;
        });
        return success();
      })
      .Case([&](ConcatOp cat) {
        int64_t rank = shapeOf(y).size();
        int64_t axis = (static_cast<int64_t>(cat.getAxis()) + rank) % rank;
        int64_t offset = 0;
        for (unsigned i = 0; i < op->getNumOperands(); ++i) {
          int64_t size = shapeOf(op->getOperand(i))[axis];
          set(i, [&] {
            Shape start(rank, 0), limit(shapeOf(dy));
            start[axis] = offset;
            limit[axis] = offset + size;
            return e.slice(dy, start, limit);
          });
          offset += size;
        }
        return success();
      })
      .Case([&](EmbeddingOp emb) {
        set(1, [&] {
          return Value(EmbeddingGradOp::create(
              c.builder, op->getLoc(),
              RankedTensorType::get(shapeOf(emb.getTable()),
                                    elemOf(emb.getTable())),
              emb.getIds(), dy));
        });
        return success();
      })
      .Case([&](CausalMaskOp) {
        // The gradient where kept, 0 where masked: one pass, no constant.
        set(0, [&] {
          return CausalMaskOp::create(c.builder, op->getLoc(), dy,
                                      /*zero=*/true)
              .getResult();
        });
        return success();
      })
      .Case([&](CrossEntropyOp ce) {
        set(0, [&] {
          // softmax(logits) - one_hot(labels), from reductions over the
          // class dim, which split over classes (vocab parallel).
          Value logits = ce.getLogits();
          int64_t classDim = shapeOf(logits).size() - 1;
          Value z = e.sub(logits, e.max(logits, {classDim}));
          Value lse = e.log(e.sum(e.exp(z), {classDim}, /*keepdim=*/true));
          Value p = e.exp(e.sub(z, lse));
          Value hot = OneHotOp::create(
              c.builder, op->getLoc(),
              RankedTensorType::get(shapeOf(logits), elemOf(logits)),
              ce.getLabels());
          Shape perExample(shapeOf(dy));
          perExample.push_back(1);
          return e.mul(e.sub(p, hot), e.reshape(dy, perExample));
        });
        return success();
      })
      .Case([&](CastOp) {
        set(0, [&] {
          return Value(
              CastOp::create(c.builder, op->getLoc(),
                             RankedTensorType::get(shapeOf(x), elemOf(x)), dy));
        });
        return success();
      })
      .Case([&](SelectOp s) {
        // The gradient goes to the tensor picked; the other gets zeros.
        auto picked = [&](bool onTrue) {
          Value zeros = e.fill(0, shapeOf(dy), elemOf(dy));
          return Value(SelectOp::create(c.builder, op->getLoc(),
                                        s.getCondition(), onTrue ? dy : zeros,
                                        onTrue ? zeros : dy));
        };
        set(1, [&] { return picked(true); });
        set(2, [&] { return picked(false); });
        return success();
      })
      .Case<ToSbpOp, BoxingOp, CopyOp>([&](Operation *) {
        set(0, [&] { return dy; });
        return success();
      })
      // Masks and one-hot rows are piecewise constant: no gradient flows.
      .Case<CompareOp, OneHotOp>([&](Operation *) { return success(); })
      .Default([&](Operation *) {
        return op->emitOpError()
               << "has no gradient rule; --pc-autodiff cannot differentiate "
                  "through it";
      });
}

} // namespace pc

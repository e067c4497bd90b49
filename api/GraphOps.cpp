//===- GraphOps.cpp - The Graph's op methods ------------------------------===//
//
// One method per logical op, each a call of Graph::make with the dialect's
// builder: the verifier of the op it builds is the API's check.
//
//===----------------------------------------------------------------------===//

#include "api/GraphImpl.h"

using namespace mlir;

namespace pc::api {

using namespace detail;

#define PC_BINARY(NAME, OP)                                                    \
  Value Graph::NAME(Value lhs, Value rhs) {                                    \
    return make(#NAME, {lhs, rhs}, [&](OpBuilder &b, Location loc) {           \
      return OP::create(b, loc, unwrap(lhs), unwrap(rhs)).getResult();         \
    });                                                                        \
  }
PC_BINARY(add, AddOp)
PC_BINARY(sub, SubOp)
PC_BINARY(mul, MulOp)
PC_BINARY(div, DivOp)
#undef PC_BINARY

#define PC_UNARY(NAME, OP)                                                     \
  Value Graph::NAME(Value x) {                                                 \
    return make(#NAME, {x}, [&](OpBuilder &b, Location loc) {                  \
      return OP::create(b, loc, unwrap(x)).getResult();                        \
    });                                                                        \
  }
PC_UNARY(neg, NegOp)
PC_UNARY(exp, ExpOp)
PC_UNARY(log, LogOp)
PC_UNARY(tanh, TanhOp)
PC_UNARY(relu, ReluOp)
PC_UNARY(sigmoid, SigmoidOp)
PC_UNARY(sqrt, SqrtOp)
PC_UNARY(erf, ErfOp)
PC_UNARY(causalMask, CausalMaskOp)
#undef PC_UNARY

Value Graph::matmul(Value lhs, Value rhs, bool transposeLhs,
                    bool transposeRhs) {
  return make("matmul", {lhs, rhs}, [&](OpBuilder &b, Location loc) {
    return MatmulOp::create(b, loc, unwrap(lhs), unwrap(rhs), transposeLhs,
                            transposeRhs)
        .getResult();
  });
}

Value Graph::compare(Value lhs, Value rhs, Compare predicate) {
  return make("compare", {lhs, rhs}, [&](OpBuilder &b, Location loc) {
    return CompareOp::create(b, loc, unwrap(lhs), unwrap(rhs),
                             static_cast<Comparison>(predicate))
        .getResult();
  });
}

Value Graph::gelu(Value x, bool approximate) {
  return make("gelu", {x}, [&](OpBuilder &b, Location loc) {
    return GeluOp::create(b, loc, unwrap(x), approximate).getResult();
  });
}

Value Graph::softmax(Value x, int64_t axis) {
  return make("softmax", {x}, [&](OpBuilder &b, Location loc) {
    return SoftmaxOp::create(b, loc, unwrap(x), axis).getResult();
  });
}

Value Graph::logSoftmax(Value x, int64_t axis) {
  return make("logSoftmax", {x}, [&](OpBuilder &b, Location loc) {
    return LogSoftmaxOp::create(b, loc, unwrap(x), axis).getResult();
  });
}

Value Graph::layerNorm(Value x, Value gamma, Value beta, int64_t axis,
                       double epsilon) {
  return make("layerNorm", {x, gamma, beta}, [&](OpBuilder &b, Location loc) {
    return LayerNormOp::create(b, loc, unwrap(x), unwrap(gamma), unwrap(beta),
                               axis, epsilon)
        .getResult();
  });
}

Value Graph::rmsNorm(Value x, Value gamma, int64_t axis, double epsilon) {
  return make("rmsNorm", {x, gamma}, [&](OpBuilder &b, Location loc) {
    return RmsNormOp::create(b, loc, unwrap(x), unwrap(gamma), axis, epsilon)
        .getResult();
  });
}

#define PC_REDUCE(NAME, OP)                                                    \
  Value Graph::NAME(Value x, std::vector<int64_t> axes, bool keepdim) {        \
    return make(#NAME, {x}, [&](OpBuilder &b, Location loc) {                  \
      return OP::create(b, loc, unwrap(x), axes, keepdim).getResult();         \
    });                                                                        \
  }
PC_REDUCE(reduceSum, ReduceSumOp)
PC_REDUCE(reduceMean, ReduceMeanOp)
PC_REDUCE(reduceMax, ReduceMaxOp)
#undef PC_REDUCE

Value Graph::reshape(Value x, std::vector<int64_t> shape) {
  return make("reshape", {x}, [&](OpBuilder &b, Location loc) {
    Type elem =
        mlir::cast<RankedTensorType>(unwrap(x).getType()).getElementType();
    return ReshapeOp::create(b, loc, RankedTensorType::get(shape, elem),
                             unwrap(x))
        .getResult();
  });
}

Value Graph::transpose(Value x, std::vector<int64_t> perm) {
  return make("transpose", {x}, [&](OpBuilder &b, Location loc) {
    return TransposeOp::create(b, loc, unwrap(x), perm).getResult();
  });
}

Value Graph::broadcastTo(Value x, std::vector<int64_t> shape) {
  return make("broadcastTo", {x}, [&](OpBuilder &b, Location loc) {
    Type elem =
        mlir::cast<RankedTensorType>(unwrap(x).getType()).getElementType();
    return BroadcastToOp::create(b, loc, RankedTensorType::get(shape, elem),
                                 unwrap(x))
        .getResult();
  });
}

Value Graph::slice(Value x, std::vector<int64_t> start,
                   std::vector<int64_t> limit) {
  if (start.size() != x.shape().size() || limit.size() != x.shape().size())
    return check("slice", {x})
               ? fail("slice", absl::StrCat("start and limit need ",
                                            x.shape().size(), " entries"))
               : Value();
  return make("slice", {x}, [&](OpBuilder &b, Location loc) {
    return SliceOp::create(b, loc, unwrap(x), start, limit).getResult();
  });
}

Value Graph::concat(const std::vector<Value> &xs, int64_t axis) {
  if (xs.empty())
    return check("concat", {}) ? fail("concat", "needs at least one value")
                               : Value();
  for (const Value &x : xs)
    if (!check("concat", {x}))
      return {};
  return make("concat", {}, [&](OpBuilder &b, Location loc) {
    SmallVector<mlir::Value> values;
    for (const Value &x : xs)
      values.push_back(unwrap(x));
    return ConcatOp::create(b, loc, values, axis).getResult();
  });
}

Value Graph::embedding(Value ids, Value table) {
  return make("embedding", {ids, table}, [&](OpBuilder &b, Location loc) {
    return EmbeddingOp::create(b, loc, unwrap(ids), unwrap(table)).getResult();
  });
}

Value Graph::crossEntropy(Value logits, Value labels) {
  return make(
      "crossEntropy", {logits, labels}, [&](OpBuilder &b, Location loc) {
        return CrossEntropyOp::create(b, loc, unwrap(logits), unwrap(labels))
            .getResult();
      });
}

Value Graph::oneHot(Value labels, int64_t classes, DType dtype) {
  return make("oneHot", {labels}, [&](OpBuilder &b, Location loc) {
    std::vector<int64_t> shape = labels.shape();
    shape.push_back(classes);
    return OneHotOp::create(b, loc,
                            RankedTensorType::get(
                                shape, elementType(state->ctx.get(), dtype)),
                            unwrap(labels))
        .getResult();
  });
}

Value Graph::cast(Value x, DType dtype) {
  return make("cast", {x}, [&](OpBuilder &b, Location loc) {
    return CastOp::create(b, loc,
                          RankedTensorType::get(
                              x.shape(), elementType(state->ctx.get(), dtype)),
                          unwrap(x))
        .getResult();
  });
}

Value Graph::toSbp(Value x, const Placement &layout) {
  if (!check("toSbp", {x}))
    return {};
  if (layout.mesh.owner != state.get())
    return fail("toSbp", absl::StrCat("mesh '", layout.mesh.name(),
                                      "' is not a mesh of @", state->name));
  if (layout.sbp.size() != layout.mesh.shape().size())
    return fail("toSbp",
                absl::StrCat("the layout has ", layout.sbp.size(),
                             " entries for mesh @", layout.mesh.name(),
                             " with ", layout.mesh.shape().size(), " axes"));
  std::string why;
  RankedTensorType type =
      tensorType(state->ctx.get(), x.shape(), x.dtype(), layout, why);
  if (!type)
    return fail("toSbp", why);
  return make("toSbp", {x}, [&](OpBuilder &b, Location loc) {
    return ToSbpOp::create(b, loc, type, unwrap(x)).getResult();
  });
}

Value Graph::toSbp(Value x, std::vector<SbpEntry> sbp) {
  if (!state || !state->scope)
    return check("toSbp", {x})
               ? fail("toSbp", "no mesh: give a Placement, or call it "
                               "within a Graph::on(mesh) scope")
               : Value();
  return toSbp(x, Placement{*state->scope, std::move(sbp)});
}

} // namespace pc::api

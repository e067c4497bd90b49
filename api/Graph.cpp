//===- Graph.cpp - Building logical graphs in C++ -------------------------===//
//
// Each call builds its op with the dialect's own builders and runs the op's
// verifier at once, with the diagnostics captured: the API's rules are the
// IR's rules, and a misuse becomes the graph's status instead of a crash.
//
//===----------------------------------------------------------------------===//

#include "api/Graph.h"

#include "dialect/PcOps.h"
#include "passes/InitAll.h"
#include "passes/PassUtils.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace pc::api {

struct Graph::State {
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  std::vector<std::pair<std::string, mlir::Value>> outputs;
  std::optional<size_t> lossIndex;
  std::vector<std::string> names; // inputs, outputs and parameters so far
};

namespace {

Type elementType(MLIRContext *ctx, DType t) {
  Builder b(ctx);
  switch (t) {
  case DType::F32:
    return b.getF32Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::I32:
    return b.getI32Type();
  case DType::I64:
    return b.getI64Type();
  }
  return b.getF32Type();
}

DType dtypeOf(Type t) {
  Type e = mlir::cast<RankedTensorType>(t).getElementType();
  if (e.isF16())
    return DType::F16;
  if (e.isBF16())
    return DType::BF16;
  if (e.isInteger(32))
    return DType::I32;
  if (e.isInteger(64))
    return DType::I64;
  return DType::F32;
}

mlir::Value unwrap(const pc::api::Value &v) {
  return mlir::Value::getFromOpaquePointer(v.implPointer());
}

/// Collects the diagnostics of its lifetime into one message.
class Capture {
public:
  explicit Capture(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &d) {
          if (!text.empty())
            text += "; ";
          text += d.str();
          return success();
        }) {}
  std::string text;

private:
  ScopedDiagnosticHandler handler;
};

} // namespace

Graph::Graph(std::string name)
    : graphName(std::move(name)), ctx(std::make_shared<MLIRContext>()),
      state(std::make_unique<State>()) {
  DialectRegistry registry;
  pc::registerAllDialects(registry);
  ctx->appendDialectRegistry(registry);
  ctx->loadAllAvailableDialects();
  OpBuilder b(ctx.get());
  Location loc = NameLoc::get(b.getStringAttr(graphName));
  state->module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(state->module->getBody());
  state->func =
      func::FuncOp::create(b, loc, graphName, b.getFunctionType({}, {}));
  state->func.addEntryBlock();
}

Graph::~Graph() = default;

Value Graph::fail(const std::string &call, const std::string &why) {
  if (error.ok())
    error =
        absl::InvalidArgumentError(absl::StrCat("Graph::", call, ": ", why));
  return {};
}

bool Graph::check(const std::string &call,
                  std::initializer_list<Value> operands) {
  if (!error.ok())
    return false;
  for (auto [i, v] : llvm::enumerate(operands)) {
    if (!v.valid()) {
      fail(call, absl::StrCat("operand #", i, " is not a valid value"));
      return false;
    }
    if (v.graph != this) {
      fail(call, absl::StrCat("operand #", i,
                              " belongs to another graph, not @", graphName));
      return false;
    }
  }
  return true;
}

Mesh Graph::mesh(const std::string &name,
                 const std::vector<std::pair<std::string, int64_t>> &axes) {
  Mesh m;
  if (!error.ok())
    return m;
  OpBuilder b(ctx.get());
  b.setInsertionPoint(state->func);
  SmallVector<Attribute> names;
  SmallVector<int64_t> sizes;
  for (auto &[axis, size] : axes) {
    names.push_back(b.getStringAttr(axis));
    sizes.push_back(size);
  }
  Capture diags(ctx.get());
  auto op = MeshOp::create(b, state->func.getLoc(), b.getStringAttr(name),
                           b.getArrayAttr(names), b.getDenseI64ArrayAttr(sizes),
                           DeviceKindAttr::get(ctx.get(), DeviceKind::cpu),
                           DenseI64ArrayAttr());
  if (state->module->lookupSymbol(name) != op.getOperation() ||
      failed(mlir::verify(op))) {
    op->erase();
    fail("mesh", diags.text.empty()
                     ? absl::StrCat("'", name, "' is already a symbol")
                     : diags.text);
    return m;
  }
  m.owner = this;
  m.meshName = name;
  m.sizes.assign(sizes.begin(), sizes.end());
  return m;
}

namespace {
/// The tensor type of `shape` and `dtype`, in `layout` when given; the
/// error of an invalid layout in `why`.
RankedTensorType tensorType(MLIRContext *ctx, ArrayRef<int64_t> shape,
                            DType dtype, const std::optional<Placement> &layout,
                            std::string &why) {
  Type elem = elementType(ctx, dtype);
  if (!layout)
    return RankedTensorType::get(shape, elem);
  Capture diags(ctx);
  auto emit = [&] { return mlir::emitError(UnknownLoc::get(ctx)); };
  SbpAttr sbp = SbpAttr::getChecked(
      emit, ctx, FlatSymbolRefAttr::get(ctx, layout->mesh.name()),
      ArrayRef<SbpEntry>(layout->sbp));
  RankedTensorType t =
      sbp ? RankedTensorType::getChecked(emit, shape, elem, sbp) : nullptr;
  if (!t)
    why = diags.text;
  return t;
}
} // namespace

Value Graph::input(const std::string &name, std::vector<int64_t> shape,
                   DType dtype, std::optional<Placement> layout) {
  if (!check("input", {}))
    return {};
  if (!layout && scope)
    layout = Placement{*scope, std::vector<SbpEntry>(scope->shape().size(), B)};
  if (layout && layout->mesh.owner != this)
    return fail("input", absl::StrCat("the layout of '", name,
                                      "' is on a mesh of another graph"));
  if (layout && layout->sbp.size() != layout->mesh.shape().size())
    return fail("input", absl::StrCat("the layout of '", name, "' has ",
                                      layout->sbp.size(), " entries for mesh @",
                                      layout->mesh.name(), " with ",
                                      layout->mesh.shape().size(), " axes"));
  if (llvm::is_contained(state->names, name))
    return fail("input", absl::StrCat("'", name, "' is already a name"));
  std::string why;
  RankedTensorType type = tensorType(ctx.get(), shape, dtype, layout, why);
  if (!type)
    return fail("input", absl::StrCat("the layout of '", name, "': ", why));
  Block &body = state->func.getBody().front();
  BlockArgument arg = body.addArgument(type, state->func.getLoc());
  SmallVector<Type> inputs(body.getArgumentTypes());
  state->func.setType(
      FunctionType::get(ctx.get(), inputs, state->func.getResultTypes()));
  state->func.setArgAttr(arg.getArgNumber(), "pc.name",
                         StringAttr::get(ctx.get(), name));
  state->names.push_back(name);
  Value v;
  v.graph = this;
  v.impl = arg.getAsOpaquePointer();
  v.dims = shape;
  v.type = dtype;
  return v;
}

Value Graph::wrap(void *opaqueValue) {
  mlir::Value r = mlir::Value::getFromOpaquePointer(opaqueValue);
  Value v;
  v.graph = this;
  v.impl = opaqueValue;
  auto shape = mlir::cast<RankedTensorType>(r.getType()).getShape();
  v.dims.assign(shape.begin(), shape.end());
  v.type = dtypeOf(r.getType());
  return v;
}

template <typename Build>
Value Graph::make(const std::string &call,
                  std::initializer_list<Value> operands, Build build) {
  if (!check(call, operands))
    return {};
  OpBuilder b(ctx.get());
  // Before the return that module() may have built already.
  Block &body = state->func.getBody().front();
  if (!body.empty() && isa<func::ReturnOp>(body.back()))
    b.setInsertionPoint(&body.back());
  else
    b.setInsertionPointToEnd(&body);
  Capture diags(ctx.get());
  mlir::Value result = build(b, NameLoc::get(b.getStringAttr(call)));
  Operation *op = result.getDefiningOp();
  if (failed(mlir::verify(op))) {
    op->erase();
    return fail(call, diags.text);
  }
  return wrap(result.getAsOpaquePointer());
}

Value Graph::param(const std::string &name, std::vector<int64_t> shape,
                   DType dtype, Init init, bool trainable,
                   std::optional<Placement> layout) {
  if (!check("param", {}))
    return {};
  if (!layout && scope)
    layout = Placement{*scope, std::vector<SbpEntry>(scope->shape().size(), B)};
  if (layout && layout->mesh.owner != this)
    return fail("param", absl::StrCat("the layout of '", name,
                                      "' is on a mesh of another graph"));
  if (layout && layout->sbp.size() != layout->mesh.shape().size())
    return fail("param", absl::StrCat("the layout of '", name, "' has ",
                                      layout->sbp.size(), " entries for mesh @",
                                      layout->mesh.name(), " with ",
                                      layout->mesh.shape().size(), " axes"));
  if (llvm::is_contained(state->names, name) ||
      state->module->lookupSymbol(name))
    return fail("param", absl::StrCat("'", name, "' is already a name"));
  std::string why;
  RankedTensorType type = tensorType(ctx.get(), shape, dtype, layout, why);
  if (!type)
    return fail("param", absl::StrCat("the layout of '", name, "': ", why));
  OpBuilder b(ctx.get());
  b.setInsertionPoint(state->func);
  Capture diags(ctx.get());
  auto kind = static_cast<InitKind>(static_cast<int>(init.kind));
  auto param = ParamOp::create(
      b, NameLoc::get(b.getStringAttr(name)), b.getStringAttr(name),
      TypeAttr::get(type),
      InitAttr::get(ctx.get(), kind, APFloat(init.a), APFloat(init.b)),
      b.getBoolAttr(trainable));
  if (failed(mlir::verify(param))) {
    param->erase();
    return fail("param", diags.text);
  }
  state->names.push_back(name);
  return make("param", {}, [&](OpBuilder &b, Location loc) {
    return GetParamOp::create(b, loc, type,
                              FlatSymbolRefAttr::get(b.getStringAttr(name)))
        .getResult();
  });
}

Value Graph::constant(double value, std::vector<int64_t> shape, DType dtype) {
  return make("constant", {}, [&](OpBuilder &b, Location loc) {
    Type elem = elementType(ctx.get(), dtype);
    auto t = RankedTensorType::get(shape, elem);
    Attribute v =
        isa<FloatType>(elem)
            ? Attribute(FloatAttr::get(elem, value))
            : Attribute(IntegerAttr::get(elem, static_cast<int64_t>(value)));
    return ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, ArrayRef(v)))
        .getResult();
  });
}

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
    return OneHotOp::create(
               b, loc,
               RankedTensorType::get(shape, elementType(ctx.get(), dtype)),
               unwrap(labels))
        .getResult();
  });
}

Value Graph::cast(Value x, DType dtype) {
  return make("cast", {x}, [&](OpBuilder &b, Location loc) {
    return CastOp::create(
               b, loc,
               RankedTensorType::get(x.shape(), elementType(ctx.get(), dtype)),
               unwrap(x))
        .getResult();
  });
}

Value Graph::toSbp(Value x, const Placement &layout) {
  if (!check("toSbp", {x}))
    return {};
  if (layout.mesh.owner != this)
    return fail("toSbp", absl::StrCat("mesh '", layout.mesh.name(),
                                      "' is not a mesh of @", graphName));
  if (layout.sbp.size() != layout.mesh.shape().size())
    return fail("toSbp",
                absl::StrCat("the layout has ", layout.sbp.size(),
                             " entries for mesh @", layout.mesh.name(),
                             " with ", layout.mesh.shape().size(), " axes"));
  std::string why;
  RankedTensorType type =
      tensorType(ctx.get(), x.shape(), x.dtype(), layout, why);
  if (!type)
    return fail("toSbp", why);
  return make("toSbp", {x}, [&](OpBuilder &b, Location loc) {
    return ToSbpOp::create(b, loc, type, unwrap(x)).getResult();
  });
}

Value Graph::toSbp(Value x, std::vector<SbpEntry> sbp) {
  if (!scope)
    return check("toSbp", {x})
               ? fail("toSbp", "no mesh: give a Placement, or call it "
                               "within a Graph::on(mesh) scope")
               : Value();
  return toSbp(x, Placement{*scope, std::move(sbp)});
}

void Graph::output(const std::string &name, Value v) {
  if (!check("output", {v}))
    return;
  if (llvm::is_contained(state->names, name)) {
    fail("output", absl::StrCat("'", name, "' is already a name"));
    return;
  }
  state->names.push_back(name);
  state->outputs.push_back({name, unwrap(v)});
}

void Graph::loss(Value v) {
  if (!check("loss", {v}))
    return;
  if (state->lossIndex) {
    fail("loss", "the graph has a loss already");
    return;
  }
  if (!v.shape().empty() ||
      (v.dtype() != DType::F32 && v.dtype() != DType::F16 &&
       v.dtype() != DType::BF16)) {
    fail("loss", "the loss must be a 0-d float value");
    return;
  }
  state->lossIndex = state->outputs.size();
  output("loss", v);
}

Graph::Scope Graph::on(const Mesh &mesh) {
  std::optional<Mesh> previous = scope;
  if (mesh.owner != this)
    fail("on", absl::StrCat("mesh '", mesh.name(), "' is not a mesh of @",
                            graphName));
  else
    scope = mesh;
  return Scope(this, std::move(previous));
}

Graph::Scope::~Scope() {
  if (graph)
    graph->scope = std::move(previous);
}

Graph::Scope::Scope(Scope &&other) noexcept
    : graph(other.graph), previous(std::move(other.previous)) {
  other.graph = nullptr;
}

ModuleOp Graph::module() {
  // The return, rebuilt for the outputs so far.
  Block &body = state->func.getBody().front();
  if (!body.empty() && isa<func::ReturnOp>(body.back()))
    body.back().erase();
  OpBuilder b(ctx.get());
  b.setInsertionPointToEnd(&body);
  SmallVector<mlir::Value> results;
  SmallVector<Type> types;
  for (auto &[name, v] : state->outputs) {
    results.push_back(v);
    types.push_back(v.getType());
  }
  func::ReturnOp::create(b, state->func.getLoc(), results);
  state->func.setType(
      FunctionType::get(ctx.get(), body.getArgumentTypes(), types));
  for (auto [i, out] : llvm::enumerate(state->outputs)) {
    state->func.setResultAttr(i, "pc.name", b.getStringAttr(out.first));
    if (state->lossIndex == i)
      state->func.setResultAttr(i, "pc.loss", b.getUnitAttr());
  }
  return *state->module;
}

std::string Graph::str() {
  std::string text;
  llvm::raw_string_ostream os(text);
  module().print(os);
  return text;
}

} // namespace pc::api

//===- Graph.cpp - Building logical graphs in C++ -------------------------===//
//
// The graph's state, meshes, inputs, parameters, outputs, scopes and the
// module; the op methods are in GraphOps.cpp. Each call builds its op with
// the dialect's own builders and runs the op's verifier at once, with the
// diagnostics captured: the API's rules are the IR's rules, and a misuse
// becomes the graph's status instead of a crash.
//
//===----------------------------------------------------------------------===//

#include "api/GraphImpl.h"
#include "dialect/ProgramAttrs.h"

#include "passes/InitAll.h"

using namespace mlir;

namespace pc::api {

using namespace detail;

Graph::Graph(std::string name) : state(std::make_unique<State>()) {
  state->name = std::move(name);
  state->ctx = std::make_shared<MLIRContext>();
  MLIRContext *ctx = state->ctx.get();
  DialectRegistry registry;
  pc::registerAllDialects(registry);
  ctx->appendDialectRegistry(registry);
  ctx->loadAllAvailableDialects();
  // Errors carry the diagnostic, not a dump of the whole module.
  ctx->printOpOnDiagnostic(false);
  OpBuilder b(ctx);
  Location loc = NameLoc::get(b.getStringAttr(state->name));
  state->module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(state->module->getBody());
  state->func =
      func::FuncOp::create(b, loc, state->name, b.getFunctionType({}, {}));
  state->func.addEntryBlock();
}

Graph::~Graph() = default;
Graph::Graph(Graph &&other) noexcept = default;
Graph &Graph::operator=(Graph &&other) noexcept = default;

const absl::Status &Graph::status() const {
  // What a moved-from graph answers, so that compile() refuses it.
  static const absl::Status *moved = new absl::Status(
      absl::FailedPreconditionError("Graph: the graph was moved from"));
  return state ? state->error : *moved;
}

const std::string &Graph::name() const {
  static const std::string *none = new std::string();
  return state ? state->name : *none;
}

std::shared_ptr<MLIRContext> Graph::context() const {
  return state ? state->ctx : nullptr;
}

Value Graph::fail(const std::string &call, const std::string &why) {
  if (state && state->error.ok())
    state->error =
        absl::InvalidArgumentError(absl::StrCat("Graph::", call, ": ", why));
  return {};
}

bool Graph::check(const std::string &call,
                  std::initializer_list<Value> operands) {
  if (!state || !state->error.ok())
    return false;
  for (auto [i, v] : llvm::enumerate(operands)) {
    if (!v.valid()) {
      fail(call, absl::StrCat("operand #", i, " is not a valid value"));
      return false;
    }
    if (v.graph != state.get()) {
      fail(call, absl::StrCat("operand #", i,
                              " belongs to another graph, not @", state->name));
      return false;
    }
  }
  return true;
}

Mesh Graph::mesh(const std::string &name,
                 const std::vector<std::pair<std::string, int64_t>> &axes) {
  Mesh m;
  if (!state || !state->error.ok())
    return m;
  OpBuilder b(state->ctx.get());
  b.setInsertionPoint(state->func);
  SmallVector<Attribute> names;
  SmallVector<int64_t> sizes;
  for (auto &[axis, size] : axes) {
    names.push_back(b.getStringAttr(axis));
    sizes.push_back(size);
  }
  Capture diags(state->ctx.get());
  auto op =
      MeshOp::create(b, state->func.getLoc(), b.getStringAttr(name),
                     b.getArrayAttr(names), b.getDenseI64ArrayAttr(sizes),
                     DeviceKindAttr::get(state->ctx.get(), DeviceKind::cpu),
                     DenseI64ArrayAttr());
  if (state->module->lookupSymbol(name) != op.getOperation() ||
      failed(mlir::verify(op))) {
    op->erase();
    fail("mesh", diags.text.empty()
                     ? absl::StrCat("'", name, "' is already a symbol")
                     : diags.text);
    return m;
  }
  m.owner = state.get();
  m.meshName = name;
  m.sizes.assign(sizes.begin(), sizes.end());
  return m;
}

RankedTensorType detail::tensorType(MLIRContext *ctx, ArrayRef<int64_t> shape,
                                    DType dtype,
                                    const std::optional<Placement> &layout,
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

Value Graph::input(const std::string &name, std::vector<int64_t> shape,
                   DType dtype, std::optional<Placement> layout) {
  if (!check("input", {}))
    return {};
  if (!layout && state->scope)
    layout = Placement{*state->scope,
                       std::vector<SbpEntry>(state->scope->shape().size(), B)};
  if (layout && layout->mesh.owner != state.get())
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
  RankedTensorType type =
      tensorType(state->ctx.get(), shape, dtype, layout, why);
  if (!type)
    return fail("input", absl::StrCat("the layout of '", name, "': ", why));
  Block &body = state->func.getBody().front();
  BlockArgument arg = body.addArgument(type, state->func.getLoc());
  SmallVector<Type> inputs(body.getArgumentTypes());
  state->func.setType(FunctionType::get(state->ctx.get(), inputs,
                                        state->func.getResultTypes()));
  attrs::setArgName(state->func, arg.getArgNumber(), name);
  state->names.push_back(name);
  Value v;
  v.graph = state.get();
  v.impl = arg.getAsOpaquePointer();
  v.dims = shape;
  v.type = dtype;
  return v;
}

Value Graph::wrap(void *opaqueValue) {
  mlir::Value r = mlir::Value::getFromOpaquePointer(opaqueValue);
  Value v;
  v.graph = state.get();
  v.impl = opaqueValue;
  auto shape = mlir::cast<RankedTensorType>(r.getType()).getShape();
  v.dims.assign(shape.begin(), shape.end());
  v.type = dtypeOf(r.getType());
  return v;
}

Value Graph::param(const std::string &name, std::vector<int64_t> shape,
                   DType dtype, Init init, bool trainable,
                   std::optional<Placement> layout) {
  if (!check("param", {}))
    return {};
  if (!layout && state->scope)
    layout = Placement{*state->scope,
                       std::vector<SbpEntry>(state->scope->shape().size(), B)};
  if (layout && layout->mesh.owner != state.get())
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
  RankedTensorType type =
      tensorType(state->ctx.get(), shape, dtype, layout, why);
  if (!type)
    return fail("param", absl::StrCat("the layout of '", name, "': ", why));
  OpBuilder b(state->ctx.get());
  b.setInsertionPoint(state->func);
  Capture diags(state->ctx.get());
  auto kind = static_cast<InitKind>(static_cast<int>(init.kind));
  auto param = ParamOp::create(
      b, NameLoc::get(b.getStringAttr(name)), b.getStringAttr(name),
      TypeAttr::get(type),
      InitAttr::get(state->ctx.get(), kind, APFloat(init.a), APFloat(init.b)),
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
    Type elem = elementType(state->ctx.get(), dtype);
    auto t = RankedTensorType::get(shape, elem);
    Attribute v =
        isa<FloatType>(elem)
            ? Attribute(FloatAttr::get(elem, value))
            : Attribute(IntegerAttr::get(elem, static_cast<int64_t>(value)));
    return ConstantOp::create(b, loc, t, DenseElementsAttr::get(t, ArrayRef(v)))
        .getResult();
  });
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
  if (!state)
    return Scope(nullptr, std::nullopt);
  std::optional<Mesh> previous = state->scope;
  if (mesh.owner != state.get())
    fail("on", absl::StrCat("mesh '", mesh.name(), "' is not a mesh of @",
                            state->name));
  else
    state->scope = mesh;
  return Scope(state.get(), std::move(previous));
}

Graph::Scope::~Scope() {
  if (graph)
    graph->scope = std::move(previous);
}

Graph::Scope::Scope(Scope &&other) noexcept
    : graph(other.graph), previous(std::move(other.previous)) {
  other.graph = nullptr;
}

Graph::StageScope Graph::stage(int64_t stage) {
  if (!state)
    return StageScope(nullptr, std::nullopt);
  std::optional<int64_t> previous = state->stageScope;
  if (stage < 0)
    fail("stage", absl::StrCat("pipeline stage ", stage,
                               " is negative; stages count from 0"));
  else
    state->stageScope = stage;
  return StageScope(state.get(), previous);
}

Graph::StageScope::~StageScope() {
  if (graph)
    graph->stageScope = previous;
}

Graph::StageScope::StageScope(StageScope &&other) noexcept
    : graph(other.graph), previous(other.previous) {
  other.graph = nullptr;
}

ModuleOp Graph::module() {
  if (!state)
    return {};
  // The return, rebuilt for the outputs so far.
  Block &body = state->func.getBody().front();
  if (!body.empty() && isa<func::ReturnOp>(body.back()))
    body.back().erase();
  OpBuilder b(state->ctx.get());
  b.setInsertionPointToEnd(&body);
  SmallVector<mlir::Value> results;
  SmallVector<Type> types;
  for (auto &[name, v] : state->outputs) {
    results.push_back(v);
    types.push_back(v.getType());
  }
  func::ReturnOp::create(b, state->func.getLoc(), results);
  state->func.setType(
      FunctionType::get(state->ctx.get(), body.getArgumentTypes(), types));
  for (auto [i, out] : llvm::enumerate(state->outputs)) {
    attrs::setResultName(state->func, i, out.first);
    if (state->lossIndex == i)
      attrs::setLoss(state->func, i);
  }
  return *state->module;
}

std::string Graph::str() {
  std::string text;
  if (!state)
    return text;
  llvm::raw_string_ostream os(text);
  module().print(os);
  return text;
}

} // namespace pc::api

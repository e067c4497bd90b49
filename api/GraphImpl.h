//===- GraphImpl.h - What the Graph's two source files share ----*- C++ -*-===//
//
// Private to api/: the graph's state, the conversions between API and MLIR
// values and types, the diagnostic capture, and Graph::make, which every op
// method uses.
//
//===----------------------------------------------------------------------===//

#ifndef PC_API_GRAPHIMPL_H
#define PC_API_GRAPHIMPL_H

#include "api/Graph.h"

#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

namespace pc::api {

// A private header of api/, whose sources all work in MLIR's names.
using namespace mlir;

/// All of a graph, behind the Graph's pointer so that the Graph can move:
/// Values, Meshes and scopes point here, never at the Graph object.
struct detail::GraphState {
  std::string name;
  std::shared_ptr<MLIRContext> ctx;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  std::vector<std::pair<std::string, mlir::Value>> outputs;
  std::optional<size_t> lossIndex;
  std::vector<std::string> names; // inputs, outputs and parameters so far
  std::optional<Mesh> scope;
  std::optional<int64_t> stageScope;
  absl::Status error;
};

namespace detail {

inline mlir::Type elementType(mlir::MLIRContext *ctx, DType t) {
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

inline DType dtypeOf(mlir::Type t) {
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

inline mlir::Value unwrap(const pc::api::Value &v) {
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

/// The tensor type of `shape` and `dtype`, in `layout` when given; the
/// error of an invalid layout in `why`.
mlir::RankedTensorType tensorType(mlir::MLIRContext *ctx,
                                  llvm::ArrayRef<int64_t> shape, DType dtype,
                                  const std::optional<Placement> &layout,
                                  std::string &why);
} // namespace detail

template <typename Build>
Value Graph::make(const std::string &call,
                  std::initializer_list<Value> operands, Build build) {
  if (!check(call, operands))
    return {};
  MLIRContext *ctx = state->ctx.get();
  OpBuilder b(ctx);
  // Before the return that module() may have built already.
  Block &body = state->func.getBody().front();
  if (!body.empty() && isa<func::ReturnOp>(body.back()))
    b.setInsertionPoint(&body.back());
  else
    b.setInsertionPointToEnd(&body);
  detail::Capture diags(ctx);
  mlir::Value result = build(b, NameLoc::get(b.getStringAttr(call)));
  Operation *op = result.getDefiningOp();
  if (failed(mlir::verify(op))) {
    op->erase();
    return fail(call, diags.text);
  }
  if (state->stageScope)
    attrs::setStage(op, *state->stageScope);
  return wrap(result.getAsOpaquePointer());
}

} // namespace pc::api

#endif // PC_API_GRAPHIMPL_H

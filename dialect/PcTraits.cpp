//===- PcTraits.cpp - Checks shared by the pc ops -------------------------===//

#include "dialect/PcTraits.h"
#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace pc;

namespace {
/// Calls `fn(type, "operand #i")` and `fn(type, "result #i")` on every
/// operand and result type of `op`.
template <typename Fn> LogicalResult forEachValueType(Operation *op, Fn fn) {
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (failed(fn(v.getType(), "operand #" + Twine(i))))
      return failure();
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (failed(fn(v.getType(), "result #" + Twine(i))))
      return failure();
  return success();
}
} // namespace

bool pc::fitsElementLimit(ArrayRef<int64_t> shape) {
  const int64_t limit = int64_t(1) << kMaxElementsLog2;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d == 0)
      return true;
    if (d > limit / n)
      return false;
    n *= d;
  }
  return true;
}

LogicalResult pc::verifyTensorTypes(Operation *op) {
  return forEachValueType(op, [&](Type t, const Twine &what) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor)
      return success();
    if (!tensor.hasStaticShape())
      return op->emitOpError() << what << " has the dynamic shape " << t
                               << "; pc needs static shapes to plan layouts";
    if (!fitsElementLimit(tensor.getShape()))
      return op->emitOpError()
             << what << " has the shape " << t
             << ", which has more elements than pc supports (2^"
             << kMaxElementsLog2 << ")";
    if (tensor.getEncoding() && !isa<SbpAttr>(tensor.getEncoding()))
      return op->emitOpError()
             << what << " has the encoding " << tensor.getEncoding()
             << ", which is not a #pc.sbp layout";
    return success();
  });
}

LogicalResult pc::verifySameMesh(Operation *op) {
  // Once propagation has recorded the layouts an op consumes its operands
  // in, those are the operands' layouts for the op; boxing will make them
  // the operands' own.
  ArrayAttr wants = attrs::getOperandSbps(op);
  FlatSymbolRefAttr mesh;
  std::string first;
  auto check = [&](SbpAttr sbp, const Twine &what) -> LogicalResult {
    if (!sbp)
      return success();
    if (!mesh) {
      mesh = sbp.getMesh();
      first = what.str();
      return success();
    }
    if (sbp.getMesh() != mesh)
      return op->emitOpError()
             << what << " is on mesh " << sbp.getMesh() << " but " << first
             << " is on mesh " << mesh
             << "; a logical op runs on one mesh, so move the value with "
                "pc.to_sbp";
    return success();
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    SbpAttr sbp = wants && i < wants.size() ? dyn_cast<SbpAttr>(wants[i])
                                            : getSbp(v.getType());
    if (failed(check(sbp, "operand #" + Twine(i))))
      return failure();
  }
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (failed(check(getSbp(v.getType()), "result #" + Twine(i))))
      return failure();
  return success();
}

LogicalResult pc::verifySbpType(Operation *op, Type type, const Twine &what,
                                SymbolTableCollection &symbols) {
  SbpAttr sbp = getSbp(type);
  if (!sbp)
    return success();
  Operation *symbol = symbols.lookupNearestSymbolFrom(op, sbp.getMesh());
  if (!symbol)
    return op->emitOpError() << what << " of type " << type
                             << " refers to unknown mesh " << sbp.getMesh();
  auto mesh = dyn_cast<MeshOp>(symbol);
  if (!mesh)
    return op->emitOpError()
           << what << " of type " << type << " refers to " << sbp.getMesh()
           << ", which is a '" << symbol->getName() << "', not a pc.mesh";
  auto tensor = cast<RankedTensorType>(type);
  std::string meshName = "mesh @" + sbp.getMesh().getValue().str();
  if (std::optional<std::string> error = checkNdSbp(
          tensor.getShape(), mesh.getShape(), sbp.getEntries(), meshName))
    return op->emitOpError() << what << " of type " << type << ": " << *error;
  return success();
}

LogicalResult pc::verifySbpSymbolUses(Operation *op,
                                      SymbolTableCollection &symbols) {
  if (failed(forEachValueType(op, [&](Type t, const Twine &what) {
        return verifySbpType(op, t, what, symbols);
      })))
    return failure();
  if (ArrayAttr wants = attrs::getOperandSbps(op))
    for (auto [i, want, v] : llvm::enumerate(wants, op->getOperands()))
      if (auto tensor = dyn_cast<RankedTensorType>(v.getType()))
        if (failed(verifySbpType(
                op,
                RankedTensorType::get(tensor.getShape(),
                                      tensor.getElementType(), want),
                "the wanted layout of operand #" + Twine(i), symbols)))
          return failure();
  return success();
}

namespace {
/// Makes func.func check the SBP encodings of its signature as symbol uses,
/// so that a graph's inputs and outputs name real meshes even when no pc op
/// touches them.
struct FuncSbpVerifier
    : public SymbolUserOpInterface::ExternalModel<FuncSbpVerifier,
                                                  func::FuncOp> {
  LogicalResult verifySymbolUses(Operation *op,
                                 SymbolTableCollection &symbols) const {
    auto fn = cast<func::FuncOp>(op);
    for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes()))
      if (failed(verifySbpType(op, t, "argument #" + Twine(i), symbols)))
        return failure();
    for (auto [i, t] : llvm::enumerate(fn.getResultTypes()))
      if (failed(verifySbpType(op, t, "result #" + Twine(i), symbols)))
        return failure();
    return verifyPerDevicePieces(op, symbols);
  }
};
} // namespace

void pc::attachFuncSbpVerifier(MLIRContext &context) {
  func::FuncOp::attachInterface<FuncSbpVerifier>(context);
}

//===- MeshOps.cpp - pc.mesh, pc.param and pc.get_param -------------------===//

#include "dialect/PcOps.h"
#include "dialect/ShapeInference.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace pc;

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

// pc.mesh @name <["a"=2, "b"=4]> [on cuda] [ranks [..]] attr-dict
ParseResult MeshOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr name;
  if (parser.parseSymbolName(name))
    return failure();
  result.addAttribute(getSymNameAttrName(result.name), name);

  SmallVector<Attribute> axisNames;
  SmallVector<int64_t> shape;
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Square,
          [&]() -> ParseResult {
            std::string axis;
            int64_t size;
            if (parser.parseString(&axis) || parser.parseEqual() ||
                parser.parseInteger(size))
              return failure();
            axisNames.push_back(parser.getBuilder().getStringAttr(axis));
            shape.push_back(size);
            return success();
          }) ||
      parser.parseGreater())
    return failure();
  Builder &b = parser.getBuilder();
  result.addAttribute(getAxisNamesAttrName(result.name),
                      b.getArrayAttr(axisNames));
  result.addAttribute(getShapeAttrName(result.name),
                      b.getDenseI64ArrayAttr(shape));

  if (succeeded(parser.parseOptionalKeyword("on"))) {
    SMLoc loc = parser.getCurrentLocation();
    StringRef kind;
    if (parser.parseKeyword(&kind))
      return failure();
    std::optional<DeviceKind> device = symbolizeDeviceKind(kind);
    if (!device)
      return parser.emitError(loc, "unknown device kind '")
             << kind << "'; expected cpu or cuda";
    result.addAttribute(getDeviceAttrName(result.name),
                        DeviceKindAttr::get(b.getContext(), *device));
  }
  if (succeeded(parser.parseOptionalKeyword("ranks"))) {
    SmallVector<int64_t> ranks;
    if (parser.parseCommaSeparatedList(
            OpAsmParser::Delimiter::Square, [&]() -> ParseResult {
              return parser.parseInteger(ranks.emplace_back());
            }))
      return failure();
    result.addAttribute(getRanksAttrName(result.name),
                        b.getDenseI64ArrayAttr(ranks));
  }
  return parser.parseOptionalAttrDict(result.attributes);
}

void MeshOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  p << " <[";
  for (auto [i, name, size] : llvm::enumerate(
           getAxisNames().getAsValueRange<StringAttr>(), getShape())) {
    if (i)
      p << ", ";
    p.printString(name);
    p << "=" << size;
  }
  p << "]>";
  if (getDevice() != DeviceKind::cpu)
    p << " on " << stringifyDeviceKind(getDevice());
  if (std::optional<ArrayRef<int64_t>> ranks = getRanks()) {
    p << " ranks [";
    llvm::interleaveComma(*ranks, p);
    p << "]";
  }
  p.printOptionalAttrDict((*this)->getAttrs(),
                          {getSymNameAttrName(), getAxisNamesAttrName(),
                           getShapeAttrName(), getDeviceAttrName(),
                           getRanksAttrName()});
}

LogicalResult MeshOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  if (shape.empty())
    return emitOpError("needs at least one axis");
  if (getAxisNames().size() != shape.size())
    return emitOpError() << "has " << getAxisNames().size()
                         << " axis names but " << shape.size() << " sizes";
  llvm::StringSet<> seen;
  for (auto [name, size] :
       llvm::zip(getAxisNames().getAsValueRange<StringAttr>(), shape)) {
    if (name.empty())
      return emitOpError("has an axis with an empty name");
    if (!seen.insert(name).second)
      return emitOpError() << "has a duplicate axis name \"" << name << "\"";
    if (size < 1)
      return emitOpError() << "axis \"" << name << "\" has size " << size
                           << "; mesh axis sizes must be at least 1";
  }
  // The boxing planner keys a layout by a byte per mesh axis
  // (boxing/BoxingPlanner.cpp); eight axes is more than any placement uses.
  constexpr size_t kMaxAxes = 8;
  if (shape.size() > kMaxAxes)
    return emitOpError() << "has " << shape.size() << " axes; pc meshes have "
                         << "at most " << kMaxAxes;
  // Beyond about a million devices a mesh is a mistake, and the rank
  // enumerations of the passes would not end in reasonable time.
  constexpr int64_t kMaxDevices = int64_t(1) << 20;
  int64_t devices = 1;
  for (int64_t size : shape) {
    // Compared before multiplying: the product of huge sizes overflows.
    if (size > kMaxDevices / devices)
      return emitOpError() << "has more than " << kMaxDevices
                           << " devices, the most pc supports";
    devices *= size;
  }
  if (std::optional<ArrayRef<int64_t>> ranks = getRanks()) {
    if (static_cast<int64_t>(ranks->size()) != devices)
      return emitOpError() << "lists " << ranks->size()
                           << " ranks but its shape has " << devices
                           << " devices";
    llvm::DenseSet<int64_t> unique;
    for (int64_t r : *ranks) {
      if (r < 0)
        return emitOpError() << "lists the negative rank " << r;
      if (!unique.insert(r).second)
        return emitOpError() << "lists rank " << r << " twice";
    }
  }
  return success();
}

int64_t MeshOp::getNumDevices() { return product(getShape()); }

int64_t MeshOp::getRank(int64_t index) {
  if (std::optional<ArrayRef<int64_t>> ranks = getRanks())
    return (*ranks)[index];
  return index;
}

int64_t MeshOp::getAxisIndex(StringRef name) {
  for (auto [i, axis] :
       llvm::enumerate(getAxisNames().getAsValueRange<StringAttr>()))
    if (axis == name)
      return i;
  return -1;
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  RankedTensorType type = getTensorType();
  if (!type.hasStaticShape())
    return emitOpError() << "has the dynamic shape " << type
                         << "; pc needs static shapes to plan layouts";
  if (!fitsElementLimit(type.getShape()))
    return emitOpError() << "has the shape " << type
                         << ", which has more elements than pc supports (2^"
                         << kMaxElementsLog2 << ")";
  if (type.getEncoding() && !isa<SbpAttr>(type.getEncoding()))
    return emitOpError() << "has the encoding " << type.getEncoding()
                         << ", which is not a #pc.sbp layout";
  InitKind kind = getInit().getKind();
  bool random = kind == InitKind::normal ||
                kind == InitKind::truncated_normal || kind == InitKind::uniform;
  if (random && !isa<FloatType>(type.getElementType()))
    return emitOpError() << "initializer " << getInit()
                         << " needs a floating-point parameter, not " << type;
  return success();
}

LogicalResult ParamOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifySbpType(getOperation(), getType(), "type", symbols);
}

/// `value` is parameter `param`'s value: its logical shape and element type
/// in any layout (that it is the parameter's layout is propagation's to
/// ensure, as for every op), or, in a per-device program, a piece of it (no
/// encoding, the element type and rank, no dim larger).
static bool isValueOf(ParamOp param, RankedTensorType value) {
  RankedTensorType logical = param.getTensorType();
  if (logical.getElementType() != value.getElementType() ||
      logical.getRank() != value.getRank())
    return false;
  if (logical.getShape() == value.getShape())
    return true;
  return getSbp(logical) && !getSbp(value) &&
         llvm::all_of(llvm::zip(logical.getShape(), value.getShape()),
                      [](auto p) { return std::get<1>(p) <= std::get<0>(p); });
}

//===----------------------------------------------------------------------===//
// SetParamOp
//===----------------------------------------------------------------------===//

LogicalResult SetParamOp::verifySymbolUses(SymbolTableCollection &symbols) {
  Operation *symbol = symbols.lookupNearestSymbolFrom(*this, getNameAttr());
  auto param = dyn_cast_or_null<ParamOp>(symbol);
  if (!param)
    return emitOpError() << "refers to " << getNameAttr()
                         << ", which is not a pc.param";
  auto value = cast<RankedTensorType>(getValue().getType());
  if (!isValueOf(param, value))
    return emitOpError() << "value type " << value
                         << " is not a value of parameter " << getNameAttr()
                         << " of type " << param.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// GetParamOp
//===----------------------------------------------------------------------===//

LogicalResult GetParamOp::verifySymbolUses(SymbolTableCollection &symbols) {
  Operation *symbol = symbols.lookupNearestSymbolFrom(*this, getNameAttr());
  if (!symbol)
    return emitOpError() << "refers to unknown parameter " << getNameAttr();
  auto param = dyn_cast<ParamOp>(symbol);
  if (!param)
    return emitOpError() << "refers to " << getNameAttr() << ", which is a '"
                         << symbol->getName() << "', not a pc.param";
  if (param.getType() == getType())
    return success();
  // In a per-device program the result is this device's piece of a laid
  // out parameter: no encoding, the same element type and rank, and no dim
  // larger than the logical one.
  RankedTensorType logical = param.getTensorType(), local = getType();
  bool isPiece =
      getSbp(logical) && !getSbp(local) &&
      logical.getElementType() == local.getElementType() &&
      logical.getRank() == local.getRank() &&
      llvm::all_of(llvm::zip(logical.getShape(), local.getShape()),
                   [](auto p) { return std::get<1>(p) <= std::get<0>(p); });
  if (!isPiece)
    return emitOpError() << "result type " << getType()
                         << " differs from the type " << param.getType()
                         << " of parameter " << getNameAttr();
  return success();
}

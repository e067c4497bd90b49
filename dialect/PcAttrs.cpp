//===- PcAttrs.cpp - pc attributes ----------------------------------------===//

#include "dialect/PcAttrs.h"
#include "dialect/PcDialect.h"
#include "pipeline/Schedule.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pc;

#include "dialect/PcEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialect/PcAttrs.cpp.inc"

void PcDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialect/PcAttrs.cpp.inc"
      >();
}

SbpAttr pc::getSbp(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return {};
  return dyn_cast_or_null<SbpAttr>(tensor.getEncoding());
}

//===----------------------------------------------------------------------===//
// SbpAttr
//===----------------------------------------------------------------------===//

static ParseResult parseSbpEntry(AsmParser &parser, SbpEntry &entry) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef kind;
  if (parser.parseOptionalKeyword(&kind))
    return parser.emitError(loc, "expected an SBP entry: S(dim), B, P or "
                                 "P(sum|max|min|avg)");
  if (kind == "B") {
    entry = SbpEntry::broadcast();
    return success();
  }
  if (kind == "S") {
    int32_t dim;
    if (parser.parseLParen() || parser.parseInteger(dim) ||
        parser.parseRParen())
      return failure();
    entry = SbpEntry::split(dim);
    return success();
  }
  if (kind == "P") {
    entry = SbpEntry::partial(ReduceKind::Sum);
    if (failed(parser.parseOptionalLParen()))
      return success();
    SMLoc reduceLoc = parser.getCurrentLocation();
    StringRef reduce;
    if (parser.parseKeyword(&reduce))
      return failure();
    std::optional<ReduceKind> k = symbolizeReduceKind(reduce);
    if (!k)
      return parser.emitError(reduceLoc, "unknown reduction '")
             << reduce << "' in P(...); expected sum, max, min or avg";
    entry.reduce = *k;
    return parser.parseRParen();
  }
  return parser.emitError(loc, "unknown SBP entry '")
         << kind << "'; expected S(dim), B, P or P(sum|max|min|avg)";
}

Attribute SbpAttr::parse(AsmParser &parser, Type) {
  StringAttr meshName;
  SmallVector<SbpEntry> entries;
  if (parser.parseLess() || parser.parseSymbolName(meshName) ||
      parser.parseComma())
    return {};
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     [&]() -> ParseResult {
                                       SbpEntry e;
                                       if (parseSbpEntry(parser, e))
                                         return failure();
                                       entries.push_back(e);
                                       return success();
                                     }))
    return {};
  if (parser.parseGreater())
    return {};
  return parser.getChecked<SbpAttr>(parser.getContext(),
                                    FlatSymbolRefAttr::get(meshName), entries);
}

void SbpAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", " << formatEntries() << ">";
}

LogicalResult SbpAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              FlatSymbolRefAttr mesh,
                              ArrayRef<SbpEntry> entries) {
  if (!mesh)
    return emitError() << "an SBP needs a mesh symbol";
  if (entries.empty())
    return emitError() << "an SBP needs one entry per axis of mesh " << mesh
                       << "; it has none";
  // The boxing planner keys a layout by four bits of split dim
  // (boxing/BoxingPlanner.cpp).
  constexpr int64_t kMaxSplitDim = 15;
  for (auto [i, e] : llvm::enumerate(entries)) {
    if (e.isSplit() && e.dim < 0)
      return emitError() << "split dim " << e.dim << " of SBP entry #" << i
                         << " must be non-negative";
    if (e.isSplit() && e.dim > kMaxSplitDim)
      return emitError() << "split dim " << e.dim << " of SBP entry #" << i
                         << " is past " << kMaxSplitDim
                         << ", the last dim pc splits";
  }
  return success();
}

LogicalResult
SbpAttr::verifyEncoding(ArrayRef<int64_t> shape, Type elementType,
                        function_ref<InFlightDiagnostic()> emitError) const {
  for (auto [i, e] : llvm::enumerate(getEntries())) {
    if (e.isSplit() && e.dim >= static_cast<int64_t>(shape.size()))
      return emitError() << "split dim " << e.dim << " of SBP entry #" << i
                         << " in " << *this << " is out of range for a rank-"
                         << shape.size() << " tensor";
    if (e.isPartial() && e.reduce == ReduceKind::Avg &&
        !isa<FloatType>(elementType))
      return emitError() << "P(avg) in " << *this << " needs a floating-point "
                         << "element type, not " << elementType;
  }
  return success();
}

bool SbpAttr::hasPartial() const {
  return llvm::any_of(getEntries(), [](SbpEntry e) { return e.isPartial(); });
}

bool SbpAttr::hasSplit() const {
  return llvm::any_of(getEntries(), [](SbpEntry e) { return e.isSplit(); });
}

std::string SbpAttr::formatEntries() const { return formatNdSbp(getEntries()); }

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

namespace {
/// The named parameters each initializer takes, in printing order, with the
/// default of an optional one.
struct InitParams {
  const char *first = nullptr;
  const char *second = nullptr;
  std::optional<double> firstDefault;
};
} // namespace

static InitParams getInitParams(InitKind kind) {
  switch (kind) {
  case InitKind::zeros:
  case InitKind::ones:
    return {};
  case InitKind::constant:
    return {"value", nullptr, std::nullopt};
  case InitKind::normal:
  case InitKind::truncated_normal:
    return {"mean", "std", 0.0};
  case InitKind::uniform:
    return {"low", "high", std::nullopt};
  }
  return {};
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef kindName;
  if (parser.parseLess() || parser.parseKeyword(&kindName))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(kindName);
  if (!kind) {
    parser.emitError(loc, "unknown initializer '")
        << kindName << "'; expected zeros, ones, constant, normal, "
        << "truncated_normal or uniform";
    return {};
  }
  InitParams names = getInitParams(*kind);
  std::optional<double> first = names.firstDefault, second;
  if (succeeded(parser.parseOptionalLParen())) {
    auto parseOne = [&]() -> ParseResult {
      SMLoc keyLoc = parser.getCurrentLocation();
      StringRef key;
      double value;
      if (parser.parseKeyword(&key) || parser.parseEqual() ||
          parser.parseFloat(value))
        return failure();
      if (names.first && key == names.first)
        first = value;
      else if (names.second && key == names.second)
        second = value;
      else
        return parser.emitError(keyLoc, "#pc.init<")
               << kindName << "> has no parameter '" << key << "'";
      return success();
    };
    if (parser.parseCommaSeparatedList(parseOne) || parser.parseRParen())
      return {};
  }
  if (parser.parseGreater())
    return {};
  if (names.first && !first) {
    parser.emitError(loc, "#pc.init<")
        << kindName << "> needs the parameter '" << names.first << "'";
    return {};
  }
  if (names.second && !second) {
    parser.emitError(loc, "#pc.init<")
        << kindName << "> needs the parameter '" << names.second << "'";
    return {};
  }
  return parser.getChecked<InitAttr>(parser.getContext(), *kind,
                                     APFloat(first.value_or(0.0)),
                                     APFloat(second.value_or(0.0)));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyInitKind(getKind());
  InitParams names = getInitParams(getKind());
  if (names.first) {
    printer << "(";
    bool needComma = false;
    if (!names.firstDefault || getFirst() != *names.firstDefault) {
      printer << names.first << " = ";
      printer.printFloat(getA());
      needComma = true;
    }
    if (names.second) {
      if (needComma)
        printer << ", ";
      printer << names.second << " = ";
      printer.printFloat(getB());
    }
    printer << ")";
  }
  printer << ">";
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, APFloat a, APFloat b) {
  double x = a.convertToDouble(), y = b.convertToDouble();
  if (!std::isfinite(x) || !std::isfinite(y))
    return emitError() << "#pc.init<" << stringifyInitKind(kind)
                       << "> parameters must be finite";
  if ((kind == InitKind::normal || kind == InitKind::truncated_normal) &&
      !(y > 0))
    return emitError() << "#pc.init<" << stringifyInitKind(kind)
                       << "> needs std > 0, not " << y;
  if (kind == InitKind::uniform && !(x < y))
    return emitError() << "#pc.init<uniform> needs low < high, not low = " << x
                       << " and high = " << y;
  return success();
}

ReduceKind pc::toReduceKind(Reduction r) {
  switch (r) {
  case Reduction::sum:
    return ReduceKind::Sum;
  case Reduction::max:
    return ReduceKind::Max;
  case Reduction::min:
    return ReduceKind::Min;
  case Reduction::avg:
    return ReduceKind::Avg;
  }
  return ReduceKind::Sum;
}

Reduction pc::toReduction(ReduceKind k) {
  switch (k) {
  case ReduceKind::Sum:
    return Reduction::sum;
  case ReduceKind::Max:
    return Reduction::max;
  case ReduceKind::Min:
    return Reduction::min;
  case ReduceKind::Avg:
    return Reduction::avg;
  }
  return Reduction::sum;
}

LogicalResult ActionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 PipelineActionKind, int64_t stage,
                                 int64_t microBatch) {
  if (stage < 0 || microBatch < 0)
    return emitError() << "#pc.action needs a stage and a micro-batch of at "
                          "least 0, not "
                       << stage << " and " << microBatch;
  return success();
}

LogicalResult PipelineAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   StringRef schedule, int64_t stages,
                                   int64_t microBatches, int64_t virtualStages,
                                   bool) {
  std::optional<pipeline::ScheduleKind> kind =
      pipeline::parseScheduleKind(schedule);
  if (!kind)
    return emitError() << "#pc.pipeline: unknown schedule '" << schedule
                       << "'; expected gpipe, 1f1b, interleaved or zb-h1";
  std::string bad =
      pipeline::validate({*kind, stages, microBatches, virtualStages});
  if (!bad.empty())
    return emitError() << "#pc.pipeline: " << bad;
  return success();
}

pipeline::Action ActionAttr::asAction() const {
  return {static_cast<pipeline::ActionKind>(getKind()), getStage(),
          getMicroBatch()};
}

pipeline::ScheduleSpec PipelineAttr::getSpec() const {
  return {*pipeline::parseScheduleKind(getSchedule()), getStages(),
          getMicroBatches(), getVirtualStages(), getBackward()};
}

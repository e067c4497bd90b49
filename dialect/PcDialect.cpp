//===- PcDialect.cpp - The pc dialect -------------------------------------===//

#include "dialect/PcDialect.h"
#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"

#include "dialect/PcDialect.cpp.inc"

using namespace mlir;

void pc::PcDialect::initialize() {
  registerAttributes();
  registerOps();
  // func.func is a dependent dialect, so it is loaded by now; its signature
  // may carry SBP encodings that must name a real mesh.
  attachFuncSbpVerifier(*getContext());
}

/// The pipeline attributes (docs/pipeline.md). Sets `handled` when `attr`
/// is one of them.
static LogicalResult verifyPipelineAttr(Operation *op, NamedAttribute attr,
                                        bool &handled) {
  handled = true;
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == pc::attrs::kStage) {
    auto stage = dyn_cast<IntegerAttr>(value);
    // Bounded, so that stage counts (the largest plus one) cannot overflow.
    if (!stage || stage.getInt() < 0 || stage.getInt() >= (int64_t(1) << 20))
      return op->emitOpError("'pc.stage' is a model stage: an integer from "
                             "0 to 2^20 - 1");
    return success();
  }
  if (name == pc::attrs::kSegment) {
    auto segment = dyn_cast<IntegerAttr>(value);
    if (!segment || segment.getInt() < 0)
      return op->emitOpError("'pc.segment' is a recompute segment: an "
                             "integer of at least 0");
    return success();
  }
  if (name == pc::attrs::kBackward || name == pc::attrs::kInputGrad ||
      name == pc::attrs::kRecompute || name == pc::attrs::kHost) {
    if (!isa<UnitAttr>(value))
      return op->emitOpError() << "'" << name << "' is a unit attribute";
    return success();
  }
  if (name == pc::attrs::kOptimizerState) {
    if (!isa<UnitAttr>(value) || !isa<pc::ParamOp>(op))
      return op->emitOpError("'pc.optimizer_state' is a unit attribute of a "
                             "pc.param");
    return success();
  }
  if (name == pc::attrs::kAction) {
    if (!isa<pc::ActionAttr>(value))
      return op->emitOpError("'pc.action' must be a #pc.action");
    return success();
  }
  bool onFunc = isa<func::FuncOp>(op);
  if (name == pc::attrs::kPipeline) {
    if (!onFunc || !isa<pc::PipelineAttr>(value))
      return op->emitOpError("'pc.pipeline' must be a #pc.pipeline on a "
                             "func.func");
    return success();
  }
  if (name == pc::attrs::kStageMeshes) {
    auto list = dyn_cast<ArrayAttr>(value);
    if (!onFunc || !list || list.empty() ||
        !llvm::all_of(list,
                      [](Attribute a) { return isa<FlatSymbolRefAttr>(a); }))
      return op->emitOpError("'pc.stage_meshes' must be a non-empty array of "
                             "mesh symbols on a func.func");
    for (Attribute a : list)
      if (!SymbolTable::lookupNearestSymbolFrom<pc::MeshOp>(
              op, cast<FlatSymbolRefAttr>(a)))
        return op->emitOpError("names ")
               << a << " as a stage mesh, but it is not a pc.mesh";
    return success();
  }
  if (name == pc::attrs::kSchedule) {
    auto list = dyn_cast<ArrayAttr>(value);
    if (!onFunc || !list ||
        !llvm::all_of(list, [](Attribute a) { return isa<pc::ActionAttr>(a); }))
      return op->emitOpError("'pc.schedule' must be an array of #pc.action "
                             "on a func.func");
    return success();
  }
  if (name == pc::attrs::kCostModel) {
    if (!isa<ModuleOp>(op) || !pc::attrs::getCostModel(op))
      return op->emitOpError(
          "'pc.cost_model' must be a dictionary of positive f64 rates "
          "{peak_flops, memory_bandwidth, link_bandwidth, link_latency, "
          "kernel_latency (or 0)}, and optionally the unit shared_cores, a "
          "positive i64 concurrent_devices, positive f64 p2p_latency, "
          "p2p_work, call_latency, half_peak_flops, wake_work, "
          "kernel_in_step and straggler_lag, and f64 latency_busy, "
          "queued_share and core_efficiency in (0, 1), on the module");
    return success();
  }
  if (name == pc::attrs::kMemory) {
    auto dict = dyn_cast<DictionaryAttr>(value);
    if (!onFunc || !dict || !pc::attrs::getMemoryUse(op))
      return op->emitOpError(
          "'pc.memory' must be a dictionary of i64 byte counts (peak, "
          "parameters, gradients, optimizer_state, activations, workspace, "
          "and optionally activations_peak) on a func.func");
    return success();
  }
  if (name == pc::attrs::kLossScaling) {
    std::optional<pc::attrs::LossScaling> s = pc::attrs::getLossScaling(op);
    if (!onFunc || !s)
      return op->emitOpError(
          "'pc.loss_scaling' must be a dictionary {scale = @param, interval, "
          "growth, backoff[, clean_steps = @param]} on a func.func");
    for (FlatSymbolRefAttr p : {s->scale, s->cleanSteps})
      if (p && !SymbolTable::lookupNearestSymbolFrom<pc::ParamOp>(op, p))
        return op->emitOpError("'pc.loss_scaling' names ")
               << p << ", which is not a pc.param";
    if (s->interval < 1 || !(s->growth >= 1) || !(s->backoff > 0) ||
        !(s->backoff <= 1))
      return op->emitOpError("'pc.loss_scaling' needs interval >= 1, growth "
                             ">= 1 and 0 < backoff <= 1");
    return success();
  }
  if (name == pc::attrs::kMicroBatch) {
    if (!onFunc || !isa<DenseI64ArrayAttr>(value))
      return op->emitOpError("'pc.micro_batch' must be an array<i64> on a "
                             "func.func");
    return success();
  }
  handled = false;
  return success();
}

LogicalResult pc::PcDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  if (attr.getName() == pc::attrs::kOperandSbps) {
    auto wants = dyn_cast<ArrayAttr>(attr.getValue());
    if (!wants || wants.size() != op->getNumOperands() ||
        !llvm::all_of(wants, [](Attribute a) { return isa<SbpAttr>(a); }))
      return op->emitOpError()
             << "'" << pc::attrs::kOperandSbps
             << "' must be an array of one #pc.sbp per operand ("
             << op->getNumOperands() << ")";
    for (auto [i, want, v] : llvm::enumerate(wants, op->getOperands())) {
      auto tensor = dyn_cast<RankedTensorType>(v.getType());
      if (!tensor || failed(cast<SbpAttr>(want).verifyEncoding(
                         tensor.getShape(), tensor.getElementType(), [&] {
                           return op->emitOpError() << "operand #" << i << ": ";
                         })))
        return failure();
    }
    return success();
  }
  if (attr.getName() == pc::attrs::kGraph) {
    auto func = dyn_cast<func::FuncOp>(op);
    if (!func || !isa<StringAttr>(attr.getValue()))
      return op->emitOpError("'pc.graph' names the logical graph of a "
                             "per-device program: a string on a func.func");
    // A runner feeds and reads a per-device program through its interface:
    // every argument and result says which logical value it is a piece of.
    for (bool args : {true, false}) {
      unsigned n = args ? func.getNumArguments() : func.getNumResults();
      llvm::DenseSet<int64_t> seen;
      for (unsigned i = 0; i < n; ++i) {
        std::optional<int64_t> index = args
                                           ? pc::attrs::getArgIndex(func, i)
                                           : pc::attrs::getResultIndex(func, i);
        Type logical = args ? pc::attrs::getArgLogicalType(func, i)
                            : pc::attrs::getResultLogicalType(func, i);
        const char *what = args ? "argument" : "result";
        if (!index || !logical)
          return op->emitOpError()
                 << "is a per-device program, but its " << what << " #" << i
                 << " has no 'pc.index' and 'pc.logical_type'";
        if (*index < 0 || !seen.insert(*index).second)
          return op->emitOpError()
                 << "is a per-device program, but its " << what << " #" << i
                 << " has 'pc.index' " << *index
                 << ", negative or given to another " << what;
      }
    }
    return success();
  }
  if (attr.getName() == pc::attrs::kRanks) {
    auto ranks = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!isa<func::FuncOp>(op) || !ranks || ranks.empty())
      return op->emitOpError("'pc.ranks' lists the ranks that run a "
                             "per-device program: a non-empty array<i64> on a "
                             "func.func");
    llvm::DenseSet<int64_t> seen;
    for (int64_t r : ranks.asArrayRef())
      if (r < 0 || !seen.insert(r).second)
        return op->emitOpError() << "'pc.ranks' lists rank " << r
                                 << ", which is negative or listed twice";
    return success();
  }
  bool handled = false;
  LogicalResult pipelined = verifyPipelineAttr(op, attr, handled);
  if (handled)
    return pipelined;
  return op->emitOpError() << "has the unknown pc attribute '"
                           << attr.getName().getValue() << "'";
}

/// The argument and result attributes of per-device programs.
static LogicalResult verifyValueAttr(Operation *op, NamedAttribute attr,
                                     StringRef what, unsigned index) {
  StringRef article = what == "argument" ? "an " : "a ";
  // A user-facing name of a graph input or output: pc-run reads and writes
  // `<name>.npy`, so the name must be a plain file name, and unique.
  if (attr.getName() == pc::attrs::kName) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!name || name.getValue().empty() || name.getValue().front() == '.' ||
        !llvm::all_of(name.getValue(), [](char c) {
          return llvm::isAlnum(c) || c == '_' || c == '.' || c == '-';
        }))
      return op->emitOpError()
             << "'pc.name' of " << what << " #" << index
             << " must be a non-empty string of letters, digits, '_', '.' "
                "and '-' that does not start with '.'";
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (!func)
      return success();
    bool isArg = what == "argument";
    unsigned count = isArg ? func.getNumArguments() : func.getNumResults();
    for (unsigned other = 0; other < index && other < count; ++other) {
      auto seen =
          isArg ? func.getArgAttrOfType<StringAttr>(other, pc::attrs::kName)
                : func.getResultAttrOfType<StringAttr>(other, pc::attrs::kName);
      if (seen == name)
        return op->emitOpError()
               << what << "s #" << other << " and #" << index
               << " have the same 'pc.name' \"" << name.getValue() << "\"";
    }
    return success();
  }
  if (attr.getName() == pc::attrs::kIndex) {
    if (!isa<IntegerAttr>(attr.getValue()))
      return op->emitOpError()
             << "'pc.index' of " << article << what << " must be an integer";
    return success();
  }
  if (attr.getName() == pc::attrs::kLogicalType) {
    auto type = dyn_cast<TypeAttr>(attr.getValue());
    if (!type || !pc::getSbp(type.getValue()))
      return op->emitOpError() << "'pc.logical_type' of " << article << what
                               << " must be a tensor type with a #pc.sbp "
                                  "layout";
    return success();
  }
  // What a result is for in training: the loss that --pc-autodiff
  // differentiates, and the gradients it adds.
  if (attr.getName() == pc::attrs::kLoss ||
      attr.getName() == pc::attrs::kGrad) {
    bool loss = attr.getName() == pc::attrs::kLoss;
    if (what != "result")
      return op->emitOpError() << "'" << attr.getName().getValue()
                               << "' marks a result, not an " << what;
    if (loss ? !isa<UnitAttr>(attr.getValue())
             : !isa<FlatSymbolRefAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << attr.getName().getValue() << "' of result #" << index
             << (loss ? " is a unit attribute"
                      : " names the parameter it is the gradient of (@name)");
    return success();
  }
  return op->emitOpError() << "has the unknown pc " << what << " attribute '"
                           << attr.getName().getValue() << "'";
}

LogicalResult pc::PcDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                      unsigned index,
                                                      NamedAttribute attr) {
  return verifyValueAttr(op, attr, "argument", index);
}

LogicalResult pc::PcDialect::verifyRegionResultAttribute(Operation *op,
                                                         unsigned,
                                                         unsigned index,
                                                         NamedAttribute attr) {
  return verifyValueAttr(op, attr, "result", index);
}

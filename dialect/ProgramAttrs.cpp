//===- ProgramAttrs.cpp - Typed access to the pc.* attributes -------------===//

#include "dialect/ProgramAttrs.h"

using namespace mlir;

namespace pc::attrs {

StringAttr getGraph(Operation *op) {
  return op->getAttrOfType<StringAttr>(kGraph);
}

void setGraph(Operation *op, StringRef graph) {
  op->setAttr(kGraph, StringAttr::get(op->getContext(), graph));
}

ArrayRef<int64_t> getRanks(Operation *op) {
  if (auto ranks = op->getAttrOfType<DenseI64ArrayAttr>(kRanks))
    return ranks.asArrayRef();
  return {};
}

void setRanks(Operation *op, ArrayRef<int64_t> ranks) {
  op->setAttr(kRanks, DenseI64ArrayAttr::get(op->getContext(), ranks));
}

ArrayAttr getOperandSbps(Operation *op) {
  return op->getAttrOfType<ArrayAttr>(kOperandSbps);
}

void setOperandSbps(Operation *op, ArrayAttr sbps) {
  op->setAttr(kOperandSbps, sbps);
}

std::optional<int64_t> getArgIndex(FunctionOpInterface f, unsigned i) {
  if (auto a = f.getArgAttrOfType<IntegerAttr>(i, kIndex))
    return a.getInt();
  return std::nullopt;
}

std::optional<int64_t> getResultIndex(FunctionOpInterface f, unsigned i) {
  if (auto a = f.getResultAttrOfType<IntegerAttr>(i, kIndex))
    return a.getInt();
  return std::nullopt;
}

Type getArgLogicalType(FunctionOpInterface f, unsigned i) {
  auto a = f.getArgAttrOfType<TypeAttr>(i, kLogicalType);
  return a ? a.getValue() : Type();
}

Type getResultLogicalType(FunctionOpInterface f, unsigned i) {
  auto a = f.getResultAttrOfType<TypeAttr>(i, kLogicalType);
  return a ? a.getValue() : Type();
}

StringAttr getArgName(FunctionOpInterface f, unsigned i) {
  return f.getArgAttrOfType<StringAttr>(i, kName);
}

StringAttr getResultName(FunctionOpInterface f, unsigned i) {
  return f.getResultAttrOfType<StringAttr>(i, kName);
}

void setArgName(FunctionOpInterface f, unsigned i, StringRef name) {
  f.setArgAttr(i, kName, StringAttr::get(f->getContext(), name));
}

void setResultName(FunctionOpInterface f, unsigned i, StringRef name) {
  f.setResultAttr(i, kName, StringAttr::get(f->getContext(), name));
}

bool isLoss(FunctionOpInterface f, unsigned i) {
  return static_cast<bool>(f.getResultAttrOfType<UnitAttr>(i, kLoss));
}

void setLoss(FunctionOpInterface f, unsigned i) {
  f.setResultAttr(i, kLoss, UnitAttr::get(f->getContext()));
}

FlatSymbolRefAttr getGrad(FunctionOpInterface f, unsigned i) {
  return f.getResultAttrOfType<FlatSymbolRefAttr>(i, kGrad);
}

NamedAttribute index(Builder &b, int64_t index) {
  return b.getNamedAttr(kIndex, b.getI64IntegerAttr(index));
}

NamedAttribute logicalType(Builder &b, Type type) {
  return b.getNamedAttr(kLogicalType, TypeAttr::get(type));
}

NamedAttribute name(Builder &b, StringRef name) {
  return b.getNamedAttr(kName, b.getStringAttr(name));
}

NamedAttribute grad(Builder &b, FlatSymbolRefAttr param) {
  return b.getNamedAttr(kGrad, param);
}

} // namespace pc::attrs

namespace pc::attrs {

std::optional<int64_t> getStage(Operation *op) {
  if (auto a = op->getAttrOfType<IntegerAttr>(kStage))
    return a.getInt();
  return std::nullopt;
}

void setStage(Operation *op, int64_t stage) {
  op->setAttr(kStage,
              IntegerAttr::get(IntegerType::get(op->getContext(), 64), stage));
}

namespace {
/// MemoryUse's fields, as the dictionary names them.
constexpr std::pair<const char *, int64_t MemoryUse::*> kMemoryFields[] = {
    {"peak", &MemoryUse::peak},
    {"parameters", &MemoryUse::parameters},
    {"gradients", &MemoryUse::gradients},
    {"optimizer_state", &MemoryUse::optimizerState},
    {"activations", &MemoryUse::activations},
    {"workspace", &MemoryUse::workspace},
    {"activations_peak", &MemoryUse::activationsPeak},
    {"host_peak", &MemoryUse::hostPeak},
};
} // namespace

std::optional<MemoryUse> getMemoryUse(Operation *f) {
  auto dict = f->getAttrOfType<DictionaryAttr>(kMemory);
  if (!dict)
    return std::nullopt;
  MemoryUse use;
  for (auto [name, field] : kMemoryFields) {
    auto value = dict.getAs<IntegerAttr>(name);
    // activations_peak and host_peak came later; IR written before them
    // still reads.
    if (!value &&
        (llvm::StringRef(name) == "activations_peak" ||
         llvm::StringRef(name) == "host_peak") &&
        !dict.get(name))
      continue;
    if (!value)
      return std::nullopt;
    use.*field = value.getInt();
  }
  return use;
}

void setMemoryUse(Operation *f, const MemoryUse &use) {
  Builder b(f->getContext());
  SmallVector<NamedAttribute> fields;
  for (auto [name, field] : kMemoryFields)
    // Host memory only under offload: other plans read as they did.
    if (use.*field != 0 || llvm::StringRef(name) != "host_peak")
      fields.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(use.*field)));
  f->setAttr(kMemory, b.getDictionaryAttr(fields));
}

namespace {
constexpr std::pair<const char *, double CostModel::*> kCostFields[] = {
    {"peak_flops", &CostModel::peakFlops},
    {"memory_bandwidth", &CostModel::memoryBandwidth},
    {"link_bandwidth", &CostModel::linkBandwidth},
    {"link_latency", &CostModel::linkLatency},
    {"kernel_latency", &CostModel::kernelLatency},
};
constexpr std::pair<const char *, double CostModel::*> kOptionalRates[] = {
    {"p2p_latency", &CostModel::p2pLatency},
    {"p2p_work", &CostModel::p2pWork},
    {"call_latency", &CostModel::callLatency},
    {"half_peak_flops", &CostModel::halfPeakFlops},
    {"wake_work", &CostModel::wakeWork},
    {"kernel_in_step", &CostModel::kernelInStep},
    {"straggler_lag", &CostModel::stragglerLag},
};
constexpr std::pair<const char *, double CostModel::*> kOptionalShares[] = {
    {"latency_busy", &CostModel::latencyBusy},
    {"queued_share", &CostModel::queuedShare},
    {"core_efficiency", &CostModel::coreEfficiency},
};
} // namespace

std::optional<CostModel> getCostModel(Operation *module) {
  auto dict = module->getAttrOfType<DictionaryAttr>(kCostModel);
  if (!dict)
    return std::nullopt;
  CostModel model;
  if (Attribute shared = dict.get("shared_cores")) {
    if (!isa<UnitAttr>(shared))
      return std::nullopt;
    model.sharedCores = true;
  }
  if (Attribute concurrent = dict.get("concurrent_devices")) {
    auto n = dyn_cast<IntegerAttr>(concurrent);
    if (!n || n.getInt() < 1)
      return std::nullopt;
    model.concurrentDevices = n.getInt();
  }
  // Optional entries: rates, positive, 0 when absent; shares, in (0, 1),
  // 1 when absent. Neither is written at its default.
  size_t optional = 0;
  auto readOptional = [&](const auto &fields, bool share) {
    for (auto [name, field] : fields) {
      Attribute entry = dict.get(name);
      if (!entry)
        continue;
      auto f = dyn_cast<FloatAttr>(entry);
      if (!f || !(f.getValueAsDouble() > 0) ||
          (share && !(f.getValueAsDouble() < 1)))
        return false;
      model.*field = f.getValueAsDouble();
      ++optional;
    }
    return true;
  };
  if (!readOptional(kOptionalRates, /*share=*/false) ||
      !readOptional(kOptionalShares, /*share=*/true))
    return std::nullopt;
  if (dict.size() != std::size(kCostFields) + model.sharedCores +
                         (model.concurrentDevices > 0) + optional)
    return std::nullopt;
  for (auto [name, field] : kCostFields) {
    auto value = dict.getAs<FloatAttr>(name);
    bool mayBeZero = llvm::StringRef(name) == "kernel_latency";
    if (!value || !(value.getValueAsDouble() > 0 ||
                    (mayBeZero && value.getValueAsDouble() == 0)))
      return std::nullopt;
    model.*field = value.getValueAsDouble();
  }
  return model;
}

void setCostModel(Operation *module, const CostModel &model) {
  Builder b(module->getContext());
  SmallVector<NamedAttribute> fields;
  for (auto [name, field] : kCostFields)
    fields.push_back(b.getNamedAttr(name, b.getF64FloatAttr(model.*field)));
  if (model.sharedCores)
    fields.push_back(b.getNamedAttr("shared_cores", b.getUnitAttr()));
  if (model.concurrentDevices > 0)
    fields.push_back(b.getNamedAttr(
        "concurrent_devices", b.getI64IntegerAttr(model.concurrentDevices)));
  for (auto [name, field] : kOptionalRates)
    if (model.*field > 0)
      fields.push_back(b.getNamedAttr(name, b.getF64FloatAttr(model.*field)));
  for (auto [name, field] : kOptionalShares)
    if (model.*field < 1)
      fields.push_back(b.getNamedAttr(name, b.getF64FloatAttr(model.*field)));
  module->setAttr(kCostModel, b.getDictionaryAttr(fields));
}

double CostModel::peakFor(Type elementType) const {
  bool half = elementType && (elementType.isBF16() || elementType.isF16());
  return half && halfPeakFlops > 0 ? halfPeakFlops : peakFlops;
}

bool isHost(Operation *op) { return op->hasAttr(kHost); }
void setHost(Operation *op) {
  op->setAttr(kHost, UnitAttr::get(op->getContext()));
}

std::optional<LossScaling> getLossScaling(Operation *f) {
  auto dict = f->getAttrOfType<DictionaryAttr>(kLossScaling);
  if (!dict)
    return std::nullopt;
  LossScaling s;
  s.scale = dict.getAs<FlatSymbolRefAttr>("scale");
  s.cleanSteps = dict.getAs<FlatSymbolRefAttr>("clean_steps");
  auto interval = dict.getAs<IntegerAttr>("interval");
  auto growth = dict.getAs<FloatAttr>("growth");
  auto backoff = dict.getAs<FloatAttr>("backoff");
  if (!s.scale || !interval || !growth || !backoff)
    return std::nullopt;
  s.interval = interval.getInt();
  s.growth = growth.getValueAsDouble();
  s.backoff = backoff.getValueAsDouble();
  s.injectOverflow = static_cast<bool>(dict.get("inject_overflow"));
  return s;
}

void setLossScaling(Operation *f, const LossScaling &s) {
  Builder b(f->getContext());
  SmallVector<NamedAttribute> fields{
      b.getNamedAttr("scale", s.scale),
      b.getNamedAttr("interval", b.getI64IntegerAttr(s.interval)),
      b.getNamedAttr("growth", b.getF64FloatAttr(s.growth)),
      b.getNamedAttr("backoff", b.getF64FloatAttr(s.backoff))};
  if (s.cleanSteps)
    fields.push_back(b.getNamedAttr("clean_steps", s.cleanSteps));
  if (s.injectOverflow)
    fields.push_back(b.getNamedAttr("inject_overflow", b.getUnitAttr()));
  f->setAttr(kLossScaling, b.getDictionaryAttr(fields));
}

bool isOptimizerState(Operation *param) {
  return param->hasAttr(kOptimizerState);
}
void setOptimizerState(Operation *param) {
  param->setAttr(kOptimizerState, UnitAttr::get(param->getContext()));
}

bool isBackward(Operation *op) { return op->hasAttr(kBackward); }
void setBackward(Operation *op) {
  op->setAttr(kBackward, UnitAttr::get(op->getContext()));
}
bool isInputGrad(Operation *op) { return op->hasAttr(kInputGrad); }
void setInputGrad(Operation *op) {
  op->setAttr(kInputGrad, UnitAttr::get(op->getContext()));
}

std::optional<int64_t> getSegment(Operation *op) {
  if (auto a = op->getAttrOfType<IntegerAttr>(kSegment))
    return a.getInt();
  return std::nullopt;
}
void setSegment(Operation *op, int64_t segment) {
  op->setAttr(kSegment, IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                         segment));
}
bool isRecompute(Operation *op) { return op->hasAttr(kRecompute); }
void setRecompute(Operation *op) {
  op->setAttr(kRecompute, UnitAttr::get(op->getContext()));
}

SmallVector<FlatSymbolRefAttr> getStageMeshes(Operation *f) {
  SmallVector<FlatSymbolRefAttr> out;
  if (auto a = f->getAttrOfType<ArrayAttr>(kStageMeshes))
    for (Attribute m : a)
      if (auto ref = dyn_cast<FlatSymbolRefAttr>(m))
        out.push_back(ref);
  return out;
}

void setStageMeshes(Operation *f, ArrayRef<FlatSymbolRefAttr> meshes) {
  SmallVector<Attribute> refs(meshes.begin(), meshes.end());
  f->setAttr(kStageMeshes, ArrayAttr::get(f->getContext(), refs));
}

PipelineAttr getPipeline(Operation *f) {
  return f->getAttrOfType<PipelineAttr>(kPipeline);
}
void setPipeline(Operation *f, PipelineAttr pipeline) {
  f->setAttr(kPipeline, pipeline);
}

ActionAttr getAction(Operation *op) {
  return op->getAttrOfType<ActionAttr>(kAction);
}
void setAction(Operation *op, ActionAttr action) {
  op->setAttr(kAction, action);
}

std::optional<SmallVector<ActionAttr>> getSchedule(Operation *f) {
  auto a = f->getAttrOfType<ArrayAttr>(kSchedule);
  if (!a)
    return std::nullopt;
  SmallVector<ActionAttr> out;
  for (Attribute e : a)
    if (auto action = dyn_cast<ActionAttr>(e))
      out.push_back(action);
  return out;
}

void setSchedule(Operation *f, ArrayRef<ActionAttr> actions) {
  SmallVector<Attribute> list(actions.begin(), actions.end());
  f->setAttr(kSchedule, ArrayAttr::get(f->getContext(), list));
}

std::optional<SmallVector<int64_t>> getMicroBatch(Operation *f) {
  if (auto a = f->getAttrOfType<DenseI64ArrayAttr>(kMicroBatch))
    return SmallVector<int64_t>(a.asArrayRef());
  return std::nullopt;
}

void setMicroBatch(Operation *f, ArrayRef<int64_t> results) {
  f->setAttr(kMicroBatch, DenseI64ArrayAttr::get(f->getContext(), results));
}

void clearMicroBatch(Operation *f) { f->removeAttr(kMicroBatch); }

} // namespace pc::attrs

//===- ProgramAttrs.h - Typed access to the pc.* attributes -----*- C++ -*-===//
//
// The dialect's discardable attributes (PcBase.td, discardableAttrs), read
// and written through typed functions: the passes that set them, and the
// runtime, the tools and the API that read them, never spell a name.
//  - a per-device program (func.func): pc.graph, pc.ranks;
//  - an op after SBP propagation: pc.operand_sbps;
//  - a function's arguments and results: pc.index, pc.logical_type (per-device
//    programs), pc.name (any graph), pc.loss and pc.grad (results).
//
//===----------------------------------------------------------------------===//

#ifndef PC_DIALECT_PROGRAMATTRS_H
#define PC_DIALECT_PROGRAMATTRS_H

#include "dialect/PcAttrs.h"
#include "dialect/PcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <optional>

namespace pc::attrs {

// Names, for verifiers and attribute dictionaries.
inline constexpr llvm::StringLiteral kGraph =
    PcDialect::GraphAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kRanks =
    PcDialect::RanksAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kOperandSbps =
    PcDialect::OperandSbpsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kIndex =
    PcDialect::IndexAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kLogicalType =
    PcDialect::LogicalTypeAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kName =
    PcDialect::NameAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kLoss =
    PcDialect::LossAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kGrad =
    PcDialect::GradAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kStage =
    PcDialect::StageAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kBackward =
    PcDialect::BackwardAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kInputGrad =
    PcDialect::InputGradAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kStageMeshes =
    PcDialect::StageMeshesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kPipeline =
    PcDialect::PipelineAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kAction =
    PcDialect::ActionAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSchedule =
    PcDialect::ScheduleAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kMicroBatch =
    PcDialect::MicroBatchAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSegment =
    PcDialect::SegmentAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kRecompute =
    PcDialect::RecomputeAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kOptimizerState =
    PcDialect::OptimizerStateAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kMemory =
    PcDialect::MemoryAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kHost =
    PcDialect::HostAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kLossScaling =
    PcDialect::LossScalingAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kCostModel =
    PcDialect::CostModelAttrHelper::getNameStr();
/// The graph input pc-mixed-precision adds for tests that inject an
/// overflow: the loss's gradient seed is multiplied by it.
inline constexpr llvm::StringLiteral kInjectOverflowInput = "loss_scale.inject";

/// A parameter that holds optimizer state (pc-optimizer adds them), not a
/// model weight.
bool isOptimizerState(mlir::Operation *param);
void setOptimizerState(mlir::Operation *param);

//===--- CPU offload ------------------------------------------------------===//

/// A pc.param stored in host memory, or an op that runs on the host with
/// its results in host memory (pc-offload).
bool isHost(mlir::Operation *op);
void setHost(mlir::Operation *op);

//===--- Mixed precision --------------------------------------------------===//

/// How a logical graph's loss is scaled (pc-mixed-precision): the backward
/// pass starts from the scale instead of 1, and the optimizer divides the
/// gradients by it, skips a step whose gradients are not finite, and, when
/// `cleanSteps` is set (dynamic scaling), multiplies the scale by
/// `backoff` after such a step and by `growth` after `interval` clean ones.
struct LossScaling {
  mlir::FlatSymbolRefAttr scale, cleanSteps;
  int64_t interval = 2000;
  double growth = 2, backoff = 0.5;
  /// The differentiated graph gets the input kInjectOverflowInput.
  bool injectOverflow = false;
};
std::optional<LossScaling> getLossScaling(mlir::Operation *f);
void setLossScaling(mlir::Operation *f, const LossScaling &scaling);

//===--- Per-device programs ----------------------------------------------===//

/// The logical graph `op` is a per-device program of; null when it is not
/// one.
mlir::StringAttr getGraph(mlir::Operation *op);
void setGraph(mlir::Operation *op, llvm::StringRef graph);
/// The ranks that run the per-device program `op` (empty when not one).
llvm::ArrayRef<int64_t> getRanks(mlir::Operation *op);
void setRanks(mlir::Operation *op, llvm::ArrayRef<int64_t> ranks);

/// A per-device program's predicted device memory (pc-memory-plan), in
/// bytes: the peak, and what is live at it by kind. Parameters and
/// optimizer state are the stored pieces (and, during the update, their
/// new values); gradients, what the backward pass made; activations, what
/// the forward pass made and the inputs; workspace, the optimizer's
/// temporaries and constants.
struct MemoryUse {
  int64_t peak = 0;
  int64_t parameters = 0, gradients = 0, optimizerState = 0, activations = 0,
          workspace = 0;
  /// The most activation bytes live at any point of the step (not only at
  /// the peak): what recompute and the activation formulas are about.
  int64_t activationsPeak = 0;
  /// The most host memory (pc-offload) the step holds at once.
  int64_t hostPeak = 0;
  friend bool operator==(const MemoryUse &, const MemoryUse &) = default;
};
std::optional<MemoryUse> getMemoryUse(mlir::Operation *f);
void setMemoryUse(mlir::Operation *f, const MemoryUse &use);

/// The devices' rates a module is compiled for (pc-cost-model, from a
/// cluster spec): FLOP/s, memory and link bandwidth in bytes/s, link
/// latency in s. Without one, every cost is figured with the defaults
/// (boxing/CostModel.h).
struct CostModel {
  double peakFlops = 0, memoryBandwidth = 0, linkBandwidth = 0, linkLatency = 0;
  /// Fixed time of launching one kernel (may be 0).
  double kernelLatency = 0;
  /// Whether a device's communication runs on the cores of its compute (CPU
  /// virtual devices: the shared-memory communicator's threads), so that
  /// the two do not overlap; written as the unit entry `shared_cores`.
  bool sharedCores = false;
  /// How many of a host's devices run at their full rates at once (CPU
  /// virtual devices that share fewer cores than their threads); more busy
  /// devices share them. 0: every device has its own. Written as the i64
  /// entry `concurrent_devices`.
  int64_t concurrentDevices = 0;
  /// Of a send and its receive (a pipeline's hop), when it differs from the
  /// link latency; written as the f64 entry `p2p_latency`. 0: the link
  /// latency.
  double p2pLatency = 0;
  /// On shared cores, the seconds of the host's cores a hop takes; then
  /// `p2pLatency` is its receive's wait beyond that work, which takes no
  /// core. Written as the f64 entry `p2p_work` when positive.
  double p2pWork = 0;
  /// On shared cores, the fraction of a collective's latency that keeps
  /// its members' cores busy (the rest is asleep: other work fills it);
  /// written as the f64 entry `latency_busy` when below 1.
  double latencyBusy = 1;
  /// The fraction of a collective's latency it pays when queued behind a
  /// collective it does not depend on, on its stream; written as the f64
  /// entry `queued_share` when below 1.
  double queuedShare = 1;
  /// On shared cores with more devices than cores, the seconds a
  /// collective whose members come from their compute waits, holding no
  /// core, for its last member, per second of that compute since their
  /// previous collective ended; written as the f64 entry `straggler_lag`
  /// when positive.
  double stragglerLag = 0;
  /// On shared cores, the share of them the runtime keeps busy while it
  /// has work for all; written as the f64 entry `core_efficiency` when
  /// below 1.
  double coreEfficiency = 1;
  /// Of every collective call beyond its steps' link latency; written as
  /// the f64 entry `call_latency` when positive.
  double callLatency = 0;
  /// On shared cores, the seconds of the host's cores it takes to wake a
  /// stream for an op with an operand from the device's other stream (its
  /// thread, and the dispatcher's, slept); written as the f64 entry
  /// `wake_work` when positive.
  double wakeWork = 0;
  /// A profiled kernel's time in a step over its profile's; written as the
  /// f64 entry `kernel_in_step` when positive. 0: 1.
  double kernelInStep = 0;
  /// Peak FLOP/s of matmuls on 16-bit floats (bf16, f16: the spec's bf16
  /// figure, else its f16), times the matmul efficiency as peakFlops; 0:
  /// the same as f32's. Written as the f64 entry `half_peak_flops` when
  /// positive.
  double halfPeakFlops = 0;
  /// The peak for a matmul whose operands are `elementType`.
  double peakFor(mlir::Type elementType) const;
  friend bool operator==(const CostModel &, const CostModel &) = default;
};
std::optional<CostModel> getCostModel(mlir::Operation *module);
void setCostModel(mlir::Operation *module, const CostModel &model);

//===--- Ops after SBP propagation ----------------------------------------===//

mlir::ArrayAttr getOperandSbps(mlir::Operation *op);
void setOperandSbps(mlir::Operation *op, mlir::ArrayAttr sbps);

//===--- Pipelines --------------------------------------------------------===//

/// The model stage of a logical op (user-written or from
/// pc-pipeline-split); nothing when it has none.
std::optional<int64_t> getStage(mlir::Operation *op);
void setStage(mlir::Operation *op, int64_t stage);
/// Whether pc-autodiff built `op` for the backward pass, and whether it
/// computes (part of) an activation's gradient rather than only a
/// parameter's.
bool isBackward(mlir::Operation *op);
void setBackward(mlir::Operation *op);
bool isInputGrad(mlir::Operation *op);
void setInputGrad(mlir::Operation *op);
/// The recompute segment a user put a forward op in; nothing when none.
std::optional<int64_t> getSegment(mlir::Operation *op);
void setSegment(mlir::Operation *op, int64_t segment);
/// Whether pc-recompute built `op` to recompute a forward value.
bool isRecompute(mlir::Operation *op);
void setRecompute(mlir::Operation *op);
/// A logical graph's meshes, one per device stage (empty when not set).
llvm::SmallVector<mlir::FlatSymbolRefAttr> getStageMeshes(mlir::Operation *f);
void setStageMeshes(mlir::Operation *f,
                    llvm::ArrayRef<mlir::FlatSymbolRefAttr> meshes);
/// How a graph (or a per-device program's graph) is pipelined; null when
/// it is not.
PipelineAttr getPipeline(mlir::Operation *f);
void setPipeline(mlir::Operation *f, PipelineAttr pipeline);
/// The action an op belongs to; null when none.
ActionAttr getAction(mlir::Operation *op);
void setAction(mlir::Operation *op, ActionAttr action);
/// A per-device program's actions, in the order it runs them; nothing when
/// it has no schedule. Failure (with a diagnostic) when an entry is not a
/// #pc.action.
std::optional<llvm::SmallVector<ActionAttr>> getSchedule(mlir::Operation *f);
void setSchedule(mlir::Operation *f, llvm::ArrayRef<ActionAttr> actions);
/// On a graph shrunk to one micro-batch: per result, two entries: its
/// batch dim, or how micro-batches combine it (kCombineMean, kCombineSum;
/// kCombineNone when it does not depend on the batch); then the rows per
/// batch element at that dim. Nothing when the graph is not shrunk.
inline constexpr int64_t kCombineMean = -1, kCombineSum = -2, kCombineNone = -3;
std::optional<llvm::SmallVector<int64_t>> getMicroBatch(mlir::Operation *f);
void setMicroBatch(mlir::Operation *f, llvm::ArrayRef<int64_t> results);
void clearMicroBatch(mlir::Operation *f);

//===--- Arguments and results --------------------------------------------===//

/// The position of a per-device program's argument or result in the logical
/// graph's signature.
std::optional<int64_t> getArgIndex(mlir::FunctionOpInterface f, unsigned i);
std::optional<int64_t> getResultIndex(mlir::FunctionOpInterface f, unsigned i);
/// Its logical type (with its layout); null when not set.
mlir::Type getArgLogicalType(mlir::FunctionOpInterface f, unsigned i);
mlir::Type getResultLogicalType(mlir::FunctionOpInterface f, unsigned i);
/// The user-facing name of an input or output; null when it has none.
mlir::StringAttr getArgName(mlir::FunctionOpInterface f, unsigned i);
mlir::StringAttr getResultName(mlir::FunctionOpInterface f, unsigned i);
void setArgName(mlir::FunctionOpInterface f, unsigned i, llvm::StringRef name);
void setResultName(mlir::FunctionOpInterface f, unsigned i,
                   llvm::StringRef name);
/// Whether result `i` is the loss, and marking it so.
bool isLoss(mlir::FunctionOpInterface f, unsigned i);
void setLoss(mlir::FunctionOpInterface f, unsigned i);
/// The parameter result `i` is the gradient of; null when none.
mlir::FlatSymbolRefAttr getGrad(mlir::FunctionOpInterface f, unsigned i);

/// Entries of argument and result attribute dictionaries.
mlir::NamedAttribute index(mlir::Builder &b, int64_t index);
mlir::NamedAttribute logicalType(mlir::Builder &b, mlir::Type type);
mlir::NamedAttribute name(mlir::Builder &b, llvm::StringRef name);
mlir::NamedAttribute grad(mlir::Builder &b, mlir::FlatSymbolRefAttr param);

} // namespace pc::attrs

#endif // PC_DIALECT_PROGRAMATTRS_H

//===- PipelineSchedule.cpp - --pc-pipeline-schedule ----------------------===//
//
// After partition, each per-device program of a pipelined graph holds the
// ops of one device stage, most of them tagged with their action. This
// pass tags the rest (boxing steps, transfers' sends and receives, shared
// reads), gives every program its device stage's schedule, and checks all
// of a graph's schedules together with pipeline/Schedule.h's checker, so a
// schedule that would deadlock is a compile-time error.
//
//===----------------------------------------------------------------------===//

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace pc {
#define GEN_PASS_DEF_PIPELINESCHEDULE
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

ActionAttr toAttr(MLIRContext *ctx, const pipeline::Action &a) {
  return ActionAttr::get(ctx, static_cast<PipelineActionKind>(a.kind), a.stage,
                         a.microBatch);
}

/// Tags `f`'s untagged ops: with the earliest action (in `order`) among
/// their users (a receive, a boxing step before its consumer), else with
/// the latest among their operands' producers (a send, the optimizer after
/// the last gradient), repeated until nothing changes (a receive whose
/// users only the producers' pass tagged, such as the clipping norm's
/// partial sums; a store of a value those users also read). What is left
/// depends on no action and feeds none (a send of an input): the first
/// action.
void inferActions(func::FuncOp f, ArrayRef<ActionAttr> order) {
  DenseMap<Attribute, size_t> pos;
  for (auto [i, a] : llvm::enumerate(order))
    pos.try_emplace(a, i);
  auto posOf = [&](Operation *op) -> std::optional<size_t> {
    ActionAttr a = attrs::getAction(op);
    if (!a)
      return std::nullopt;
    auto it = pos.find(a);
    return it == pos.end() ? std::nullopt : std::optional<size_t>(it->second);
  };
  Block &body = f.getBody().front();
  bool changed = true;
  auto set = [&](Operation &op, std::optional<size_t> best) {
    if (best) {
      attrs::setAction(&op, order[*best]);
      changed = true;
    }
  };
  auto byUsers = [&] {
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      if (attrs::getAction(&op))
        continue;
      std::optional<size_t> best;
      for (Operation *u : op.getUsers())
        if (std::optional<size_t> p = posOf(u))
          best = best ? std::min(*best, *p) : *p;
      set(op, best);
    }
  };
  auto byProducers = [&] {
    for (Operation &op : body.without_terminator()) {
      if (attrs::getAction(&op))
        continue;
      std::optional<size_t> best;
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp())
          if (std::optional<size_t> p = posOf(def))
            best = best ? std::max(*best, *p) : *p;
      set(op, best);
    }
  };
  while (changed) {
    changed = false;
    byUsers();
    byProducers();
  }
  for (Operation &op : body.without_terminator())
    if (!attrs::getAction(&op) && !order.empty())
      attrs::setAction(&op, order.front());
}

struct PipelineSchedulePass
    : public pc::impl::PipelineScheduleBase<PipelineSchedulePass> {
  using PipelineScheduleBase::PipelineScheduleBase;

  void runOnOperation() override {
    std::map<std::string, SmallVector<func::FuncOp>> byGraph;
    forEachGraph(getOperation(), [&](func::FuncOp f) {
      if (StringAttr g = attrs::getGraph(f); g && attrs::getPipeline(f))
        byGraph[g.str()].push_back(f);
    });
    for (auto &[graph, programs] : byGraph)
      if (failed(schedule(graph, programs)))
        return signalPassFailure();
  }

  LogicalResult schedule(StringRef graph, ArrayRef<func::FuncOp> programs) {
    MLIRContext *ctx = &getContext();
    pipeline::ScheduleSpec spec = attrs::getPipeline(programs[0]).getSpec();
    pipeline::Schedule built = pipeline::buildSchedule(spec);
    std::vector<func::FuncOp> ofStage(spec.devices);
    for (func::FuncOp f : programs) {
      std::optional<int64_t> device;
      for (Operation &op : f.getBody().front())
        if (ActionAttr a = attrs::getAction(&op)) {
          int64_t d = a.getStage() % spec.devices;
          if (device && *device != d)
            return op.emitOpError()
                   << "belongs to device stage " << d << ", but its program @"
                   << f.getSymName() << " (" << ranksText(f)
                   << ") also runs device stage " << *device;
          device = d;
        }
      if (!device)
        return f.emitOpError() << "is a program of the pipelined graph @"
                               << graph << " but runs no action of it";
      std::optional<SmallVector<ActionAttr>> order = attrs::getSchedule(f);
      if (!order) {
        SmallVector<ActionAttr> list;
        for (const pipeline::Action &a : built.perDevice[*device])
          list.push_back(toAttr(ctx, a));
        attrs::setSchedule(f, list);
        order = list;
        ++numScheduled;
      }
      inferActions(f, *order);
      DenseSet<Attribute> listed(order->begin(), order->end());
      for (Operation &op : f.getBody().front())
        if (ActionAttr a = attrs::getAction(&op); a && !listed.contains(a))
          return op.emitOpError()
                 << "belongs to " << pipeline::describe(a.asAction())
                 << ", which the schedule of @" << f.getSymName() << " ("
                 << ranksText(f) << ") does not list";
      func::FuncOp &first = ofStage[*device];
      if (!first) {
        first = f;
        continue;
      }
      // Members of one stage share collectives: one order for all.
      auto a = *attrs::getSchedule(first), b = *order;
      for (size_t i = 0; i < std::max(a.size(), b.size()); ++i)
        if (i >= a.size() || i >= b.size() || a[i] != b[i])
          return f.emitOpError()
                 << "runs device stage " << *device
                 << " in another order than @" << first.getSymName()
                 << ": entry " << i << " is "
                 << (i < b.size() ? pipeline::describe(b[i].asAction())
                                  : std::string("missing"))
                 << " on " << ranksText(f) << " but "
                 << (i < a.size() ? pipeline::describe(a[i].asAction())
                                  : std::string("missing"))
                 << " on " << ranksText(first);
    }
    pipeline::Schedule lists{spec, {}};
    for (int64_t d = 0; d < spec.devices; ++d) {
      if (!ofStage[d])
        return func::FuncOp(programs[0]).emitOpError()
               << "pipelined graph @" << graph << " has no program for device "
               << "stage " << d;
      lists.perDevice.emplace_back();
      SmallVector<ActionAttr> order = *attrs::getSchedule(ofStage[d]);
      for (ActionAttr a : order)
        lists.perDevice.back().push_back(a.asAction());
    }
    pipeline::Prediction prediction;
    std::string error =
        pipeline::checkSchedule(lists, pipeline::chainDependencies(spec), {},
                                prediction, [&](int64_t d) {
                                  return "stage " + std::to_string(d) + " (" +
                                         ranksText(ofStage[d]) + ")";
                                });
    if (!error.empty())
      return func::FuncOp(programs[0]).emitOpError()
             << "has a pipeline schedule that cannot run: " << error;
    if (report) {
      llvm::outs() << "pipeline @" << graph << ": "
                   << pipeline::scheduleName(spec.kind) << ", " << spec.devices
                   << " stages x " << spec.virtualStages << " virtual, "
                   << spec.microBatches << " micro-batches\n";
      for (int64_t d = 0; d < spec.devices; ++d)
        llvm::outs() << "  stage " << d << " (" << ranksText(ofStage[d])
                     << "): peak " << prediction.peakInFlight[d]
                     << " micro-batches in flight\n";
      llvm::outs() << llvm::format("  predicted bubble %.1f%%\n",
                                   100 * prediction.bubble);
    }
    return success();
  }
};

} // namespace

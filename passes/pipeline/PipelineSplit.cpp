//===- PipelineSplit.cpp - --pc-pipeline-split ----------------------------===//
//
// Gives every op of a logical graph its pipeline stage and every device
// stage its mesh. Stages come from the user (`pc.stage` on ops, the C++
// API's stage scope) or from a balanced cut of the graph in program order:
// each op weighs its share of the graph's compute (the cost model's flops)
// plus its share of the parameter and activation bytes, and stage c takes
// the ops whose weight midpoint falls in the c-th equal part. Values cross
// stages only forward (a stage may use its own values and earlier
// stages'), so a stage's forward needs only earlier stages' forwards.
//
// Stage meshes are the graph's `pc.stage_meshes` when given; otherwise
// copies of the module's only mesh on disjoint ranks (device stage d runs
// ranks [d n, (d + 1) n) of an n-device mesh), and layouts written on the
// base mesh move to the stage mesh of the value's op.
//
//===----------------------------------------------------------------------===//

#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace pc {
#define GEN_PASS_DEF_PIPELINESPLIT
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

struct PipelineSplitPass
    : public pc::impl::PipelineSplitBase<PipelineSplitPass> {
  using PipelineSplitBase::PipelineSplitBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> graphs;
    forEachGraph(module, [&](func::FuncOp f) {
      if (!attrs::getGraph(f))
        graphs.push_back(f);
    });
    for (func::FuncOp f : graphs)
      if (failed(split(module, f)))
        return signalPassFailure();
  }

  LogicalResult split(ModuleOp module, func::FuncOp f) {
    if (attrs::getPipeline(f))
      return success(); // split already
    Block &body = f.getBody().front();
    int64_t userStages = 0;
    for (Operation &op : body)
      if (std::optional<int64_t> s = attrs::getStage(&op))
        userStages = std::max(userStages, *s + 1);
    if (userStages == 0 && stages <= 1 && microBatches <= 1)
      return success(); // not pipelined
    std::string kindName = schedule.empty()
                               ? (virtualStages > 1 ? "interleaved" : "1f1b")
                               : std::string(schedule);
    std::optional<pipeline::ScheduleKind> kind =
        pipeline::parseScheduleKind(kindName);
    if (!kind)
      return f.emitOpError()
             << "--pc-pipeline-split: unknown schedule '" << kindName
             << "'; expected gpipe, 1f1b, interleaved or "
                "zb-h1";
    int64_t v = virtualStages, p = std::max<int64_t>(stages, 1);
    if (v < 1)
      return f.emitOpError()
             << "--pc-pipeline-split: virtual stages must be at least 1, not "
             << v;
    if (userStages > 0) {
      if (userStages % v != 0)
        return f.emitOpError()
               << "has " << userStages << " pipeline stages (pc.stage), "
               << "which do not divide into " << v << " virtual stages";
      if (stages > 1 && stages * v != userStages)
        return f.emitOpError()
               << "has " << userStages << " pipeline stages (pc.stage), but "
               << "stages=" << stages << " x virtual-stages=" << v
               << " asks for " << stages * v;
      p = userStages / v;
    }
    pipeline::ScheduleSpec spec{*kind, p, microBatches, v};
    if (std::string bad = pipeline::validate(spec); !bad.empty())
      return f.emitOpError() << "--pc-pipeline-split: " << bad;
    attrs::setPipeline(f, PipelineAttr::get(&getContext(), kindName, p,
                                            microBatches, v,
                                            /*backward=*/true));
    if (p * v == 1)
      return success(); // micro-batches only: one stage on the graph's mesh
    if (userStages == 0) {
      cut(f, p * v);
      // Every model stage needs work: a stage without ops would leave its
      // devices with nothing to run.
      SmallVector<bool> used(p * v, false);
      for (Operation &op : body)
        if (isa<SbpOpInterface>(op))
          if (std::optional<int64_t> s = attrs::getStage(&op))
            used[*s] = true;
      for (int64_t c = 0; c < p * v; ++c)
        if (!used[c])
          return f.emitOpError()
                 << "cannot be cut into " << p * v << " pipeline stages: "
                 << "stage " << c << " would have no ops (use fewer stages)";
    }
    if (failed(completeStages(f)))
      return failure();
    if (failed(placeStages(module, f, p)))
      return failure();
    if (report)
      printReport(f, p * v);
    ++numGraphs;
    return success();
  }

  /// The balanced cut: stage of each op from the midpoint of its weight.
  void cut(func::FuncOp f, int64_t stagesTotal) {
    Block &body = f.getBody().front();
    double flops = 0, bytes = 0;
    DenseMap<Operation *, std::pair<double, double>> weight;
    DenseSet<StringAttr> paramsSeen;
    for (Operation &op : body) {
      auto sbpOp = dyn_cast<SbpOpInterface>(op);
      if (!sbpOp)
        continue;
      double w = sbpOp.getComputeCost(), b = 0;
      for (Type t : op.getResultTypes())
        b += double(tensorBytes(t));
      for (Value v : op.getOperands())
        if (auto get = v.getDefiningOp<GetParamOp>())
          if (paramsSeen.insert(get.getNameAttr().getAttr()).second)
            b += double(tensorBytes(get.getType()));
      weight[&op] = {w, b};
      flops += w;
      bytes += b;
    }
    double prefix = 0;
    for (Operation &op : body) {
      auto it = weight.find(&op);
      if (it == weight.end())
        continue;
      double w = (flops > 0 ? it->second.first / flops : 0) +
                 (bytes > 0 ? it->second.second / bytes : 0);
      double total = (flops > 0 ? 1 : 0) + (bytes > 0 ? 1 : 0);
      double mid = prefix + w / 2;
      prefix += w;
      int64_t stage =
          total > 0 ? int64_t(mid / total * double(stagesTotal)) : 0;
      attrs::setStage(&op, std::min(stage, stagesTotal - 1));
    }
  }

  /// Ops without a stage take the latest of their operands' (ops with no
  /// operands, such as parameter reads, that of their first user), and no
  /// op may use a later stage's value.
  LogicalResult completeStages(func::FuncOp f) {
    Block &body = f.getBody().front();
    for (Operation &op : body.without_terminator()) {
      if (attrs::getStage(&op))
        continue;
      std::optional<int64_t> stage;
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp())
          if (std::optional<int64_t> s = attrs::getStage(def))
            stage = std::max(stage.value_or(0), *s);
      if (stage)
        attrs::setStage(&op, *stage);
    }
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      if (attrs::getStage(&op))
        continue;
      std::optional<int64_t> stage;
      for (Operation *user : op.getUsers())
        if (std::optional<int64_t> s = attrs::getStage(user))
          stage = std::min(stage.value_or(*s), *s);
      attrs::setStage(&op, stage.value_or(0));
    }
    for (Operation &op : body.without_terminator()) {
      int64_t stage = *attrs::getStage(&op);
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp())
          if (*attrs::getStage(def) > stage)
            return op.emitOpError()
                   << "in pipeline stage " << stage << " uses a value of stage "
                   << *attrs::getStage(def) << " ('" << def->getName()
                   << "'); a stage may only use values of its own and earlier "
                      "stages";
    }
    return success();
  }

  /// The device stages' meshes, and the layouts written on the base mesh
  /// moved onto them.
  LogicalResult placeStages(ModuleOp module, func::FuncOp f, int64_t p) {
    SmallVector<FlatSymbolRefAttr> meshes = attrs::getStageMeshes(f);
    if (!meshes.empty()) {
      if (int64_t(meshes.size()) != p)
        return f.emitOpError() << "lists " << meshes.size()
                               << " stage meshes for " << p << " device stages";
      for (FlatSymbolRefAttr m : meshes)
        if (!module.lookupSymbol<MeshOp>(m.getAttr()))
          return f.emitOpError() << "names " << m
                                 << " as a stage mesh, but it is not a pc.mesh";
      placeParams(module, f, meshes, {});
      return success();
    }
    auto all = llvm::to_vector(module.getOps<MeshOp>());
    if (all.size() != 1)
      return f.emitOpError()
             << "needs its stage meshes: give 'pc.stage_meshes', or declare "
                "exactly one mesh to copy per stage (the module has "
             << all.size() << ")";
    MeshOp base = all.front();
    int64_t n = base.getNumDevices(), span = 0;
    for (int64_t i = 0; i < n; ++i)
      span = std::max(span, base.getRank(i) + 1);
    OpBuilder b(base);
    b.setInsertionPointAfter(base);
    for (int64_t d = 0; d < p; ++d) {
      std::string name = (base.getSymName() + "_stage" + Twine(d)).str();
      if (module.lookupSymbol(name))
        return f.emitOpError() << "cannot name stage " << d << "'s mesh @"
                               << name << ": the symbol exists";
      SmallVector<int64_t> ranks;
      for (int64_t i = 0; i < n; ++i)
        ranks.push_back(base.getRank(i) + d * span);
      auto mesh = cast<MeshOp>(b.clone(*base));
      mesh.setSymName(name);
      mesh.setRanks(ranks);
      b.setInsertionPointAfter(mesh);
      meshes.push_back(FlatSymbolRefAttr::get(mesh.getSymNameAttr()));
    }
    attrs::setStageMeshes(f, meshes);
    moveLayouts(module, f, FlatSymbolRefAttr::get(base.getSymNameAttr()),
                meshes);
    return success();
  }

  void moveLayouts(ModuleOp module, func::FuncOp f, FlatSymbolRefAttr base,
                   ArrayRef<FlatSymbolRefAttr> meshes) {
    auto moved = [&](Type t, int64_t stage) -> Type {
      SbpAttr s = getSbp(t);
      if (!s || s.getMesh() != base)
        return t;
      return withSbp(t, makeSbp(&getContext(), meshes[stage % meshes.size()],
                                s.getEntries()));
    };
    Block &body = f.getBody().front();
    auto stageOfUse = [&](Value v) {
      int64_t stage = 0;
      bool any = false;
      for (Operation *user : v.getUsers())
        if (std::optional<int64_t> s = attrs::getStage(user)) {
          stage = any ? std::min(stage, *s) : *s;
          any = true;
        }
      return stage;
    };
    for (BlockArgument arg : f.getArguments())
      arg.setType(moved(arg.getType(), stageOfUse(arg)));
    for (Operation &op : body.without_terminator()) {
      int64_t stage = *attrs::getStage(&op);
      for (Value r : op.getResults())
        r.setType(moved(r.getType(), stage));
    }
    placeParams(module, f, meshes, moved);
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Type> results;
    for (Value v : ret.getOperands())
      results.push_back(v.getType());
    f.setType(
        FunctionType::get(&getContext(), body.getArgumentTypes(), results));
  }

  /// Parameters read by `f` move with their stage (`moved`, when layouts
  /// move from a base mesh); one without a layout is stored replicated on
  /// its stage's mesh (without stages, the optimizer replicates it on the
  /// only mesh).
  void placeParams(ModuleOp module, func::FuncOp f,
                   ArrayRef<FlatSymbolRefAttr> meshes,
                   function_ref<Type(Type, int64_t)> moved) {
    Block &body = f.getBody().front();
    DenseMap<StringAttr, int64_t> paramStage;
    for (Operation &op : body.without_terminator())
      if (auto get = dyn_cast<GetParamOp>(op))
        paramStage.try_emplace(get.getNameAttr().getAttr(),
                               *attrs::getStage(&op));
    DenseMap<StringAttr, Type> paramType;
    for (auto param : module.getOps<ParamOp>()) {
      auto it = paramStage.find(param.getSymNameAttr());
      if (it == paramStage.end())
        continue;
      Type t = moved ? moved(param.getType(), it->second) : param.getType();
      if (!getSbp(t) && replicateParams) {
        FlatSymbolRefAttr mesh = meshes[it->second % meshes.size()];
        auto meshOp = module.lookupSymbol<MeshOp>(mesh.getAttr());
        t = withSbp(t, makeSbp(&getContext(), mesh,
                               SmallVector<SbpEntry>(meshOp.getShape().size(),
                                                     SbpEntry::broadcast())));
      }
      param.setTypeAttr(TypeAttr::get(t));
      paramType[param.getSymNameAttr()] = t;
    }
    for (Operation &op : body.without_terminator())
      if (auto get = dyn_cast<GetParamOp>(op))
        if (Type t = paramType.lookup(get.getNameAttr().getAttr()))
          get.getResult().setType(cast<RankedTensorType>(t));
  }

  void printReport(func::FuncOp f, int64_t stagesTotal) {
    SmallVector<double> flops(stagesTotal, 0);
    SmallVector<int64_t> ops(stagesTotal, 0), params(stagesTotal, 0);
    double total = 0;
    for (Operation &op : f.getBody().front().without_terminator()) {
      int64_t s = *attrs::getStage(&op);
      ++ops[s];
      if (auto sbpOp = dyn_cast<SbpOpInterface>(op)) {
        flops[s] += sbpOp.getComputeCost();
        total += sbpOp.getComputeCost();
      }
      if (auto get = dyn_cast<GetParamOp>(op))
        params[s] += tensorBytes(get.getType());
    }
    llvm::outs() << "pipeline split of @" << f.getSymName() << " into "
                 << stagesTotal << " stages:\n";
    for (int64_t s = 0; s < stagesTotal; ++s)
      llvm::outs() << llvm::format(
          "  stage %lld: %lld ops, %.4g flops (%.1f%%), %lld parameter bytes\n",
          (long long)s, (long long)ops[s], flops[s],
          total > 0 ? 100 * flops[s] / total : 0.0, (long long)params[s]);
  }
};

} // namespace

//===- Offload.cpp - --pc-offload -----------------------------------------===//
//
// CPU offload (ZeRO-Offload): optimizer state lives in host memory and the
// optimizer's ops run on the host, so the device keeps only what the
// forward and backward passes need. Under ZeRO-3 the weights' shards can
// live there too. The pass marks what is on the host (pc.host) and puts a
// pc.copy wherever a value crosses between host and device.
//
//===----------------------------------------------------------------------===//

#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace pc {
#define GEN_PASS_DEF_OFFLOAD
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

/// Collectives, and layout changes that become them, run on the device.
bool isCollective(Operation *op) {
  return isCommOp(op) || isa<TransferOp, ToSbpOp, BoxingOp>(op);
}

struct OffloadPass : public pc::impl::OffloadBase<OffloadPass> {
  using OffloadBase::OffloadBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (ParamOp p : module.getOps<ParamOp>()) {
      bool state = attrs::isOptimizerState(p);
      if ((optimizer && state) || (parameters && !state && p.getTrainable())) {
        attrs::setHost(p);
        ++numHostParams;
      }
    }
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal() && !attrs::getGraph(f))
        place(module, f);
  }

  void place(ModuleOp module, func::FuncOp f) {
    DenseSet<Operation *> update =
        optimizer ? optimizerOps(f) : DenseSet<Operation *>();
    DenseSet<Value> onHost;
    // One copy per value and direction.
    DenseMap<std::pair<Value, int>, Value> copies;
    auto moveTo = [&](Operation *user, Value v, bool host) -> Value {
      if (onHost.contains(v) == host)
        return v;
      Value &c = copies[{v, host ? 1 : 0}];
      if (!c) {
        OpBuilder b(user);
        auto copy = CopyOp::create(b, v.getLoc(), v);
        copyPlacement(user, copy);
        if (host) {
          attrs::setHost(copy);
          onHost.insert(copy.getResult());
        }
        c = copy.getResult();
        ++numCopies;
      }
      return c;
    };
    auto paramOnHost = [&](FlatSymbolRefAttr name) {
      auto p = module.lookupSymbol<ParamOp>(name);
      return p && attrs::isHost(p);
    };
    Block &body = f.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(body)) {
      bool host;
      if (auto get = dyn_cast<GetParamOp>(op))
        host = paramOnHost(get.getNameAttr());
      else if (auto set = dyn_cast<SetParamOp>(op))
        host = paramOnHost(set.getNameAttr());
      else if (isa<func::ReturnOp>(op) || isCollective(&op))
        host = false;
      else if (isa<AfterOp, ReshapeOp>(op))
        host = onHost.contains(op.getOperand(0)); // a view stays put
      else
        host = update.contains(&op);
      // pc.after only waits for its dependency, wherever it is.
      for (OpOperand &use : op.getOpOperands())
        if (!isa<AfterOp>(op) || use.getOperandNumber() == 0)
          use.set(moveTo(&op, use.get(), host));
      if (!host || isa<func::ReturnOp>(op))
        continue;
      if (!isa<SetParamOp>(op)) {
        attrs::setHost(&op);
        ++numHostOps;
      }
      for (Value r : op.getResults())
        onHost.insert(r);
    }
  }
};

} // namespace

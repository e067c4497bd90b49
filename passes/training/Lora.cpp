//===- Lora.cpp - --pc-lora -----------------------------------------------===//
//
// Low-rank adaptation (Hu et al. 2021) as a rewrite of the logical graph:
// each matmul whose weight's name matches gets a rank-r path beside it,
// x·W + (alpha / r)·(x·A)·B, and the weight is frozen. Autodiff then gives
// gradients to the adapters only, and the optimizer keeps state for them
// only. B starts at zero, so the adapted model starts equal to the base.
//
//===----------------------------------------------------------------------===//

#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Regex.h"

#include <cmath>

namespace pc {
#define GEN_PASS_DEF_LORA
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

struct Adapter {
  ParamOp a, b;
};

struct LoraPass : public pc::impl::LoraBase<LoraPass> {
  using LoraBase::LoraBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::Regex pattern(targets);
    std::string why;
    if (rank < 1 || !(alpha > 0) || !pattern.isValid(why)) {
      module.emitError() << "--pc-lora: needs rank >= 1, alpha > 0 and a "
                            "valid targets pattern"
                         << (why.empty() ? "" : " (" + why + ")");
      return signalPassFailure();
    }
    DenseMap<StringAttr, Adapter> adapters;
    // A weight is adapted only when every read of it, in every logical
    // graph, is the right operand of a plain matmul: a weight also read
    // otherwise (tied, transposed, or by another op) would be trained at
    // some reads and not at others, and --merge-lora could not fold it.
    DenseMap<StringAttr, SmallVector<MatmulOp>> readers;
    DenseSet<StringAttr> excluded;
    module.walk([&](GetParamOp get) {
      auto f = get->getParentOfType<func::FuncOp>();
      if (!f || attrs::getGraph(f) || !pattern.match(get.getName()))
        return;
      StringAttr name = get.getNameAttr().getAttr();
      auto param = module.lookupSymbol<ParamOp>(get.getNameAttr());
      if (!param || !param.getTrainable() || get.getType().getRank() != 2) {
        excluded.insert(name);
        return;
      }
      for (OpOperand &use : get->getUses()) {
        auto m = dyn_cast<MatmulOp>(use.getOwner());
        if (!m || use.getOperandNumber() != 1 || m.getTransposeLhs() ||
            m.getTransposeRhs() || m.getAddend())
          excluded.insert(name);
        else
          readers[name].push_back(m);
      }
    });
    SmallVector<MatmulOp> sites;
    module.walk([&](GetParamOp get) {
      StringAttr name = get.getNameAttr().getAttr();
      auto it = readers.find(name);
      if (it == readers.end() || excluded.contains(name))
        return;
      sites.append(it->second);
      readers.erase(it);
    });
    if (sites.empty()) {
      module.emitError() << "--pc-lora: no matmul weight's name matches '"
                         << targets << "'";
      return signalPassFailure();
    }
    for (MatmulOp m : sites) {
      auto get = m.getRhs().getDefiningOp<GetParamOp>();
      auto param = module.lookupSymbol<ParamOp>(get.getNameAttr());
      auto [it, inserted] = adapters.try_emplace(param.getSymNameAttr());
      if (inserted) {
        it->second = addAdapter(module, param);
        param.setTrainable(false);
        ++numAdapted;
      }
      adapt(m, it->second);
    }
    // Only the adapters train: every other weight is frozen too.
    for (ParamOp p : module.getOps<ParamOp>())
      if (!p.getSymName().ends_with(".lora_a") &&
          !p.getSymName().ends_with(".lora_b"))
        p.setTrainable(false);
  }

  /// Adapter parameters for `base` (a weight [in, out]): A [in, r],
  /// uniform in +-1/sqrt(in) as nn.Linear's default, and B [r, out], zeros.
  /// A takes the base's split of its input dim, B of its output dim, so a
  /// tensor-parallel weight's adapter splits with it.
  Adapter addAdapter(ModuleOp module, ParamOp base) {
    auto type = base.getTensorType();
    int64_t inDim = 0, outDim = 1;
    int64_t in = type.getShape()[inDim], out = type.getShape()[outDim];
    Type elem = type.getElementType();
    SbpAttr aLayout, bLayout;
    if (SbpAttr sbp = getSbp(type)) {
      SmallVector<SbpEntry> a, b;
      for (const SbpEntry &e : sbp.getEntries()) {
        bool splitIn = e.isSplit() && e.dim == inDim;
        bool splitOut = e.isSplit() && e.dim == outDim;
        a.push_back(splitIn ? SbpEntry::split(0) : SbpEntry::broadcast());
        b.push_back(splitOut ? SbpEntry::split(1) : SbpEntry::broadcast());
      }
      aLayout = makeSbp(module.getContext(), sbp.getMesh(), a);
      bLayout = makeSbp(module.getContext(), sbp.getMesh(), b);
    }
    auto typed = [&](ArrayRef<int64_t> shape, SbpAttr layout) {
      auto t = RankedTensorType::get(shape, elem);
      return layout ? cast<RankedTensorType>(withSbp(t, layout)) : t;
    };
    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(base);
    double bound = 1.0 / std::sqrt(static_cast<double>(in));
    auto make = [&](StringRef suffix, RankedTensorType t, InitAttr init) {
      return ParamOp::create(b, base.getLoc(),
                             b.getStringAttr(base.getSymName() + suffix),
                             TypeAttr::get(t), init, b.getBoolAttr(true));
    };
    ParamOp a = make(".lora_a", typed({in, rank}, aLayout),
                     InitAttr::get(module.getContext(), InitKind::uniform,
                                   APFloat(-bound), APFloat(bound)));
    ParamOp bp = make(".lora_b", typed({rank, out}, bLayout),
                      InitAttr::get(module.getContext(), InitKind::zeros,
                                    APFloat(0.0), APFloat(0.0)));
    return {a, bp};
  }

  /// y = x·W becomes y + (alpha / r)·(x·A)·B for every reader of y.
  void adapt(MatmulOp m, const Adapter &adapter) {
    OpBuilder b(m);
    b.setInsertionPointAfter(m);
    Location loc = m.getLoc();
    auto read = [&](ParamOp p) {
      return GetParamOp::create(b, loc, p.getTensorType(),
                                FlatSymbolRefAttr::get(p.getSymNameAttr()))
          .getResult();
    };
    Value xa = MatmulOp::create(b, loc, m.getLhs(), read(adapter.a));
    double scale = m.getScale() * alpha / static_cast<double>(rank);
    Value xab = MatmulOp::create(b, loc, xa, read(adapter.b),
                                 /*transposeLhs=*/false,
                                 /*transposeRhs=*/false, scale);
    auto sum = AddOp::create(b, loc, m.getResult(), xab);
    if (std::optional<int64_t> stage = attrs::getStage(m))
      for (Operation *op = m->getNextNode(); op != sum->getNextNode();
           op = op->getNextNode())
        attrs::setStage(op, *stage);
    m.getResult().replaceAllUsesExcept(sum.getResult(), sum);
    ++numSites;
  }
};

} // namespace

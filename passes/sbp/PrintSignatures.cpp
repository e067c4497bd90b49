//===- PrintSignatures.cpp - --pc-print-signatures ------------------------===//

#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "llvm/Support/raw_ostream.h"

namespace pc {
#define GEN_PASS_DEF_PRINTSIGNATURES
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

struct PrintSignaturesPass
    : public pc::impl::PrintSignaturesBase<PrintSignaturesPass> {
  using PrintSignaturesBase::PrintSignaturesBase;

  void runOnOperation() override {
    llvm::raw_ostream &os = llvm::outs();
    getOperation().walk([&](SbpOpInterface op) {
      SmallVector<SmallVector<int64_t, 4>> ins, outs;
      for (Type t : op->getOperandTypes())
        ins.emplace_back(cast<RankedTensorType>(t).getShape());
      for (Type t : op->getResultTypes())
        outs.emplace_back(cast<RankedTensorType>(t).getShape());
      SmallVector<SbpSignature> sigs;
      op.getSbpSignatures(ins, outs, axisSize, sigs);
      os << op->getName() << " " << op->getLoc() << ":";
      for (const SbpSignature &sig : sigs)
        os << " " << sig.str() << ";";
      os << "\n";
    });
  }
};

} // namespace

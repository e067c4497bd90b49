//===- Simulate.cpp - --pc-simulate ---------------------------------------===//
//
// Times the per-device programs over the module's cost model
// (ProgramSimulator.h); see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/planning/ProgramSimulator.h"

#include "llvm/Support/raw_ostream.h"

namespace pc {
#define GEN_PASS_DEF_SIMULATE
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

struct SimulatePass : pc::impl::SimulateBase<SimulatePass> {
  using SimulateBase::SimulateBase;

  void runOnOperation() override {
    std::optional<OpProfile> profile;
    if (!opProfile.empty()) {
      llvm::Expected<OpProfile> p = loadOpProfile(opProfile);
      if (!p) {
        getOperation().emitError("pc-simulate: ")
            << llvm::toString(p.takeError());
        return signalPassFailure();
      }
      profile = *std::move(p);
    }
    Simulation s =
        simulatePrograms(getOperation(), {}, profile ? &*profile : nullptr);
    if (!s.error.empty()) {
      getOperation().emitError("pc-simulate: ") << s.error;
      return signalPassFailure();
    }
    llvm::outs() << formatSimulation(s);
    numPrograms = s.programs.size();
  }
};

} // namespace

//===- PcDialect.cpp - The pc dialect -------------------------------------===//

#include "dialect/PcDialect.h"
#include "dialect/PcOps.h"

#include "dialect/PcDialect.cpp.inc"

using namespace mlir;

void pc::PcDialect::initialize() {
  registerAttributes();
  registerOps();
  // func.func is a dependent dialect, so it is loaded by now; its signature
  // may carry SBP encodings that must name a real mesh.
  attachFuncSbpVerifier(*getContext());
}

//===- PcOps.cpp - pc operation definitions -------------------------------===//
//
// The generated op classes. The hand-written parts live by topic:
// MeshOps.cpp (meshes and parameters), LayoutOps.cpp (to_sbp and boxing) and
// ComputeOps.cpp (the logical compute ops).
//
//===----------------------------------------------------------------------===//

#include "dialect/PcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace pc;

#include "dialect/PcInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialect/PcOps.cpp.inc"

void PcDialect::registerOps() {
  addOperations<
#define GET_OP_LIST
#include "dialect/PcOps.cpp.inc"
      >();
}

//===- Passes.h - pc compiler passes ----------------------------*- C++ -*-===//

#ifndef PC_PASSES_PASSES_H
#define PC_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"

namespace pc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Registers --pc-distribute, the whole chain from a logical graph to
/// per-device programs.
void registerDistributePipeline();

} // namespace pc

#endif // PC_PASSES_PASSES_H

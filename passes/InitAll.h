//===- InitAll.h - The one registration point of pc -------------*- C++ -*-===//
//
// pc-opt, the tests and the C++ API all register dialects and passes here, so
// that every entry point sees the same compiler.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PASSES_INITALL_H
#define PC_PASSES_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace pc {

/// Adds the pc dialect and the upstream dialects pc programs use.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers pc's passes and pipelines, and the upstream passes that are
/// useful on pc programs (canonicalize, cse, symbol-dce, ...).
void registerAllPasses();

} // namespace pc

#endif // PC_PASSES_INITALL_H

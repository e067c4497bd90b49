//===- ProgramAttrs.h - Typed access to the pc.* attributes -----*- C++ -*-===//
//
// The dialect's discardable attributes (PcBase.td, discardableAttrs), read
// and written through typed functions: the passes that set them, and the
// runtime, the tools and the API that read them, never spell a name.
//  - a per-device program (func.func): pc.graph, pc.ranks;
//  - an op after SBP propagation: pc.operand_sbps;
//  - a function's arguments and results: pc.index, pc.logical_type (per-device
//    programs), pc.name (any graph), pc.loss and pc.grad (results).
//
//===----------------------------------------------------------------------===//

#ifndef PC_DIALECT_PROGRAMATTRS_H
#define PC_DIALECT_PROGRAMATTRS_H

#include "dialect/PcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <optional>

namespace pc::attrs {

// Names, for verifiers and attribute dictionaries.
inline constexpr llvm::StringLiteral kGraph =
    PcDialect::GraphAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kRanks =
    PcDialect::RanksAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kOperandSbps =
    PcDialect::OperandSbpsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kIndex =
    PcDialect::IndexAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kLogicalType =
    PcDialect::LogicalTypeAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kName =
    PcDialect::NameAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kLoss =
    PcDialect::LossAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kGrad =
    PcDialect::GradAttrHelper::getNameStr();

//===--- Per-device programs ----------------------------------------------===//

/// The logical graph `op` is a per-device program of; null when it is not
/// one.
mlir::StringAttr getGraph(mlir::Operation *op);
void setGraph(mlir::Operation *op, llvm::StringRef graph);
/// The ranks that run the per-device program `op` (empty when not one).
llvm::ArrayRef<int64_t> getRanks(mlir::Operation *op);
void setRanks(mlir::Operation *op, llvm::ArrayRef<int64_t> ranks);

//===--- Ops after SBP propagation ----------------------------------------===//

mlir::ArrayAttr getOperandSbps(mlir::Operation *op);
void setOperandSbps(mlir::Operation *op, mlir::ArrayAttr sbps);

//===--- Arguments and results --------------------------------------------===//

/// The position of a per-device program's argument or result in the logical
/// graph's signature.
std::optional<int64_t> getArgIndex(mlir::FunctionOpInterface f, unsigned i);
std::optional<int64_t> getResultIndex(mlir::FunctionOpInterface f, unsigned i);
/// Its logical type (with its layout); null when not set.
mlir::Type getArgLogicalType(mlir::FunctionOpInterface f, unsigned i);
mlir::Type getResultLogicalType(mlir::FunctionOpInterface f, unsigned i);
/// The user-facing name of an input or output; null when it has none.
mlir::StringAttr getArgName(mlir::FunctionOpInterface f, unsigned i);
mlir::StringAttr getResultName(mlir::FunctionOpInterface f, unsigned i);
void setArgName(mlir::FunctionOpInterface f, unsigned i, llvm::StringRef name);
void setResultName(mlir::FunctionOpInterface f, unsigned i,
                   llvm::StringRef name);
/// Whether result `i` is the loss, and marking it so.
bool isLoss(mlir::FunctionOpInterface f, unsigned i);
void setLoss(mlir::FunctionOpInterface f, unsigned i);
/// The parameter result `i` is the gradient of; null when none.
mlir::FlatSymbolRefAttr getGrad(mlir::FunctionOpInterface f, unsigned i);

/// Entries of argument and result attribute dictionaries.
mlir::NamedAttribute index(mlir::Builder &b, int64_t index);
mlir::NamedAttribute logicalType(mlir::Builder &b, mlir::Type type);
mlir::NamedAttribute name(mlir::Builder &b, llvm::StringRef name);
mlir::NamedAttribute grad(mlir::Builder &b, mlir::FlatSymbolRefAttr param);

} // namespace pc::attrs

#endif // PC_DIALECT_PROGRAMATTRS_H

//===- PcTraits.h - Checks shared by the pc ops -----------------*- C++ -*-===//
//
// The rules that hold for every value a pc op touches: static shapes, an SBP
// encoding or none, a known mesh with one SBP entry per axis, and a single
// mesh per logical op. They are written once here and used by the op traits,
// by the symbol-use verification of pc ops, and by func.func (whose
// signature may carry SBP encodings too).
//
//===----------------------------------------------------------------------===//

#ifndef PC_DIALECT_PCTRAITS_H
#define PC_DIALECT_PCTRAITS_H

#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"

namespace pc {

class MeshOp;

/// The most elements a tensor may have (2^48): byte counts and offsets then
/// fit in int64 with room to spare.
inline constexpr int64_t kMaxElementsLog2 = 48;

/// True when `shape` has at most 2^kMaxElementsLog2 elements (computed
/// without overflow).
bool fitsElementLimit(llvm::ArrayRef<int64_t> shape);

/// Every tensor operand and result has a static shape and a #pc.sbp encoding
/// or none.
llvm::LogicalResult verifyTensorTypes(mlir::Operation *op);

/// All SBP-encoded operands and results are on one mesh.
llvm::LogicalResult verifySameMesh(mlir::Operation *op);

/// Every SBP-encoded operand and result names a pc.mesh visible from `op`
/// and has one entry per axis of it, with splits in range.
llvm::LogicalResult verifySbpSymbolUses(mlir::Operation *op,
                                        mlir::SymbolTableCollection &symbols);

/// The check of verifySbpSymbolUses for one type; `what` names the value in
/// the diagnostic ("operand #1", "argument #0", ...).
llvm::LogicalResult verifySbpType(mlir::Operation *op, mlir::Type type,
                                  const llvm::Twine &what,
                                  mlir::SymbolTableCollection &symbols);

/// For a per-device program (a func.func with pc.ranks): every
/// rank-dependent type in it is each listed rank's piece (its arguments and
/// results, parameter values, sends and receives; PerDevicePieces.cpp).
llvm::LogicalResult verifyPerDevicePieces(mlir::Operation *func,
                                          mlir::SymbolTableCollection &symbols);

/// Attaches the SBP checks of verifySbpSymbolUses to func.func signatures,
/// and verifyPerDevicePieces to per-device programs.
void attachFuncSbpVerifier(mlir::MLIRContext &context);

namespace OpTrait {

template <typename ConcreteType>
class PcTensorTypes
    : public mlir::OpTrait::TraitBase<ConcreteType, PcTensorTypes> {
public:
  static llvm::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyTensorTypes(op);
  }
};

template <typename ConcreteType>
class PcSameMesh : public mlir::OpTrait::TraitBase<ConcreteType, PcSameMesh> {
public:
  static llvm::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifySameMesh(op);
  }
};

} // namespace OpTrait
} // namespace pc

#endif // PC_DIALECT_PCTRAITS_H

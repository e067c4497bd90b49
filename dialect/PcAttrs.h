//===- PcAttrs.h - pc attributes --------------------------------*- C++ -*-===//

#ifndef PC_DIALECT_PCATTRS_H
#define PC_DIALECT_PCATTRS_H

#include "dialect/Sharding.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TensorEncoding.h"
#include "pipeline/Schedule.h"
#include "llvm/ADT/Hashing.h"

namespace pc {
/// Lets SbpEntry be an attribute storage parameter.
inline llvm::hash_code hash_value(const SbpEntry &e) {
  return llvm::hash_combine(e.kind, e.reduce, e.dim);
}
} // namespace pc

#include "dialect/PcEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/PcAttrs.h.inc"

namespace pc {
/// Conversions between the IR's reduction attribute and the core enum.
ReduceKind toReduceKind(Reduction r);
Reduction toReduction(ReduceKind k);

/// The SBP encoding of `type`, or null when it is not a ranked tensor with
/// a #pc.sbp encoding.
SbpAttr getSbp(mlir::Type type);
} // namespace pc

#endif // PC_DIALECT_PCATTRS_H

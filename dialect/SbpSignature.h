//===- SbpSignature.h - SBP signatures of logical ops -----------*- C++ -*-===//
//
// A 1-D SBP signature says how an op can run on one mesh axis: the entry
// each operand must have on that axis and the entry each result then has.
// The nd signatures of an op on a mesh are the products of 1-D signatures
// over the mesh axes, applied hierarchically like nd-SBPs: the signature
// chosen for axis `a` is asked for with the local shapes that axes before `a`
// leave (SbpOpInterface::getSbpSignatures), which is how uneven or
// indivisible pieces filter out signatures that would not hold.
//
//===----------------------------------------------------------------------===//

#ifndef PC_DIALECT_SBPSIGNATURE_H
#define PC_DIALECT_SBPSIGNATURE_H

#include "dialect/Sharding.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace pc {

struct SbpSignature {
  llvm::SmallVector<SbpEntry, 4> operands;
  llvm::SmallVector<SbpEntry, 2> results;

  /// True when every operand and result is B: every device computes the
  /// whole op.
  bool isReplicated() const;
  /// "(S(0), B) -> S(0)".
  std::string str() const;
  friend bool operator==(const SbpSignature &, const SbpSignature &) = default;
};

/// Appends the signature with every operand and result B.
void addReplicated(llvm::SmallVectorImpl<SbpSignature> &out,
                   unsigned numOperands, unsigned numResults);

/// An nd signature: one nd-SBP per operand and per result.
struct NdSbpSignature {
  llvm::SmallVector<llvm::SmallVector<SbpEntry, 4>, 4> operands;
  llvm::SmallVector<llvm::SmallVector<SbpEntry, 4>, 2> results;
  /// How many mesh positions share the work: the product of the sizes of
  /// the axes whose 1-D signature is not replicated.
  int64_t parallelism = 1;
  std::string str() const;
};

} // namespace pc

#endif // PC_DIALECT_SBPSIGNATURE_H

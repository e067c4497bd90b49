//===- SbpCandidates.h - The nd SBP signatures of an op ---------*- C++ -*-===//
//
// The search space of every SBP decision: an op's nd signatures on a mesh,
// built axis by axis from its 1-D signatures with the shapes of the largest
// piece the axes before leave. pc-sbp-propagate picks among them greedily,
// pc-auto-parallel by cost over the whole graph.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PASSES_SBPCANDIDATES_H
#define PC_PASSES_SBPCANDIDATES_H

#include "dialect/PcOps.h"
#include "dialect/SbpSignature.h"

namespace pc {

/// Every nd signature of `op` on a mesh of `meshShape`, in a fixed order.
llvm::SmallVector<NdSbpSignature, 0>
ndSignatures(SbpOpInterface op, llvm::ArrayRef<int64_t> meshShape);

/// Whether `a` and `b` are the same layout on a mesh of `meshShape`: on an
/// axis of one device every entry (a split, a partial) is the whole tensor,
/// so entries there do not tell layouts apart.
bool sameLayout(SbpAttr a, SbpAttr b, llvm::ArrayRef<int64_t> meshShape);

} // namespace pc

#endif // PC_PASSES_SBPCANDIDATES_H

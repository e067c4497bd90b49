//===- SbpCandidates.cpp - The nd SBP signatures of an op -----------------===//

#include "passes/sbp/SbpCandidates.h"

#include <functional>

using namespace mlir;

namespace pc {

namespace {
using Shape = SmallVector<int64_t, 4>;
} // namespace

SmallVector<NdSbpSignature, 0> ndSignatures(SbpOpInterface op,
                                            ArrayRef<int64_t> meshShape) {
  SmallVector<Shape> operandShapes, resultShapes;
  for (Type t : op->getOperandTypes())
    operandShapes.emplace_back(cast<RankedTensorType>(t).getShape());
  for (Type t : op->getResultTypes())
    resultShapes.emplace_back(cast<RankedTensorType>(t).getShape());

  SmallVector<NdSbpSignature, 0> out;
  NdSbpSignature current;
  current.operands.resize(operandShapes.size());
  current.results.resize(resultShapes.size());
  // Axis by axis, with the shapes of the largest piece (mesh position 0)
  // that the axes before leave.
  std::function<void(size_t, ArrayRef<Shape>, ArrayRef<Shape>, int64_t)>
      recurse = [&](size_t axis, ArrayRef<Shape> ins, ArrayRef<Shape> outs,
                    int64_t parallelism) {
        if (axis == meshShape.size()) {
          current.parallelism = parallelism;
          out.push_back(current);
          return;
        }
        SmallVector<SbpSignature> sigs;
        // On an axis of one device every layout is the same; only the
        // replicated signature is worth considering.
        if (meshShape[axis] == 1)
          addReplicated(sigs, ins.size(), outs.size());
        else
          op.getSbpSignatures(ins, outs, meshShape[axis], sigs);
        for (const SbpSignature &sig : sigs) {
          auto shrink = [&](ArrayRef<Shape> shapes,
                            ArrayRef<SbpEntry> entries) {
            SmallVector<Shape> next(shapes.begin(), shapes.end());
            for (auto [s, e] : llvm::zip(next, entries))
              if (e.isSplit())
                s[e.dim] = splitRange(s[e.dim], meshShape[axis], 0).size;
            return next;
          };
          for (auto [nd, e] : llvm::zip(current.operands, sig.operands))
            nd.push_back(e);
          for (auto [nd, e] : llvm::zip(current.results, sig.results))
            nd.push_back(e);
          recurse(axis + 1, shrink(ins, sig.operands),
                  shrink(outs, sig.results),
                  parallelism * (sig.isReplicated() ? 1 : meshShape[axis]));
          for (auto &nd : current.operands)
            nd.pop_back();
          for (auto &nd : current.results)
            nd.pop_back();
        }
      };
  recurse(0, operandShapes, resultShapes, 1);

  // A reshape through merged or split dims needs every piece to line up,
  // not only the largest one.
  if (auto reshape = dyn_cast<ReshapeOp>(op.getOperation())) {
    auto in = reshape.getInput().getType().getShape();
    auto res = reshape.getType().getShape();
    llvm::erase_if(out, [&](const NdSbpSignature &s) {
      for (auto [a, b] : llvm::zip(s.operands[0], s.results[0]))
        if (a.isSplit() && in[a.dim] != res[b.dim])
          return !isEvenlySplit(in, meshShape, s.operands[0]) ||
                 !isEvenlySplit(res, meshShape, s.results[0]);
      return false;
    });
  }
  return out;
}

// Whether `a` and `b` are the same layout on a mesh of `meshShape`: on an
// axis of one device every entry (a split, a partial) is the whole tensor,
// so entries there do not tell layouts apart.
bool sameLayout(SbpAttr a, SbpAttr b, ArrayRef<int64_t> meshShape) {
  if (a == b)
    return true;
  if (!a || !b || a.getMesh() != b.getMesh() ||
      a.getEntries().size() != b.getEntries().size())
    return false;
  for (auto [axis, x, y] : llvm::enumerate(a.getEntries(), b.getEntries()))
    if (meshShape[axis] != 1 && !(x == y))
      return false;
  return true;
}

} // namespace pc

//===- Signatures.cpp - The SBP signatures and costs of the logical ops ---===//
//
// Each op lists the 1-D signatures of docs/sbp.md for the shapes it is given.
// A split is offered only when the split extent has at least one element
// per device, so that no device idles on an empty piece; reshape offers a
// split through merged or split dims only when it divides evenly, because
// only then do the pieces line up on both sides.
//
//===----------------------------------------------------------------------===//

#include "dialect/PcOps.h"

using namespace mlir;
using namespace pc;

namespace {

using Shapes = ArrayRef<SmallVector<int64_t, 4>>;
using Sigs = SmallVectorImpl<SbpSignature>;

SbpEntry S(int64_t d) { return SbpEntry::split(d); }
const SbpEntry B = SbpEntry::broadcast();
SbpEntry P(ReduceKind r = ReduceKind::Sum) { return SbpEntry::partial(r); }

void add(Sigs &out, std::initializer_list<SbpEntry> operands,
         std::initializer_list<SbpEntry> results) {
  SbpSignature s;
  s.operands.assign(operands.begin(), operands.end());
  s.results.assign(results.begin(), results.end());
  out.push_back(std::move(s));
}

double numel(Type t) {
  return static_cast<double>(cast<RankedTensorType>(t).getNumElements());
}

/// Splits of every dim of a one-operand op whose result dims are its
/// operand dims, except `skipFrom` and on (normalized dims).
void sameDimSplits(Shapes in, int64_t axisSize, Sigs &out, unsigned numOperands,
                   int64_t skipFrom = -1, int64_t skipOnly = -1) {
  const auto &shape = in[0];
  for (int64_t d = 0, r = shape.size(); d < r; ++d) {
    if ((skipFrom >= 0 && d >= skipFrom) || d == skipOnly ||
        shape[d] < axisSize)
      continue;
    SbpSignature s;
    s.operands.assign(numOperands, B);
    s.operands[0] = S(d);
    s.results = {S(d)};
    out.push_back(std::move(s));
  }
}

/// Elementwise binary ops: a result dim splits when some operand has it
/// (not broadcast), and that operand splits with it.
void broadcastSplits(Shapes in, Shapes res, int64_t axisSize, Sigs &out) {
  const auto &r = res[0];
  int64_t rank = r.size();
  for (int64_t d = 0; d < rank; ++d) {
    if (r[d] < axisSize)
      continue;
    SbpSignature s;
    bool any = false;
    for (const auto &o : in.take_front(2)) {
      int64_t off = rank - o.size();
      if (d >= off && o[d - off] == r[d]) {
        s.operands.push_back(S(d - off));
        any = true;
      } else {
        s.operands.push_back(B);
      }
    }
    if (!any)
      continue;
    s.results = {S(d)};
    out.push_back(std::move(s));
  }
}

void unary(Shapes in, int64_t axisSize, Sigs &out, bool linear) {
  addReplicated(out, 1, 1);
  sameDimSplits(in, axisSize, out, 1);
  if (linear)
    add(out, {P()}, {P()});
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define PC_UNARY(OP, LINEAR, FLOPS)                                            \
  void OP::getSbpSignatures(Shapes in, Shapes, int64_t axisSize, Sigs &out) {  \
    unary(in, axisSize, out, LINEAR);                                          \
  }                                                                            \
  double OP::getComputeCost() { return FLOPS * numel(getType()); }

PC_UNARY(NegOp, true, 1)
PC_UNARY(ExpOp, false, 4)
PC_UNARY(LogOp, false, 4)
PC_UNARY(TanhOp, false, 6)
PC_UNARY(ReluOp, false, 1)
PC_UNARY(SigmoidOp, false, 6)
PC_UNARY(GeluOp, false, 10)
PC_UNARY(CastOp, false, 1)
PC_UNARY(SqrtOp, false, 4)
PC_UNARY(ErfOp, false, 10)
#undef PC_UNARY

void AddOp::getSbpSignatures(Shapes in, Shapes res, int64_t axisSize,
                             Sigs &out) {
  addReplicated(out, 2, 1);
  broadcastSplits(in, res, axisSize, out);
  add(out, {P(), P()}, {P()});
}
double AddOp::getComputeCost() { return numel(getType()); }

void SubOp::getSbpSignatures(Shapes in, Shapes res, int64_t axisSize,
                             Sigs &out) {
  addReplicated(out, 2, 1);
  broadcastSplits(in, res, axisSize, out);
  add(out, {P(), P()}, {P()});
}
double SubOp::getComputeCost() { return numel(getType()); }

void MulOp::getSbpSignatures(Shapes in, Shapes res, int64_t axisSize,
                             Sigs &out) {
  addReplicated(out, 2, 1);
  broadcastSplits(in, res, axisSize, out);
  add(out, {P(), B}, {P()});
  add(out, {B, P()}, {P()});
}
double MulOp::getComputeCost() { return numel(getType()); }

void DivOp::getSbpSignatures(Shapes in, Shapes res, int64_t axisSize,
                             Sigs &out) {
  addReplicated(out, 2, 1);
  broadcastSplits(in, res, axisSize, out);
  add(out, {P(), B}, {P()});
}
double DivOp::getComputeCost() { return numel(getType()); }

void CompareOp::getSbpSignatures(Shapes in, Shapes res, int64_t axisSize,
                                 Sigs &out) {
  // Not linear: no partial values.
  addReplicated(out, 2, 1);
  broadcastSplits(in, res, axisSize, out);
}
double CompareOp::getComputeCost() { return numel(getType()); }

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

/// The layout of an addend of `shape` added to a result of `result` shape
/// laid out as `y`: the result's split where the addend has that dim (else
/// the addend is whole on each device), and the result's partial (a sum of
/// partial products plus an addend only adds up when the addend is partial
/// too).
static SbpEntry addendEntry(SbpEntry y, ArrayRef<int64_t> shape,
                            ArrayRef<int64_t> result) {
  if (!y.isSplit())
    return y;
  int64_t d = y.dim - static_cast<int64_t>(result.size() - shape.size());
  return d >= 0 && shape[d] == result[y.dim] ? S(d) : B;
}

/// The signatures of the product itself (its two operands).
static void productSignatures(bool ta, bool tb, Shapes in, Shapes res,
                              int64_t axisSize, Sigs &out);

void MatmulOp::getSbpSignatures(Shapes in, Shapes res, int64_t axisSize,
                                Sigs &out) {
  size_t first = out.size();
  productSignatures(getTransposeLhs(), getTransposeRhs(), in, res, axisSize,
                    out);
  if (in.size() < 3)
    return;
  for (SbpSignature &s : llvm::drop_begin(out, first))
    s.operands.push_back(addendEntry(s.results[0], in[2], res[0]));
}

static void productSignatures(bool ta, bool tb, Shapes in, Shapes res,
                              int64_t axisSize, Sigs &out) {
  addReplicated(out, 2, 1);
  const auto &l = in[0], &r = in[1], &y = res[0];
  int64_t lr = l.size(), rr = r.size(), yb = y.size() - 2;
  // Batch dims, with broadcasting as for elementwise ops.
  for (int64_t d = 0; d < yb; ++d) {
    if (y[d] < axisSize)
      continue;
    int64_t offL = yb - (lr - 2), offR = yb - (rr - 2);
    SbpEntry a = d >= offL && l[d - offL] == y[d] ? S(d - offL) : B;
    SbpEntry b = d >= offR && r[d - offR] == y[d] ? S(d - offR) : B;
    if (a.isBroadcast() && b.isBroadcast())
      continue;
    add(out, {a, b}, {S(d)});
  }
  int64_t mDim = ta ? lr - 1 : lr - 2;
  int64_t kDimL = ta ? lr - 2 : lr - 1;
  int64_t kDimR = tb ? rr - 1 : rr - 2;
  int64_t nDim = tb ? rr - 2 : rr - 1;
  if (l[mDim] >= axisSize)
    add(out, {S(mDim), B}, {S(yb)});
  if (r[nDim] >= axisSize)
    add(out, {B, S(nDim)}, {S(yb + 1)});
  if (l[kDimL] >= axisSize)
    add(out, {S(kDimL), S(kDimR)}, {P()});
  add(out, {P(), B}, {P()});
  add(out, {B, P()}, {P()});
}

double MatmulOp::getComputeCost() {
  auto l = cast<RankedTensorType>(getLhs().getType()).getShape();
  int64_t k = getTransposeLhs() ? l[l.size() - 2] : l.back();
  return 2.0 * numel(getType()) * k + (getAddend() ? numel(getType()) : 0);
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

void SoftmaxOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                 Sigs &out) {
  addReplicated(out, 1, 1);
  int64_t rank = in[0].size();
  // A causal softmax needs its [query, key] matrices whole: the mask
  // depends on the row's position.
  sameDimSplits(in, axisSize, out, 1, getCausal() ? rank - 2 : -1,
                (static_cast<int64_t>(getAxis()) + rank) % rank);
}
double SoftmaxOp::getComputeCost() { return 5 * numel(getType()); }

namespace {
/// A fused gradient of two same-shape operands, linear in the first: both
/// split alike on any dim but `skip` (and `skipAlso`), or a partial gradient
/// against a replicated second operand.
void gradSignatures(Shapes in, int64_t axisSize, Sigs &out, int64_t skip,
                    int64_t skipAlso = -1) {
  addReplicated(out, 2, 1);
  for (int64_t d = 0, r = in[0].size(); d < r; ++d)
    if (d != skip && d != skipAlso && in[0][d] >= axisSize)
      add(out, {S(d), S(d)}, {S(d)});
  add(out, {P(), B}, {P()});
}
} // namespace

void AdamUpdateOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                    Sigs &out) {
  addReplicated(out, 7, 3);
  // The weight, its gradient and moments split alike; the scalars are
  // replicated.
  for (int64_t d = 0, r = in[0].size(); d < r; ++d)
    if (in[0][d] >= axisSize)
      add(out, {S(d), S(d), S(d), S(d), B, B, B}, {S(d), S(d), S(d)});
}
double AdamUpdateOp::getComputeCost() {
  return 16 * numel(getWeight().getType());
}

void Adam8UpdateOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                     Sigs &out) {
  addReplicated(out, 9, 5);
  // Blocks lie within rows of the last dim: any other dim splits the
  // tensors and their scales alike, and the last only at whole blocks.
  int64_t r = in[0].size();
  for (int64_t d = 0; d < r; ++d) {
    bool last = d == r - 1;
    if (in[0][d] < axisSize || (last && in[0][d] % (256 * axisSize) != 0))
      continue;
    add(out, {S(d), S(d), S(d), S(d), S(d), S(d), B, B, B},
        {S(d), S(d), S(d), S(d), S(d)});
  }
}
double Adam8UpdateOp::getComputeCost() {
  return 24 * numel(getWeight().getType());
}

void GeluGradOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                  Sigs &out) {
  gradSignatures(in, axisSize, out, -1);
}
double GeluGradOp::getComputeCost() { return 20 * numel(getType()); }

void SoftmaxGradOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                     Sigs &out) {
  int64_t rank = in[0].size();
  gradSignatures(in, axisSize, out,
                 (static_cast<int64_t>(getAxis()) + rank) % rank,
                 getCausal() ? rank - 2 : -1);
}
double SoftmaxGradOp::getComputeCost() { return 4 * numel(getType()); }

void LogSoftmaxOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                    Sigs &out) {
  addReplicated(out, 1, 1);
  int64_t rank = in[0].size();
  sameDimSplits(in, axisSize, out, 1, -1,
                (static_cast<int64_t>(getAxis()) + rank) % rank);
}
double LogSoftmaxOp::getComputeCost() { return 5 * numel(getType()); }

void LayerNormOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                   Sigs &out) {
  addReplicated(out, 3, 1);
  int64_t rank = in[0].size();
  sameDimSplits(in, axisSize, out, 3,
                (static_cast<int64_t>(getAxis()) + rank) % rank);
}
double LayerNormOp::getComputeCost() { return 8 * numel(getType()); }

void LayerNormGradOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                       Sigs &out) {
  addReplicated(out, 3, 1);
  int64_t rank = in[0].size();
  int64_t axis = (static_cast<int64_t>(getAxis()) + rank) % rank;
  // Rows split alike (gamma whole); linear in the gradient.
  for (int64_t d = 0; d < axis; ++d)
    if (in[0][d] >= axisSize)
      add(out, {S(d), S(d), B}, {S(d)});
  add(out, {P(), B, B}, {P()});
}
double LayerNormGradOp::getComputeCost() { return 12 * numel(getType()); }

void LayerNormScaleGradOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                            Sigs &out) {
  addReplicated(out, 2, 1);
  int64_t rank = in[0].size();
  int64_t axis = (static_cast<int64_t>(getAxis()) + rank) % rank;
  // Rows split alike: each device sums its rows (a partial sum); linear in
  // the gradient.
  for (int64_t d = 0; d < axis; ++d)
    if (in[0][d] >= axisSize)
      add(out, {S(d), S(d)}, {P()});
  add(out, {P(), B}, {P()});
}
double LayerNormScaleGradOp::getComputeCost() {
  return 8 * numel(getInput().getType());
}

void RmsNormOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                 Sigs &out) {
  addReplicated(out, 2, 1);
  int64_t rank = in[0].size();
  sameDimSplits(in, axisSize, out, 2,
                (static_cast<int64_t>(getAxis()) + rank) % rank);
}
double RmsNormOp::getComputeCost() { return 6 * numel(getType()); }

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
template <typename ReduceOp>
void reduceSignatures(ReduceOp op, Shapes in, int64_t axisSize, Sigs &out,
                      SbpEntry reducedSplit, std::optional<SbpEntry> passes) {
  addReplicated(out, 1, 1);
  int64_t rank = in[0].size();
  SmallVector<bool> reduced(rank, false);
  for (int64_t a : op.getAxes())
    reduced[(a + rank) % rank] = true;
  int64_t kept = 0;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t outDim = op.getKeepdim() ? d : kept;
    if (!reduced[d])
      ++kept;
    if (in[0][d] < axisSize)
      continue;
    add(out, {S(d)}, {reduced[d] ? reducedSplit : S(outDim)});
  }
  if (passes)
    add(out, {*passes}, {*passes});
}
} // namespace

void ReduceSumOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                   Sigs &out) {
  reduceSignatures(*this, in, axisSize, out, P(), P());
}
double ReduceSumOp::getComputeCost() { return numel(getInput().getType()); }

void ReduceMeanOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                    Sigs &out) {
  // A split reduced dim gives each device a partial sum over its piece,
  // divided by the logical count: partials that sum to the mean.
  reduceSignatures(*this, in, axisSize, out, P(), P());
}
double ReduceMeanOp::getComputeCost() { return numel(getInput().getType()); }

void ReduceMaxOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                   Sigs &out) {
  reduceSignatures(*this, in, axisSize, out, P(ReduceKind::Max),
                   P(ReduceKind::Max));
}
double ReduceMaxOp::getComputeCost() { return numel(getInput().getType()); }

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

void ReshapeOp::getSbpSignatures(Shapes in, Shapes res, int64_t axisSize,
                                 Sigs &out) {
  addReplicated(out, 1, 1);
  add(out, {P()}, {P()});
  const auto &a = in[0], &b = res[0];
  // Match dims into groups of equal products; within a group the leading
  // dims line up.
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    size_t i0 = i, j0 = j;
    int64_t pa = a[i], pb = b[j];
    while (pa != pb) {
      if (pa < pb && i + 1 < a.size())
        pa *= a[++i];
      else if (j + 1 < b.size())
        pb *= b[++j];
      else
        return;
    }
    bool oneToOne = i == i0 && j == j0;
    if (a[i0] >= axisSize && b[j0] >= axisSize &&
        (oneToOne || (a[i0] % axisSize == 0 && b[j0] % axisSize == 0)))
      add(out, {S(i0)}, {S(j0)});
    ++i;
    ++j;
  }
}
double ReshapeOp::getComputeCost() { return 0; }

void AfterOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize, Sigs &out) {
  // The input passes through; the dependency is only waited for, so each of
  // its layouts is accepted as it comes (never boxed for this op).
  SmallVector<SbpEntry> input{B, P()}, dependency{B};
  for (ReduceKind k :
       {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::Avg})
    dependency.push_back(P(k));
  for (int64_t d = 0, r = in[0].size(); d < r; ++d)
    if (in[0][d] >= axisSize)
      input.push_back(S(d));
  for (int64_t d = 0, r = in[1].size(); d < r; ++d)
    if (in[1][d] >= axisSize)
      dependency.push_back(S(d));
  for (const SbpEntry &x : input)
    for (const SbpEntry &dep : dependency)
      add(out, {x, dep}, {x});
}
double AfterOp::getComputeCost() { return 0; }

void CopyOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize, Sigs &out) {
  // The value moves as it is laid out.
  add(out, {B}, {B});
  for (ReduceKind k :
       {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min, ReduceKind::Avg})
    add(out, {P(k)}, {P(k)});
  for (int64_t d = 0, r = in[0].size(); d < r; ++d)
    if (in[0][d] >= axisSize)
      add(out, {S(d)}, {S(d)});
}
double CopyOp::getComputeCost() { return 0; }

void SelectOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                Sigs &out) {
  // The condition is whole on every device; the picked tensors share any
  // layout, partial ones included (the pick is linear in the pair).
  add(out, {B, B, B}, {B});
  add(out, {B, P(), P()}, {P()});
  for (int64_t d = 0, r = in[1].size(); d < r; ++d)
    if (in[1][d] >= axisSize)
      add(out, {B, S(d), S(d)}, {S(d)});
}
double SelectOp::getComputeCost() { return numel(getType()); }

void TransposeOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                   Sigs &out) {
  addReplicated(out, 1, 1);
  add(out, {P()}, {P()});
  for (auto [d, p] : llvm::enumerate(getPerm()))
    if (in[0][p] >= axisSize)
      add(out, {S(p)}, {S(d)});
}
double TransposeOp::getComputeCost() { return 0; }

void BroadcastToOp::getSbpSignatures(Shapes in, Shapes res, int64_t axisSize,
                                     Sigs &out) {
  addReplicated(out, 1, 1);
  const auto &a = in[0], &r = res[0];
  int64_t off = r.size() - a.size();
  for (int64_t d = off; d < static_cast<int64_t>(r.size()); ++d)
    if (a[d - off] == r[d] && r[d] >= axisSize)
      add(out, {S(d - off)}, {S(d)});
}
double BroadcastToOp::getComputeCost() { return 0; }

void SliceOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize, Sigs &out) {
  addReplicated(out, 1, 1);
  add(out, {P()}, {P()});
  for (int64_t d = 0, r = in[0].size(); d < r; ++d)
    if (getStart()[d] == 0 && getLimit()[d] == in[0][d] && in[0][d] >= axisSize)
      add(out, {S(d)}, {S(d)});
}
double SliceOp::getComputeCost() { return 0; }

void ConcatOp::getSbpSignatures(Shapes in, Shapes res, int64_t axisSize,
                                Sigs &out) {
  unsigned n = in.size();
  addReplicated(out, n, 1);
  int64_t rank = res[0].size(),
          axis = (static_cast<int64_t>(getAxis()) + rank) % rank;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis || res[0][d] < axisSize)
      continue;
    SbpSignature s;
    s.operands.assign(n, S(d));
    s.results = {S(d)};
    out.push_back(std::move(s));
  }
  SbpSignature p;
  p.operands.assign(n, P());
  p.results = {P()};
  out.push_back(std::move(p));
}
double ConcatOp::getComputeCost() { return 0; }

//===----------------------------------------------------------------------===//
// Embedding, masks and losses
//===----------------------------------------------------------------------===//

void EmbeddingOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                   Sigs &out) {
  addReplicated(out, 2, 1);
  const auto &ids = in[0], &table = in[1];
  int64_t k = ids.size();
  for (int64_t d = 0; d < k; ++d)
    if (ids[d] >= axisSize)
      add(out, {S(d), B}, {S(d)});
  if (table[1] >= axisSize)
    add(out, {B, S(1)}, {S(k)});
  // Vocab-parallel: each device looks up the ids in its rows and gives
  // zeros for the others.
  if (table[0] >= axisSize)
    add(out, {B, S(0)}, {P()});
}
double EmbeddingOp::getComputeCost() { return numel(getType()); }

void OneHotOp::getSbpSignatures(Shapes in, Shapes res, int64_t axisSize,
                                Sigs &out) {
  addReplicated(out, 1, 1);
  for (int64_t d = 0, k = in[0].size(); d < k; ++d)
    if (in[0][d] >= axisSize)
      add(out, {S(d)}, {S(d)});
  // A class split is a free local slice of the replicated rows; boxing
  // makes it, so the op needs no offset of its own.
}
double OneHotOp::getComputeCost() { return numel(getType()); }

void EmbeddingGradOp::getSbpSignatures(Shapes in, Shapes res, int64_t axisSize,
                                       Sigs &out) {
  addReplicated(out, 2, 1);
  const auto &ids = in[0], &grad = in[1];
  int64_t k = ids.size();
  // Examples split: every device sums its examples' rows, partial sums of
  // the whole table.
  for (int64_t d = 0; d < k; ++d)
    if (ids[d] >= axisSize)
      add(out, {S(d), S(d)}, {P()});
  // Row width split: each device owns those columns of every row.
  if (grad[k] >= axisSize)
    add(out, {B, S(k)}, {S(1)});
  // Linear in the gradient.
  add(out, {B, P()}, {P()});
}
double EmbeddingGradOp::getComputeCost() { return numel(getGrad().getType()); }

void CausalMaskOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                    Sigs &out) {
  addReplicated(out, 1, 1);
  sameDimSplits(in, axisSize, out, 1, in[0].size() - 2);
}
double CausalMaskOp::getComputeCost() { return numel(getType()); }

void CrossEntropyOp::getSbpSignatures(Shapes in, Shapes, int64_t axisSize,
                                      Sigs &out) {
  addReplicated(out, 2, 1);
  const auto &logits = in[0];
  int64_t classDim = logits.size() - 1;
  for (int64_t d = 0; d < classDim; ++d)
    if (logits[d] >= axisSize)
      add(out, {S(d), S(d)}, {S(d)});
  // Vocab-parallel (Megatron): each device holds some classes; a max and
  // two sums over the split give every device the whole loss.
  if (logits[classDim] >= axisSize)
    add(out, {S(classDim), B}, {B});
}
double CrossEntropyOp::getComputeCost() {
  return 5 * numel(getLogits().getType());
}

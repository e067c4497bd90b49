//===- Fuse.cpp - Elementwise work folded into the ops next to it ---------===//
//
// --pc-fuse, on logical graphs before propagation: a product by a scalar
// constant becomes the alpha of the matmul it scales (Passes.td says which
// folds keep the bits and which reassociate), a causal mask's gradient
// that only repeats the softmax gradient's zeros goes, a causal mask
// folds into the softmax that reads it (and into that softmax's gradient),
// and a sum with a product becomes that matmul's addend.
//
//===----------------------------------------------------------------------===//

#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <optional>

namespace pc {
#define GEN_PASS_DEF_FUSE
#include "passes/Passes.h.inc"
} // namespace pc

using namespace mlir;
using namespace pc;

namespace {

/// The value of `v` when it is a rank-0 float constant.
std::optional<double> scalarConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!c || !type || type.getRank() != 0 ||
      !isa<FloatType>(type.getElementType()))
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// (the scaled operand, the scale) of `mul` when one operand is a scalar
/// constant and the product does not broadcast the other.
std::optional<std::pair<Value, double>> scaling(MulOp mul) {
  for (auto [scaled, by] : {std::pair(mul.getLhs(), mul.getRhs()),
                            std::pair(mul.getRhs(), mul.getLhs())})
    if (std::optional<double> c = scalarConstant(by))
      if (scaled.getType() == mul.getType())
        return std::pair(scaled, *c);
  return std::nullopt;
}

/// Whether `axis` of a `rank`-dim tensor is its last dim.
bool isLast(int64_t axis, int64_t rank) {
  return axis == -1 || axis == rank - 1;
}

/// Whether `g`, a causal mask's gradient (`{zero}`), only repeats zeros its
/// input has already: its input is the gradient of a softmax over the last
/// dim of causally masked scores, which is the softmax's output (0 above the
/// diagonal) times something finite.
bool maskIsRedundant(CausalMaskOp g) {
  if (!g.getZero())
    return false;
  auto grad = g.getInput().getDefiningOp<SoftmaxGradOp>();
  if (!grad)
    return false;
  int64_t rank = cast<RankedTensorType>(grad.getType()).getRank();
  auto softmax = grad.getOutput().getDefiningOp<SoftmaxOp>();
  if (!softmax || !isLast(grad.getAxis(), rank) ||
      !isLast(softmax.getAxis(), rank))
    return false;
  if (softmax.getCausal())
    return true;
  auto mask = softmax.getInput().getDefiningOp<CausalMaskOp>();
  return mask && !mask.getZero();
}

/// The causal mask `s` reads, when `s` normalizes the last dim (where a
/// causal softmax normalizes).
CausalMaskOp foldableMask(SoftmaxOp s) {
  int64_t rank = cast<RankedTensorType>(s.getType()).getRank();
  auto mask = s.getInput().getDefiningOp<CausalMaskOp>();
  if (s.getCausal() || !mask || mask.getZero() || !isLast(s.getAxis(), rank))
    return {};
  return mask;
}

void scaleBy(MatmulOp m, double c) { m.setScale(m.getScale() * c); }

struct FusePass : public pc::impl::FuseBase<FusePass> {
  using FuseBase::FuseBase;

  void runOnOperation() override {
    // Masks first: a mask gradient is recognized by the mask it mirrors.
    if (mask) {
      SmallVector<CausalMaskOp> masks;
      getOperation().walk([&](CausalMaskOp g) {
        if (maskIsRedundant(g))
          masks.push_back(g);
      });
      for (CausalMaskOp g : masks) {
        g.replaceAllUsesWith(g.getInput());
        g.erase();
        ++numMasks;
      }
    }
    if (causal)
      foldCausalMasks();
    if (scale)
      foldScales();
    // Last: a product that takes an addend no longer scales as a whole.
    if (addend)
      foldAddends();
  }

  /// `add(matmul(a, b), c)` -> `matmul(a, b, c)` where the matmul has no
  /// other use and no addend yet, and `c` does not widen the result. In
  /// program order, so that a sum of products (a gradient of a value with
  /// several matmul users) folds into a chain: each product adds the one
  /// before.
  void foldAddends() {
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp add) { adds.push_back(add); });
    for (AddOp add : adds) {
      MatmulOp m;
      Value c;
      for (auto [p, q] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())}) {
        auto candidate = p.getDefiningOp<MatmulOp>();
        if (candidate && !candidate.getAddend() && candidate->hasOneUse() &&
            candidate.getType() == add.getType() && p != q) {
          m = candidate;
          c = q;
          // Prefer the product made last: the other one is then its
          // addend, ready when it is written.
          if (auto other = q.getDefiningOp<MatmulOp>();
              !other || other->getBlock() != candidate->getBlock() ||
              other->isBeforeInBlock(candidate))
            break;
        }
      }
      if (!m)
        continue;
      // The add's result type, layout annotation included.
      OpBuilder b(add);
      auto fused = MatmulOp::create(b, add.getLoc(), add.getType(), m.getLhs(),
                                    m.getRhs(), c, m.getTransposeLhsAttr(),
                                    m.getTransposeRhsAttr(), m.getAlphaAttr());
      fused->setDiscardableAttrs(m->getDiscardableAttrDictionary());
      add.replaceAllUsesWith(fused.getResult());
      add.erase();
      m.erase();
      ++numAddends;
    }
  }

  void foldCausalMasks() {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp s) {
      if (foldableMask(s))
        softmaxes.push_back(s);
    });
    for (SoftmaxOp s : softmaxes) {
      CausalMaskOp m = foldableMask(s);
      s.setOperand(m.getInput());
      s.setCausal(true);
      if (m->use_empty())
        m.erase();
      ++numCausal;
      // Its gradients read its output, which is 0 above the diagonal.
      for (Operation *user : s->getUsers())
        if (auto g = dyn_cast<SoftmaxGradOp>(user);
            g && g.getOutput() == s.getResult() &&
            isLast(g.getAxis(), cast<RankedTensorType>(s.getType()).getRank()))
          g.setCausal(true);
    }
  }

  void foldScales() {
    SmallVector<MulOp> muls;
    llvm::SetVector<Operation *> scales;
    getOperation().walk([&](MulOp mul) { muls.push_back(mul); });
    for (MulOp mul : muls) {
      std::optional<std::pair<Value, double>> s = scaling(mul);
      if (!s || !std::isfinite(s->second))
        continue;
      auto [x, c] = *s;
      Operation *constant =
          (mul.getLhs() == x ? mul.getRhs() : mul.getLhs()).getDefiningOp();
      // The product of a matmul that has no other use: scale its output.
      // (Not one with an addend: alpha scales the product alone.)
      if (auto m = x.getDefiningOp<MatmulOp>(); m && !m.getAddend() &&
                                                m->hasOneUse() &&
                                                m.getType() == mul.getType()) {
        scaleBy(m, c);
        mul.replaceAllUsesWith(m.getResult());
        mul.erase();
        scales.insert(constant);
        ++numScaled;
        continue;
      }
      // A scaled operand of matmuls only: each of them scales instead.
      // (Both operands of one matmul: it scales twice, by c squared.)
      // (As a factor: an addend is added unscaled.)
      if (mul->use_empty() || !llvm::all_of(mul->getUses(), [](OpOperand &u) {
            return isa<MatmulOp>(u.getOwner()) && u.getOperandNumber() < 2;
          }))
        continue;
      for (OpOperand &use : llvm::make_early_inc_range(mul->getUses())) {
        scaleBy(cast<MatmulOp>(use.getOwner()), c);
        use.set(x);
      }
      mul.erase();
      scales.insert(constant);
      ++numScaled;
    }
    // The scales the folds left without a use.
    for (Operation *c : scales)
      if (c->use_empty())
        c->erase();
  }
};

} // namespace

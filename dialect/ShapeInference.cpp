//===- ShapeInference.cpp - Result shapes of the logical ops --------------===//

#include "dialect/ShapeInference.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace llvm;

namespace pc::shape {

std::string str(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "a scalar";
  std::string s;
  for (auto [i, d] : enumerate(shape)) {
    if (i)
      s += "x";
    s += std::to_string(d);
  }
  return s;
}

FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank, StringRef what,
                                 EmitErrorFn emitError) {
  if (axis < -rank || axis >= rank) {
    emitError() << what << " " << axis << " is out of range for a rank-" << rank
                << " tensor";
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

FailureOr<Shape> broadcast(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs,
                           EmitErrorFn emitError) {
  size_t rank = std::max(lhs.size(), rhs.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the back; a missing dim acts as 1.
    int64_t a = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t b = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (a != b && a != 1 && b != 1) {
      emitError() << "operand shapes " << str(lhs) << " and " << str(rhs)
                  << " do not broadcast: dim " << i << " of the result would"
                  << " need " << a << " and " << b;
      return failure();
    }
    out[i] = a == 1 ? b : a;
  }
  return out;
}

bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t lead = to.size() - from.size();
  for (auto [i, d] : enumerate(from))
    if (d != 1 && d != to[lead + i])
      return false;
  return true;
}

FailureOr<Shape> matmul(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs,
                        bool transposeLhs, bool transposeRhs,
                        EmitErrorFn emitError) {
  if (lhs.size() < 2 || rhs.size() < 2) {
    emitError() << "operands need rank >= 2, but lhs is " << str(lhs)
                << " and rhs is " << str(rhs);
    return failure();
  }
  size_t lr = lhs.size(), rr = rhs.size();
  int64_t m = transposeLhs ? lhs[lr - 1] : lhs[lr - 2];
  int64_t k = transposeLhs ? lhs[lr - 2] : lhs[lr - 1];
  int64_t k2 = transposeRhs ? rhs[rr - 1] : rhs[rr - 2];
  int64_t n = transposeRhs ? rhs[rr - 2] : rhs[rr - 1];
  if (k != k2) {
    emitError() << "contraction sizes differ: lhs " << str(lhs)
                << (transposeLhs ? " (transposed)" : "") << " has k = " << k
                << " but rhs " << str(rhs)
                << (transposeRhs ? " (transposed)" : "") << " has k = " << k2;
    return failure();
  }
  FailureOr<Shape> batch = broadcast(lhs.drop_back(2), rhs.drop_back(2), [&] {
    return emitError() << "batch dims: ";
  });
  if (failed(batch))
    return failure();
  batch->push_back(m);
  batch->push_back(n);
  return batch;
}

FailureOr<Shape> reduce(ArrayRef<int64_t> input, ArrayRef<int64_t> axes,
                        bool keepdim, EmitErrorFn emitError,
                        SmallVectorImpl<int64_t> *normalized) {
  if (axes.empty()) {
    emitError() << "axes must not be empty";
    return failure();
  }
  int64_t rank = input.size();
  SmallBitVector reduced(rank);
  for (int64_t a : axes) {
    FailureOr<int64_t> axis = normalizeAxis(a, rank, "axis", emitError);
    if (failed(axis))
      return failure();
    if (reduced[*axis]) {
      emitError() << "axis " << a << " appears twice in axes";
      return failure();
    }
    reduced.set(*axis);
    if (normalized)
      normalized->push_back(*axis);
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      out.push_back(input[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

FailureOr<Shape> transpose(ArrayRef<int64_t> input, ArrayRef<int64_t> perm,
                           EmitErrorFn emitError) {
  int64_t rank = input.size();
  if (static_cast<int64_t>(perm.size()) != rank) {
    emitError() << "perm has " << perm.size() << " entries for a rank-" << rank
                << " tensor";
    return failure();
  }
  SmallBitVector seen(rank);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p]) {
      emitError() << "perm [" << make_range(perm.begin(), perm.end())
                  << "] is not a permutation of 0.." << rank - 1;
      return failure();
    }
    seen.set(p);
    out.push_back(input[p]);
  }
  return out;
}

FailureOr<Shape> slice(ArrayRef<int64_t> input, ArrayRef<int64_t> start,
                       ArrayRef<int64_t> limit, EmitErrorFn emitError) {
  if (start.size() != input.size() || limit.size() != input.size()) {
    emitError() << "start and limit need one entry per dim of the rank-"
                << input.size() << " operand, but have " << start.size()
                << " and " << limit.size();
    return failure();
  }
  Shape out;
  for (auto [i, d] : enumerate(input)) {
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > d) {
      emitError() << "dim " << i << ": the range [" << start[i] << ", "
                  << limit[i] << ") is not within [0, " << d << "]";
      return failure();
    }
    out.push_back(limit[i] - start[i]);
  }
  return out;
}

FailureOr<Shape> concat(ArrayRef<ArrayRef<int64_t>> inputs, int64_t axis,
                        EmitErrorFn emitError) {
  if (inputs.empty()) {
    emitError() << "needs at least one operand";
    return failure();
  }
  ArrayRef<int64_t> first = inputs.front();
  FailureOr<int64_t> a = normalizeAxis(axis, first.size(), "axis", emitError);
  if (failed(a))
    return failure();
  Shape out(first);
  out[*a] = 0;
  for (auto [i, s] : enumerate(inputs)) {
    if (s.size() != first.size()) {
      emitError() << "operand #" << i << " has rank " << s.size()
                  << " but operand #0 has rank " << first.size();
      return failure();
    }
    for (auto [d, size] : enumerate(s))
      if (static_cast<int64_t>(d) != *a && size != first[d]) {
        emitError() << "operand #" << i << " (" << str(s)
                    << ") differs from operand #0 (" << str(first)
                    << ") in dim " << d << ", which is not the concat axis";
        return failure();
      }
    out[*a] += s[*a];
  }
  return out;
}

FailureOr<Shape> embedding(ArrayRef<int64_t> ids, ArrayRef<int64_t> table,
                           EmitErrorFn emitError) {
  if (table.size() != 2) {
    emitError() << "the table must be rank 2 (rows x width), not "
                << str(table);
    return failure();
  }
  Shape out(ids);
  out.push_back(table[1]);
  return out;
}

FailureOr<Shape> crossEntropy(ArrayRef<int64_t> logits,
                              ArrayRef<int64_t> labels, EmitErrorFn emitError) {
  if (logits.empty()) {
    emitError() << "logits need a class dim, but are a scalar";
    return failure();
  }
  if (labels != logits.drop_back()) {
    emitError() << "labels have shape " << str(labels) << " but logits "
                << str(logits) << " need labels of shape "
                << str(logits.drop_back());
    return failure();
  }
  return Shape(labels);
}

FailureOr<int64_t> normalizedDims(ArrayRef<int64_t> input, int64_t axis,
                                  ArrayRef<int64_t> param, StringRef what,
                                  EmitErrorFn emitError) {
  FailureOr<int64_t> a = normalizeAxis(axis, input.size(), "axis", emitError);
  if (failed(a))
    return failure();
  if (param != input.drop_front(*a)) {
    emitError() << what << " has shape " << str(param)
                << " but must have the normalized shape "
                << str(input.drop_front(*a)) << " (dims " << *a << " and on of "
                << str(input) << ")";
    return failure();
  }
  return a;
}

} // namespace pc::shape

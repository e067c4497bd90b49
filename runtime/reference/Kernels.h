//===- Kernels.h - Reference kernels on double arrays -----------*- C++ -*-===//
//
// Straightforward, obviously-correct implementations of the logical ops, in
// double precision. Each reports a bad input (an id out of range, say)
// through absl::Status.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_REFERENCE_KERNELS_H
#define PC_RUNTIME_REFERENCE_KERNELS_H

#include "runtime/reference/Interpreter.h"

#include "dialect/Sharding.h"

#include <functional>

namespace pc::reference {

using Shape = std::vector<int64_t>;

Array elementwise(const Array &a, const std::function<double(double)> &fn);
/// NumPy broadcasting of `a` and `b` to `resultShape`.
Array broadcastBinary(const Array &a, const Array &b, const Shape &resultShape,
                      const std::function<double(double, double)> &fn);
Array broadcastTo(const Array &a, const Shape &shape);
Array matmul(const Array &a, const Array &b, bool transposeA, bool transposeB,
             const Shape &resultShape);
Array softmax(const Array &a, int64_t axis, bool log);
/// Normalizes over dims [axis, rank); `beta` may be null (RMS norm).
Array normalize(const Array &x, int64_t axis, const Array &gamma,
                const Array *beta, double epsilon, bool rms);
enum class Reduce { Sum, Mean, Max };
Array reduce(const Array &a, const std::vector<int64_t> &axes, bool keepdim,
             Reduce kind);
Array transpose(const Array &a, const std::vector<int64_t> &perm);
Array slice(const Array &a, const Shape &start, const Shape &sizes);
/// Writes `piece` into `into` at `start`.
void place(Array &into, const Array &piece, const Shape &start);
Array concat(const std::vector<Array> &parts, int64_t axis);
absl::StatusOr<Array> embedding(const Array &ids, const Array &table,
                                bool zeroOutOfRange);
/// Masked entries become -infinity, or 0 with `zero`.
Array causalMask(const Array &a, bool zero = false);
/// The input gradient of layer norm over dims [axis, rank) with `gamma`.
Array layerNormGrad(const Array &dy, const Array &x, const Array &gamma,
                    int64_t axis, double epsilon);
/// `Σ_rows dy · x̂` over dims [0, axis): the gradient of layer norm's gamma.
Array layerNormScaleGrad(const Array &dy, const Array &x, int64_t axis,
                         double epsilon);
/// `y · (dy − Σ_axis dy · y)`: the gradient of softmax through its output.
Array softmaxGrad(const Array &dy, const Array &y, int64_t axis);
/// `labels` as one-hot rows of `classes` (zeros for a label outside).
Array oneHot(const Array &labels, int64_t classes);
/// The transpose of embedding: rows of `grad` summed into a `rows`-row
/// table by id (ids outside add nothing).
Array embeddingGrad(const Array &ids, const Array &grad, int64_t rows);
absl::StatusOr<Array> crossEntropy(const Array &logits, const Array &labels);
Array pickLabels(const Array &values, const Array &labels);
/// Elementwise reduction of equally shaped arrays.
Array combine(const std::vector<Array> &arrays, ReduceKind kind);

} // namespace pc::reference

#endif // PC_RUNTIME_REFERENCE_KERNELS_H

//===- CpuKernels.h - Kernels of the logical ops on CPU ---------*- C++ -*-===//
//
// The CPU implementations of the logical ops on dense row-major tensors
// (runtime/device/HostTensor.h), for one device's local pieces: matmul
// through OpenBLAS (batched, with broadcast batch dims and transposes), the
// rest as loops over contiguous rows that the compiler vectorizes. Floats
// are f32; ids and labels are i32 or i64. Bad data (an id outside the
// table) is an absl::Status, never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_KERNELS_CPUKERNELS_H
#define PC_RUNTIME_KERNELS_CPUKERNELS_H

#include "runtime/device/HostTensor.h"

#include "absl/status/status.h"

namespace pc::runtime::cpu {

using Shape = std::vector<int64_t>;

enum class Binary { Add, Sub, Mul, Div };
enum class Unary {
  Neg,
  Exp,
  Log,
  Tanh,
  Relu,
  Sigmoid,
  Gelu,
  GeluTanh,
  Sqrt,
  Erf
};
enum class Comparison { Eq, Ne, Lt, Le, Gt, Ge };
enum class Reduction { Sum, Mean, Max };

/// `out` = op(a) · op(b); `out` has the result shape already.
absl::Status matmul(const HostTensor &a, const HostTensor &b, bool transposeA,
                    bool transposeB, HostTensor &out);
/// NumPy broadcasting into `out`'s shape.
absl::Status binary(Binary op, const HostTensor &a, const HostTensor &b,
                    HostTensor &out);
absl::Status unary(Unary op, const HostTensor &in, HostTensor &out);
absl::Status softmax(const HostTensor &in, int64_t axis, bool log,
                     HostTensor &out);
/// Normalizes over dims [axis, rank); `beta` may be null (RMS norm).
absl::Status normalize(const HostTensor &in, int64_t axis,
                       const HostTensor &gamma, const HostTensor *beta,
                       float epsilon, bool rms, HostTensor &out);
absl::Status reduce(Reduction op, const HostTensor &in,
                    std::span<const int64_t> axes, HostTensor &out);
absl::Status transpose(const HostTensor &in, std::span<const int64_t> perm,
                       HostTensor &out);
absl::Status embedding(const HostTensor &ids, const HostTensor &table,
                       bool zeroOutOfRange, HostTensor &out);
absl::Status causalMask(const HostTensor &in, HostTensor &out);
/// 1 where `a op b` holds, else 0 (NumPy broadcasting into `out`'s shape).
absl::Status compare(Comparison op, const HostTensor &a, const HostTensor &b,
                     HostTensor &out);
/// One-hot rows of `out`'s last dim; labels outside give zeros.
absl::Status oneHot(const HostTensor &labels, HostTensor &out);
/// Rows of `grad` summed into `out` (a table) by id; ids outside add
/// nothing.
absl::Status embeddingGrad(const HostTensor &ids, const HostTensor &grad,
                           HostTensor &out);
absl::Status crossEntropy(const HostTensor &logits, const HostTensor &labels,
                          HostTensor &out);
absl::Status pickLabels(const HostTensor &values, const HostTensor &labels,
                        HostTensor &out);
/// Between any two element types (float to int rounds toward zero).
absl::Status cast(const HostTensor &in, HostTensor &out);

/// Sizes the BLAS thread pool, so that N virtual devices on a machine of C
/// cores do not oversubscribe it.
void setBlasThreads(int threads);

} // namespace pc::runtime::cpu

#endif // PC_RUNTIME_KERNELS_CPUKERNELS_H

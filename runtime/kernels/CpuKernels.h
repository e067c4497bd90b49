//===- CpuKernels.h - Kernels of the logical ops on CPU ---------*- C++ -*-===//
//
// The CPU implementations of the logical ops on dense row-major tensors
// (runtime/device/Tensor.h), for one device's local pieces, as loops over
// contiguous rows that the compiler vectorizes. Matmul, elementwise math,
// softmax and transposes run through oneDNN (OneDnn.h), which falls back to
// these (matmul to OpenBLAS) for shapes it does not take. Floats
// are f32; ids and labels are i32 or i64. Bad data (an id outside the
// table) is an absl::Status, never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_KERNELS_CPUKERNELS_H
#define PC_RUNTIME_KERNELS_CPUKERNELS_H

#include "runtime/device/Tensor.h"
#include "runtime/kernels/portable/Math.h"

#include "absl/status/status.h"

namespace pc::runtime::cpu {

using Shape = std::vector<int64_t>;

/// The ops' kinds, shared with the device kernels (portable/Math.h).
using Binary = portable::BinaryOp;
using Unary = portable::UnaryOp;
using Comparison = portable::CompareOp;
using Reduction = portable::Reduction;

/// An error unless `t` holds f32 values; `what` names the kernel.
absl::Status expectF32(const TensorView &t, const char *what);

/// `out` = alpha · op(a) · op(b) (+ `addend`, broadcast); `out` has the
/// result shape already. Through OpenBLAS: the fallback of MatmulPlan
/// (OneDnn.h).
absl::Status matmul(const TensorView &a, const TensorView &b, bool transposeA,
                    bool transposeB, const TensorView &out, float alpha = 1.0f,
                    const TensorView *addend = nullptr);
/// NumPy broadcasting into `out`'s shape.
absl::Status binary(Binary op, const TensorView &a, const TensorView &b,
                    const TensorView &out);
absl::Status unary(Unary op, const TensorView &in, const TensorView &out);
absl::Status softmax(const TensorView &in, int64_t axis, bool log,
                     const TensorView &out);
/// Normalizes over dims [axis, rank); `beta` may be null (RMS norm).
absl::Status normalize(const TensorView &in, int64_t axis,
                       const TensorView &gamma, const TensorView *beta,
                       float epsilon, bool rms, const TensorView &out);
absl::Status reduce(Reduction op, const TensorView &in,
                    std::span<const int64_t> axes, const TensorView &out);
absl::Status transpose(const TensorView &in, std::span<const int64_t> perm,
                       const TensorView &out);
absl::Status embedding(const TensorView &ids, const TensorView &table,
                       bool zeroOutOfRange, const TensorView &out);
/// Masked entries become -infinity, or 0 with `zero` (the mask's gradient).
absl::Status causalMask(const TensorView &in, const TensorView &out,
                        bool zero = false);
/// The input gradient of layer norm over dims [axis, rank) with scale
/// `gamma` (pc.layer_norm_grad), row by row, with the forward kernel's
/// statistics (double accumulation).
absl::Status layerNormGrad(const TensorView &dy, const TensorView &x,
                           const TensorView &gamma, int64_t axis, float epsilon,
                           const TensorView &out);
/// `Σ_rows dy · x̂` into `out` (the normalized dims' shape): the gradient of
/// the layer norm's gamma (pc.layer_norm_scale_grad), rows summed in order.
absl::Status layerNormScaleGrad(const TensorView &dy, const TensorView &x,
                                int64_t axis, float epsilon,
                                const TensorView &out);
/// A causal softmax in three steps, so that the exponentials (the costly
/// part) are taken only on and below the diagonal, in one vectorized pass
/// over a packed buffer: `causalCenter` packs, row by row of `matrices`
/// q x k matrices, the first min(k, row + 1) entries minus the row's
/// maximum (`causalPackedSize(q, k)` values per matrix); the caller
/// exponentiates them; `causalNormalize` divides each row by its sum into
/// `y` and writes the zeros above the diagonal.
int64_t causalPackedSize(int64_t q, int64_t k);
void causalCenter(const float *x, int64_t matrices, int64_t q, int64_t k,
                  float *packed);
void causalNormalize(const float *packed, int64_t matrices, int64_t q,
                     int64_t k, float *y);
/// `y · (dy − Σ_axis dy · y)`, the softmax's gradient through its output;
/// `causal` (axis last): each row of the last two dims' matrices reads its
/// diagonal and the entries before it, and the rest is 0.
absl::Status softmaxGrad(const TensorView &dy, const TensorView &y,
                         int64_t axis, bool causal, const TensorView &out);
/// 1 where `a op b` holds, else 0 (NumPy broadcasting into `out`'s shape).
absl::Status compare(Comparison op, const TensorView &a, const TensorView &b,
                     const TensorView &out);
/// One-hot rows of `out`'s last dim; labels outside give zeros.
absl::Status oneHot(const TensorView &labels, const TensorView &out);
/// Rows of `grad` summed into `out` (a table) by id; ids outside add
/// nothing.
absl::Status embeddingGrad(const TensorView &ids, const TensorView &grad,
                           const TensorView &out);
/// Adam's constants, as the f32 values its elementwise form multiplies by
/// (shared with the portable kernels).
using AdamConstants = portable::AdamConstants;
/// One Adam/AdamW step of `w` and its moments `m`, `v` (pc.adam_update),
/// in one pass, into `w2`, `m2`, `v2`; `lr`, `c1`, `c2` are the rate and
/// the bias corrections.
absl::Status adamUpdate(const TensorView &w, const TensorView &g,
                        const TensorView &m, const TensorView &v, float lr,
                        float c1, float c2, const AdamConstants &k,
                        const TensorView &w2, const TensorView &m2,
                        const TensorView &v2);
absl::Status crossEntropy(const TensorView &logits, const TensorView &labels,
                          const TensorView &out);
absl::Status pickLabels(const TensorView &values, const TensorView &labels,
                        const TensorView &out);
/// Between any two element types (float to int rounds toward zero).
absl::Status cast(const TensorView &in, const TensorView &out);

} // namespace pc::runtime::cpu

#endif // PC_RUNTIME_KERNELS_CPUKERNELS_H

//===- RowKernels.h - Norms, softmax, cross entropy by rows ---*- C++ -*-===//
//
// The CUDA backend's forms of the portable layer/RMS norm, the layer
// norm's input gradient, softmax and its gradient, and cross entropy
// (ThrustKernels.inl): one thread block per row instead of one thread, so
// that a row is read once, coalesced, into shared memory (cross entropy's
// twice, from global memory), and its math runs on many threads. The math
// is Math.h's, shared with the host build: the norms' and the softmax
// gradient's eight lane sums run one lane per thread in the CPU's order
// (the same bits); the softmax's and cross entropy's maximum and sum are
// block reductions (within roundings, as the portable softmax is of the
// CPU's oneDNN one).
//
// Each returns false, having queued nothing, for a shape it does not take
// (a row longer than shared memory holds; more rows than a grid): the
// caller runs the general form. A failed launch throws, as Thrust does.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_CUDA_ROWKERNELS_H
#define PC_RUNTIME_CUDA_ROWKERNELS_H

#include "runtime/kernels/portable/DeviceKernels.h"

#include <cstdint>

namespace pc::cuda {

/// DeviceKernels::normalize over `rows` contiguous rows of `width`.
bool normalizeRows(void *stream, runtime::portable::Elem t, const void *in,
                   const void *gamma, const void *beta, void *out, int64_t rows,
                   int64_t width, float epsilon, bool rms);

/// Each of `rows` contiguous rows' layer norm statistics into `stats`
/// (device memory), as normalizeRows computes them.
bool rowStatsRows(void *stream, runtime::portable::Elem t, const void *x,
                  runtime::portable::RowStats *stats, int64_t rows,
                  int64_t width, float epsilon);

/// DeviceKernels::layerNormGrad over `rows` contiguous rows of `width`.
bool layerNormGradRows(void *stream, runtime::portable::Elem t, const void *dy,
                       const void *x, const void *gamma, void *out,
                       int64_t rows, int64_t width, float epsilon);

/// DeviceKernels::softmaxGrad over contiguous rows (inner == 1), as
/// softmaxRows.
bool softmaxGradRows(void *stream, runtime::portable::Elem t, const void *dy,
                     const void *y, void *out, int64_t rows, int64_t len,
                     bool causal, int64_t q);

/// DeviceKernels::softmax over contiguous rows (inner == 1): `rows` of
/// `len`; causal rows see (row % q) + 1 entries.
bool softmaxRows(void *stream, runtime::portable::Elem t, const void *in,
                 void *out, int64_t rows, int64_t len, bool log, bool causal,
                 int64_t q);

/// DeviceKernels::crossEntropy over `rows` rows of `classes` logits, the
/// labels i64 (`wideIds`) or i32. A label outside [0, classes) makes its
/// row NaN and lowers *firstBad (device memory) to the row's position. The
/// sum of exponentials, in double, is a block reduction (the CPU's runs in
/// order), and the device's expf is not libm's: within f32 roundings, as
/// the softmax.
bool crossEntropyRows(void *stream, runtime::portable::Elem t, bool wideIds,
                      const void *logits, const void *labels, void *out,
                      int64_t rows, int64_t classes, int64_t *firstBad);

} // namespace pc::cuda

#endif // PC_RUNTIME_CUDA_ROWKERNELS_H

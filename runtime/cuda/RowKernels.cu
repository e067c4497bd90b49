//===- RowKernels.cu - Norms, softmax, cross entropy: a block per row -===//
//
// See RowKernels.h. Built with the rest of the CUDA backend's kernels
// (--fmad=false: no multiply-add contracted that the host build does not).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/RowKernels.h"

#include <cuda_runtime.h>

#include <climits>
#include <stdexcept>
#include <string>

namespace pc::cuda {
namespace {

using runtime::portable::Elem;
using runtime::portable::Float;
using runtime::portable::kLanes;
using runtime::portable::onFloat;
using runtime::portable::RowStats;
using runtime::portable::Sums;

/// Threads per block: few enough that an SM holds many rows at once, to
/// hide the norm's eight-thread lane sums behind other rows' loads.
constexpr int kThreads = 128;
/// The longest row staged in shared memory: 47 KiB of f32, so that with
/// the kernels' static shared memory (under 1 KiB) a block stays within
/// the 48 KiB it gets without opting in to more.
constexpr int64_t kMaxRow = 12 * 1024 - 256;

bool fits(int64_t rows, int64_t len) {
  return rows > 0 && rows <= INT_MAX && len > 0 && len <= kMaxRow;
}

void launched(const char *what) {
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

/// Row `blockIdx.x` of `x`, loaded into f32 in shared memory, coalesced.
template <typename T>
__device__ void stageRow(const T *x, int64_t base, int64_t len, float *row) {
  PC_UNROLL_BY(8)
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    row[i] = Float<T>::load(x, base + i);
  __syncthreads();
}

/// `op` over the block's values, the same in every thread: a warp's by
/// shuffles, then the warps' in order by thread 0.
template <typename V, typename Op>
__device__ V blockReduce(V v, Op op, V *part, V *result) {
  for (int off = 16; off > 0; off /= 2)
    v = op(v, __shfl_down_sync(0xffffffffu, v, off));
  if (threadIdx.x % 32 == 0)
    part[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    V r = part[0];
    for (int w = 1; w < kThreads / 32; ++w)
      r = op(r, part[w]);
    *result = r;
  }
  __syncthreads();
  return *result;
}

/// A row's eight-lane result, the same in every thread: lane(l) on thread
/// l (each lane its own chain, in the CPU's order), then finish(lanes) on
/// thread 0.
template <typename V, typename Lane, typename Finish>
__device__ V blockLanes(Lane lane, Finish finish, V *lanes, V *result) {
  if (threadIdx.x < kLanes)
    lanes[threadIdx.x] = lane(static_cast<int>(threadIdx.x));
  __syncthreads();
  if (threadIdx.x == 0)
    *result = finish(lanes);
  __syncthreads();
  return *result;
}

/// `term`'s two row sums (Math.h's laneSums and finishSums) over a block.
template <typename Term>
__device__ Sums blockRowSums(Term term, int64_t n, Sums *lanes, Sums *result) {
  return blockLanes(
      [&](int l) { return runtime::portable::laneSums(term, n, l); },
      [&](const Sums *all) {
        return runtime::portable::finishSums(all, term, n);
      },
      lanes, result);
}

/// Row `blockIdx.x` of `x` staged in `row`, and its norm statistics, the
/// same in every thread.
template <typename T>
__device__ RowStats stagedRowStats(const T *x, int64_t width, float epsilon,
                                   bool rms, float *row) {
  __shared__ Sums lanes[kLanes], sums;
  stageRow(x, static_cast<int64_t>(blockIdx.x) * width, width, row);
  auto at = [&](int64_t i) { return row[i]; };
  return runtime::portable::statsOf(
      blockRowSums(runtime::portable::momentsOf(at), width, lanes, &sums),
      width, epsilon, rms);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    normalizeKernel(const T *x, const T *gamma, const T *beta, T *y,
                    int64_t width, float epsilon, bool rms) {
  extern __shared__ float row[];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * width;
  const RowStats s = stagedRowStats(x, width, epsilon, rms, row);
  PC_UNROLL_BY(8)
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x)
    Float<T>::store(
        y, base + i,
        runtime::portable::normalizedOf(row[i], s, Float<T>::load(gamma, i),
                                        beta ? Float<T>::load(beta, i) : 0.0f));
}

/// A row's layer norm statistics alone (for the norm's scale gradient):
/// normalizeKernel's first half.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    rowStatsKernel(const T *x, RowStats *stats, int64_t width, float epsilon) {
  extern __shared__ float row[];
  const RowStats s = stagedRowStats(x, width, epsilon, false, row);
  if (threadIdx.x == 0)
    stats[blockIdx.x] = s;
}

/// The layer norm's input gradient: x and g = dy · gamma staged, then the
/// row's statistics and the gradient's two means, each as eight lane
/// chains on eight threads, then the outputs on every thread.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    layerNormGradKernel(const T *dy, const T *x, const T *gamma, T *out,
                        int64_t width, float epsilon) {
  extern __shared__ float staged[];
  float *xs = staged, *gs = staged + width;
  __shared__ Sums lanes[kLanes], sums;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * width;
  PC_UNROLL_BY(8)
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) {
    xs[i] = Float<T>::load(x, base + i);
    gs[i] = Float<T>::load(dy, base + i) * Float<T>::load(gamma, i);
  }
  __syncthreads();
  auto xa = [&](int64_t i) { return xs[i]; };
  const RowStats s = runtime::portable::statsOf(
      blockRowSums(runtime::portable::momentsOf(xa), width, lanes, &sums),
      width, epsilon, false);
  auto g = [&](int64_t i) { return gs[i]; };
  auto xhat = [&](int64_t i) { return runtime::portable::xhatOf(xs[i], s); };
  const runtime::portable::GradMeans m = runtime::portable::gradMeansOf(
      blockRowSums(runtime::portable::gradTermsOf(g, xhat), width, lanes,
                   &sums),
      width);
  PC_UNROLL_BY(8)
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x)
    Float<T>::store(out, base + i,
                    runtime::portable::layerNormGradOf(gs[i], xhat(i), s, m));
}

/// The softmax's input gradient over contiguous rows: dy and y staged, the
/// dot product's eight lanes on eight threads (the CPU's split and bits),
/// then the outputs on every thread.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmaxGradKernel(const T *dy, const T *y, T *out, int64_t len, int64_t q,
                      bool causal) {
  extern __shared__ float staged[];
  float *gs = staged, *ps = staged + len;
  __shared__ float lanes[kLanes];
  __shared__ float dot;
  const int64_t o = blockIdx.x, base = o * len;
  const int64_t n = causal && o % q + 1 < len ? o % q + 1 : len;
  PC_UNROLL_BY(8)
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    gs[i] = Float<T>::load(dy, base + i);
    ps[i] = Float<T>::load(y, base + i);
  }
  __syncthreads();
  auto g = [&](int64_t i) { return gs[i]; };
  auto p = [&](int64_t i) { return ps[i]; };
  const float d = blockLanes(
      [&](int l) { return runtime::portable::laneDot(g, p, n, len, l); },
      [&](const float *all) {
        return runtime::portable::finishDot(all, g, p, n, len);
      },
      lanes, &dot);
  PC_UNROLL_BY(8)
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    Float<T>::store(out, base + i,
                    i < n ? runtime::portable::softmaxGradOf(gs[i], ps[i], d)
                          : 0.0f);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmaxKernel(const T *x, T *y, int64_t len, int64_t q, bool log,
                  bool causal) {
  extern __shared__ float row[];
  __shared__ float part[kThreads / 32];
  __shared__ float result;
  const int64_t o = blockIdx.x, base = o * len;
  const int64_t n = causal && o % q + 1 < len ? o % q + 1 : len;
  stageRow(x, base, n, row);
  float mx = -INFINITY;
  PC_UNROLL_BY(8)
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    mx = runtime::portable::maxOf(mx, row[i]);
  mx = blockReduce(
      mx, [](float a, float b) { return runtime::portable::maxOf(a, b); }, part,
      &result);
  float sum = 0;
  PC_UNROLL_BY(8)
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    sum += std::exp(row[i] - mx);
  sum = blockReduce(
      sum, [](float a, float b) { return a + b; }, part, &result);
  const float lse = mx + std::log(sum);
  PC_UNROLL_BY(8)
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    Float<T>::store(
        y, base + i,
        i < n ? runtime::portable::softmaxOf(row[i], mx, sum, lse, log)
              : (log ? -INFINITY : 0.0f));
}

/// A row's cross entropy: its maximum and its sum of exponentials (in
/// double) as block reductions over the row read twice from global memory
/// (a vocabulary's row outgrows shared memory), then Math.h's formula.
template <typename T, typename Id>
__global__ void __launch_bounds__(kThreads)
    crossEntropyKernel(const T *logits, const Id *labels, T *out,
                       int64_t classes, int64_t *firstBad) {
  __shared__ float part[kThreads / 32];
  __shared__ float result;
  __shared__ double dpart[kThreads / 32];
  __shared__ double dresult;
  const int64_t i = blockIdx.x;
  const int64_t label = static_cast<int64_t>(labels[i]);
  if (label < 0 || label >= classes) { // the whole block's branch
    if (threadIdx.x == 0) {
      atomicMin(reinterpret_cast<long long *>(firstBad),
                static_cast<long long>(i));
      Float<T>::store(out, i, NAN);
    }
    return;
  }
  const T *row = logits + i * classes;
  float mx = -INFINITY;
  PC_UNROLL_BY(8)
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
    mx = runtime::portable::maxOf(mx, Float<T>::load(row, c));
  mx = blockReduce(
      mx, [](float a, float b) { return runtime::portable::maxOf(a, b); }, part,
      &result);
  double sum = 0;
  PC_UNROLL_BY(8)
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
    sum += std::exp(Float<T>::load(row, c) - mx);
  sum = blockReduce(
      sum, [](double a, double b) { return a + b; }, dpart, &dresult);
  if (threadIdx.x == 0)
    Float<T>::store(
        out, i,
        runtime::portable::crossEntropyOf(mx, sum, Float<T>::load(row, label)));
}

} // namespace

bool crossEntropyRows(void *stream, Elem t, bool wideIds, const void *logits,
                      const void *labels, void *out, int64_t rows,
                      int64_t classes, int64_t *firstBad) {
  if (rows <= 0 || rows > INT_MAX || classes <= 0)
    return false;
  onFloat(t, [&](auto z) {
    using T = decltype(z);
    auto launch = [&](auto *ids) {
      crossEntropyKernel<<<static_cast<unsigned>(rows), kThreads, 0,
                           static_cast<cudaStream_t>(stream)>>>(
          static_cast<const T *>(logits), ids, static_cast<T *>(out), classes,
          firstBad);
    };
    if (wideIds)
      launch(static_cast<const int64_t *>(labels));
    else
      launch(static_cast<const int32_t *>(labels));
  });
  launched("cross entropy kernel");
  return true;
}

bool normalizeRows(void *stream, Elem t, const void *in, const void *gamma,
                   const void *beta, void *out, int64_t rows, int64_t width,
                   float epsilon, bool rms) {
  if (!fits(rows, width))
    return false;
  onFloat(t, [&](auto z) {
    using T = decltype(z);
    normalizeKernel<T>
        <<<static_cast<unsigned>(rows), kThreads, width * sizeof(float),
           static_cast<cudaStream_t>(stream)>>>(
            static_cast<const T *>(in), static_cast<const T *>(gamma),
            static_cast<const T *>(beta), static_cast<T *>(out), width, epsilon,
            rms);
  });
  launched("layer/RMS norm kernel");
  return true;
}

bool rowStatsRows(void *stream, Elem t, const void *x, RowStats *stats,
                  int64_t rows, int64_t width, float epsilon) {
  if (!fits(rows, width))
    return false;
  onFloat(t, [&](auto z) {
    using T = decltype(z);
    rowStatsKernel<T>
        <<<static_cast<unsigned>(rows), kThreads, width * sizeof(float),
           static_cast<cudaStream_t>(stream)>>>(static_cast<const T *>(x),
                                                stats, width, epsilon);
  });
  launched("layer norm statistics kernel");
  return true;
}

bool layerNormGradRows(void *stream, Elem t, const void *dy, const void *x,
                       const void *gamma, void *out, int64_t rows,
                       int64_t width, float epsilon) {
  if (!fits(rows, 2 * width)) // x and g staged
    return false;
  onFloat(t, [&](auto z) {
    using T = decltype(z);
    layerNormGradKernel<T>
        <<<static_cast<unsigned>(rows), kThreads, 2 * width * sizeof(float),
           static_cast<cudaStream_t>(stream)>>>(
            static_cast<const T *>(dy), static_cast<const T *>(x),
            static_cast<const T *>(gamma), static_cast<T *>(out), width,
            epsilon);
  });
  launched("layer norm gradient kernel");
  return true;
}

bool softmaxGradRows(void *stream, Elem t, const void *dy, const void *y,
                     void *out, int64_t rows, int64_t len, bool causal,
                     int64_t q) {
  if (!fits(rows, 2 * len) || (causal && q < 1)) // dy and y staged
    return false;
  onFloat(t, [&](auto z) {
    using T = decltype(z);
    softmaxGradKernel<T>
        <<<static_cast<unsigned>(rows), kThreads, 2 * len * sizeof(float),
           static_cast<cudaStream_t>(stream)>>>(
            static_cast<const T *>(dy), static_cast<const T *>(y),
            static_cast<T *>(out), len, q, causal);
  });
  launched("softmax gradient kernel");
  return true;
}

bool softmaxRows(void *stream, Elem t, const void *in, void *out, int64_t rows,
                 int64_t len, bool log, bool causal, int64_t q) {
  if (!fits(rows, len) || (causal && q < 1))
    return false;
  onFloat(t, [&](auto z) {
    using T = decltype(z);
    softmaxKernel<T>
        <<<static_cast<unsigned>(rows), kThreads, len * sizeof(float),
           static_cast<cudaStream_t>(stream)>>>(static_cast<const T *>(in),
                                                static_cast<T *>(out), len, q,
                                                log, causal);
  });
  launched("softmax kernel");
  return true;
}

} // namespace pc::cuda

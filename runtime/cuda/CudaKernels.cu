//===- CudaKernels.cu - The device kernels on CUDA streams ----------------===//
//
// The same source as the host build (HostKernels.cpp): each kernel is one
// Thrust algorithm queued on the launch's stream without synchronizing
// (par_nosync), its temporaries from the call's scratch. Compiled with
// --fmad=false, so that no multiply-add is contracted that the host build
// and the CPU backend do not contract either: where the math functions
// agree, the bits do.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CublasMatmul.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/RowKernels.h"
#include "runtime/kernels/portable/ThrustKernels.inl"

#include <thrust/system/cuda/execution_policy.h>

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace pc::runtime::portable {
namespace {

void check(cudaError_t error, const char *what) {
  if (error != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " +
                             cudaGetErrorString(error));
}

struct CudaPolicy {
  static cudaStream_t stream(const Launch &l) {
    return static_cast<cudaStream_t>(l.stream);
  }
  static auto on(const Launch &l) {
    return thrust::cuda::par_nosync.on(stream(l));
  }
  template <typename Alloc> static auto on(const Launch &l, Alloc &alloc) {
    return thrust::cuda::par_nosync(alloc).on(stream(l));
  }
  /// A stable sort of `values` by `keys`: CUB's radix sort.
  template <typename Alloc>
  static void sortByKey(const Launch &l, Alloc &alloc, int64_t *keys, int64_t n,
                        int64_t *values) {
    thrust::stable_sort_by_key(on(l, alloc), keys, keys + n, values);
  }
  static void copy(void *dst, const void *src, size_t bytes, const Launch &l) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream(l)),
          "cudaMemcpyAsync");
  }
  static void fromHost(void *dst, const void *src, size_t bytes) {
    // On the legacy stream, waited for: the DMA from a pageable buffer may
    // still run when the copy call returns.
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, nullptr),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  }
  static void zero(void *dst, size_t bytes, const Launch &l) {
    check(cudaMemsetAsync(dst, 0, bytes, stream(l)), "cudaMemsetAsync");
  }
  static void toHost(void *dst, const void *src, size_t bytes,
                     const Launch &l) {
    copy(dst, src, bytes, l);
    check(cudaStreamSynchronize(stream(l)), "cudaStreamSynchronize");
  }
};

class CudaKernels final : public ThrustKernels<CudaPolicy> {
public:
  const char *name() const override { return "cuda"; }

  void matmul(const Launch &l, Elem t, const void *a, const void *b,
              Elem outType, void *out, const MatmulShape &s,
              Scratch &scratch) override {
    matmuls.run(l.stream, t, a, b, outType, out, s, scratch);
  }

  // Rows that fit a block's shared memory run a block per row
  // (RowKernels.h); the rest, the general form's thread per row.
  void normalize(const Launch &l, Elem t, const void *in, const void *gamma,
                 const void *beta, void *out, int64_t rows, int64_t width,
                 float epsilon, bool rms) override {
    if (!cuda::normalizeRows(l.stream, t, in, gamma, beta, out, rows, width,
                             epsilon, rms))
      ThrustKernels::normalize(l, t, in, gamma, beta, out, rows, width, epsilon,
                               rms);
  }

  void layerNormGrad(const Launch &l, Elem t, const void *dy, const void *x,
                     const void *gamma, void *out, int64_t rows, int64_t width,
                     float epsilon) override {
    if (!cuda::layerNormGradRows(l.stream, t, dy, x, gamma, out, rows, width,
                                 epsilon))
      ThrustKernels::layerNormGrad(l, t, dy, x, gamma, out, rows, width,
                                   epsilon);
  }

  void softmaxGrad(const Launch &l, Elem t, const void *dy, const void *y,
                   void *out, int64_t outer, int64_t len, int64_t inner,
                   bool causal, int64_t q) override {
    if (inner != 1 ||
        !cuda::softmaxGradRows(l.stream, t, dy, y, out, outer, len, causal, q))
      ThrustKernels::softmaxGrad(l, t, dy, y, out, outer, len, inner, causal,
                                 q);
  }

  void softmax(const Launch &l, Elem t, const void *in, void *out,
               int64_t outer, int64_t len, int64_t inner, bool log, bool causal,
               int64_t q) override {
    if (inner != 1 ||
        !cuda::softmaxRows(l.stream, t, in, out, outer, len, log, causal, q))
      ThrustKernels::softmax(l, t, in, out, outer, len, inner, log, causal, q);
  }

  BadIndex crossEntropy(const Launch &l, Elem t, Elem idType,
                        const void *logits, const void *labels, int64_t count,
                        int64_t classes, void *out, Scratch &scratch) override {
    int64_t *bad = firstBadSlot(l, scratch);
    if (!cuda::crossEntropyRows(l.stream, t, idType == Elem::I64, logits,
                                labels, out, count, classes, bad))
      return ThrustKernels::crossEntropy(l, t, idType, logits, labels, count,
                                         classes, out, scratch);
    return readBad(l, bad, labels, idType);
  }

protected:
  void layerNormStats(const Launch &l, Elem t, const void *x, RowStats *stats,
                      int64_t rows, int64_t width, float epsilon) override {
    if (!cuda::rowStatsRows(l.stream, t, x, stats, rows, width, epsilon))
      ThrustKernels::layerNormStats(l, t, x, stats, rows, width, epsilon);
  }

private:
  cuda::CublasMatmul matmuls;
};

} // namespace
} // namespace pc::runtime::portable

namespace pc::cuda {
std::unique_ptr<runtime::portable::DeviceKernels> makeCudaKernels() {
  return std::make_unique<runtime::portable::CudaKernels>();
}
} // namespace pc::cuda

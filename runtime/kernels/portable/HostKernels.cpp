//===- HostKernels.cpp - The device kernels on Thrust's host system -------===//
//
// The CUDA backend's kernels (ThrustKernels.inl), compiled by g++ for
// Thrust's CPP system: the same functors and algorithms, run in order on
// the calling thread. CPU devices run them under `--kernels portable`, and
// the unit tests compare them with the CPU backend, so that the GPU
// kernels' logic runs in CI, where there is no GPU. The matrix product is
// OpenBLAS's, as the CUDA build's is cuBLASLt's.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/portable/ThrustKernels.inl"

#include <thrust/system/cpp/execution_policy.h>

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace pc::runtime::portable {
namespace {

struct HostPolicy {
  static auto on(const Launch &) { return thrust::cpp::par; }
  template <typename Alloc> static auto on(const Launch &, Alloc &alloc) {
    return thrust::cpp::par(alloc);
  }
  /// A stable sort of `values` by `keys`. Thrust's sequential radix sort
  /// (what the CPP system takes for integer keys) upcasts a null policy,
  /// which UBSan reports; a comparison sort with the same order does not.
  template <typename Alloc>
  static void sortByKey(const Launch &l, Alloc &alloc, int64_t *keys, int64_t n,
                        int64_t *values) {
    thrust::stable_sort_by_key(on(l, alloc), keys, keys + n, values,
                               [](int64_t a, int64_t b) { return a < b; });
  }
  static void toHost(void *dst, const void *src, size_t bytes, const Launch &) {
    std::memcpy(dst, src, bytes);
  }
  static void copy(void *dst, const void *src, size_t bytes, const Launch &) {
    std::memcpy(dst, src, bytes);
  }
  static void fromHost(void *dst, const void *src, size_t bytes) {
    std::memcpy(dst, src, bytes);
  }
  static void zero(void *dst, size_t bytes, const Launch &) {
    std::memset(dst, 0, bytes);
  }
};

/// `count` values of float type `t` at `p`, widened into `wide`.
const float *widened(Elem t, const void *p, int64_t count,
                     std::vector<float> &wide) {
  if (t == Elem::F32)
    return static_cast<const float *>(p);
  wide.resize(count);
  for (int64_t i = 0; i < count; ++i)
    wide[i] = static_cast<float>(loadAny(t, p, i));
  return wide.data();
}

class HostKernels final : public ThrustKernels<HostPolicy> {
public:
  const char *name() const override { return "host"; }

  void matmul(const Launch &, Elem t, const void *a, const void *b,
              Elem outType, void *out, const MatmulShape &s,
              Scratch &) override {
    const int64_t m = s.m, n = s.n, k = s.k;
    const int64_t aMat = m * k, bMat = k * n, oMat = m * n;
    std::vector<float> wa, wb, wo;
    for (int64_t i = 0; i < s.batches; ++i) {
      if (oMat == 0)
        continue;
      float *o = outType == Elem::F32 ? static_cast<float *>(out) + i * oMat
                                      : (wo.resize(oMat), wo.data());
      if (k == 0) {
        std::fill(o, o + oMat, 0.0f);
      } else {
        const float *pa = widened(t,
                                  static_cast<const char *>(a) +
                                      s.batchA.offset(i) * aMat * bytesOf(t),
                                  aMat, wa);
        const float *pb = widened(t,
                                  static_cast<const char *>(b) +
                                      s.batchB.offset(i) * bMat * bytesOf(t),
                                  bMat, wb);
        cblas_sgemm(CblasRowMajor, s.transposeA ? CblasTrans : CblasNoTrans,
                    s.transposeB ? CblasTrans : CblasNoTrans, m, n, k, s.alpha,
                    pa, s.transposeA ? m : k, pb, s.transposeB ? k : n, 0.0f, o,
                    n);
      }
      if (outType != Elem::F32)
        for (int64_t j = 0; j < oMat; ++j)
          storeAny(outType, out, i * oMat + j, o[j]);
    }
  }
};

} // namespace

std::unique_ptr<DeviceKernels> makeHostKernels() {
  return std::make_unique<HostKernels>();
}

} // namespace pc::runtime::portable

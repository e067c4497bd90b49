//===- DeviceKernels.h - The kernels of a device, device-neutral -*- C++
//-*-===//
//
// The compute kernels of the GPU backend, behind one interface with two
// builds of the same source (ThrustKernels.inl): nvcc's, on CUDA streams
// (runtime/cuda), and g++'s on Thrust's host system (HostKernels.cpp), which
// runs on CPU devices (`pc-run --kernels portable`) and in CI, so that the
// kernels' logic is tested against the CPU backend on machines without a
// GPU. Binding ops to them is runtime/exec/PortableKernels.cpp.
//
// Every pointer is in the device's memory; calls are queued on the launch's
// stream and return before they run, except those that return a value,
// which wait for it. Float kernels take f32, f16 and bf16 storage, load
// each value into f32, compute in f32 and round once when they store.
// The interface is plain C++ (no Thrust, no absl), so that both compilers
// read it.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_KERNELS_PORTABLE_DEVICEKERNELS_H
#define PC_RUNTIME_KERNELS_PORTABLE_DEVICEKERNELS_H

#include "runtime/kernels/portable/Math.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace pc::runtime::portable {

/// Element types, in runtime::CommType's order (checked where they meet).
enum class Elem : uint8_t { F32, F64, I32, I64, F16, BF16, U8 };

inline int64_t bytesOf(Elem e) {
  switch (e) {
  case Elem::F64:
  case Elem::I64:
    return 8;
  case Elem::F32:
  case Elem::I32:
    return 4;
  case Elem::F16:
  case Elem::BF16:
    return 2;
  case Elem::U8:
    return 1;
  }
  return 1;
}

/// Calls fn(T{}) with T the storage of float type `t` (f32 for any other).
template <typename Fn> void onFloat(Elem t, Fn fn) {
  switch (t) {
  case Elem::F16:
    return fn(F16{});
  case Elem::BF16:
    return fn(BF16{});
  default:
    return fn(float{});
  }
}

/// Where a call runs: the backend's stream (a cudaStream_t on CUDA; unused
/// on the host).
struct Launch {
  void *stream = nullptr;
};

/// Device memory that a kernel needs for the duration of one call.
class Scratch {
public:
  virtual ~Scratch() = default;
  /// `bytes` of device memory, aligned to 256, valid until the call
  /// returns (on a stream, until the work it queued has run).
  virtual void *get(size_t bytes) = 0;
};

/// An id or label outside its range: the first position (in element order)
/// and its value; position -1 when all were inside.
struct BadIndex {
  int64_t position = -1;
  int64_t value = 0;
};

/// A batched matrix product out = alpha · op(a) · op(b) of m x k and k x n
/// matrices (row-major; op transposes the stored matrix when asked).
struct MatmulShape {
  int64_t m = 0, n = 0, k = 0;
  bool transposeA = false, transposeB = false;
  /// The output's batch dims, and in units of whole matrices, each
  /// operand's stride over them (0 where it is broadcast).
  Index batchA, batchB;
  int64_t batches = 1;
  float alpha = 1.0f;
};

class DeviceKernels {
public:
  virtual ~DeviceKernels() = default;
  /// "cuda", "host".
  virtual const char *name() const = 0;

  /// `bytes` from `src` to `dst`, either in device or host memory, queued.
  virtual void copy(const Launch &l, void *dst, const void *src,
                    size_t bytes) = 0;
  /// `bytes` from device memory to the host, waited for.
  virtual void toHost(const Launch &l, void *dst, const void *src,
                      size_t bytes) = 0;
  /// `bytes` from the host to device memory, complete on return (for
  /// what binding makes once: constants, offsets).
  virtual void fromHost(void *dst, const void *src, size_t bytes) = 0;
  /// Zeros `bytes` at `dst`, queued.
  virtual void zero(const Launch &l, void *dst, size_t bytes) = 0;

  /// out[i] = op(in[i]) over `n` elements of a float type, or of i32/i64
  /// for Neg and Relu.
  virtual void unary(const Launch &l, UnaryOp op, Elem t, const void *in,
                     void *out, int64_t n) = 0;
  /// out[i] = a[ia(i)] op b[ib(i)]: NumPy broadcasting through the
  /// operands' indexes over out's `n` elements; float types or i32/i64.
  virtual void binary(const Launch &l, BinaryOp op, Elem t, const void *a,
                      const Index &ia, const void *b, const Index &ib,
                      void *out, int64_t n) = 0;
  /// 1 where a[ia(i)] op b[ib(i)] holds, else 0, in out's float type.
  virtual void compare(const Launch &l, CompareOp op, Elem t, const void *a,
                       const Index &ia, const void *b, const Index &ib,
                       void *out, int64_t n) = 0;
  virtual void geluGrad(const Launch &l, Elem t, const void *dy, const void *x,
                        void *out, int64_t n, bool approximate) = 0;
  /// Softmax (or log-softmax) over the middle dim of [outer, len, inner].
  /// `causal` (inner == 1): row r of each q x len matrix sees its first
  /// min(len, r % q + 1) entries; the rest are 0 (-infinity for log).
  virtual void softmax(const Launch &l, Elem t, const void *in, void *out,
                       int64_t outer, int64_t len, int64_t inner, bool log,
                       bool causal, int64_t q) = 0;
  /// The softmax's gradient through its output y, in the same layout.
  virtual void softmaxGrad(const Launch &l, Elem t, const void *dy,
                           const void *y, void *out, int64_t outer, int64_t len,
                           int64_t inner, bool causal, int64_t q) = 0;
  /// Layer norm (or RMS norm, `beta` null) of `rows` rows of `width`.
  virtual void normalize(const Launch &l, Elem t, const void *in,
                         const void *gamma, const void *beta, void *out,
                         int64_t rows, int64_t width, float epsilon,
                         bool rms) = 0;
  virtual void layerNormGrad(const Launch &l, Elem t, const void *dy,
                             const void *x, const void *gamma, void *out,
                             int64_t rows, int64_t width, float epsilon) = 0;
  /// Σ_rows dy · x̂ into `width` values, rows summed in Math.h's reduction
  /// order.
  virtual void layerNormScaleGrad(const Launch &l, Elem t, const void *dy,
                                  const void *x, void *out, int64_t rows,
                                  int64_t width, float epsilon,
                                  Scratch &scratch) = 0;
  /// Each of out's `n` elements reduces the input elements at
  /// kept(i) + reduced(j) for j over the reduced positions in row-major
  /// order, the last `width` of them contiguous when `width` > 1 (the last
  /// dim reduced), in Math.h's reduction order. Floats, or i32/i64 for Sum
  /// and Max.
  virtual void reduce(const Launch &l, Reduction op, Elem t, const void *in,
                      const Index &kept, const Index &reduced, int64_t width,
                      int64_t count, void *out, int64_t n,
                      Scratch &scratch) = 0;
  /// out[outBase + dst(i)] = in[inBase + src(i)] for `n` elements of
  /// `elementBytes`: transposes, broadcasts, slices and concatenations.
  virtual void copyIndexed(const Launch &l, int64_t elementBytes,
                           const void *in, int64_t inBase, const Index &src,
                           void *out, int64_t outBase, const Index &dst,
                           int64_t n) = 0;
  /// Between any two element types (float to int truncates; through
  /// double, like the CPU backend).
  virtual void convert(const Launch &l, Elem from, const void *in, Elem to,
                       void *out, int64_t n) = 0;
  /// Rows of `table` ([rows, width], a float type) by id; ids outside give
  /// zero rows with `zeroOutOfRange`, else the first is returned (the call
  /// then waits for the kernel).
  virtual BadIndex embedding(const Launch &l, Elem t, Elem idType,
                             const void *ids, int64_t count, const void *table,
                             int64_t rows, int64_t width, bool zeroOutOfRange,
                             void *out, Scratch &scratch) = 0;
  /// Rows of `grad` summed into `out` ([rows, width]) by id, in the ids'
  /// order of appearance; ids outside add nothing.
  virtual void embeddingGrad(const Launch &l, Elem t, Elem idType,
                             const void *ids, int64_t count, const void *grad,
                             int64_t rows, int64_t width, void *out,
                             Scratch &scratch) = 0;
  virtual void oneHot(const Launch &l, Elem t, Elem idType, const void *labels,
                      int64_t count, int64_t classes, void *out) = 0;
  virtual void pickLabels(const Launch &l, Elem t, Elem idType,
                          const void *values, const void *labels, int64_t count,
                          int64_t classes, void *out) = 0;
  /// Per row: logsumexp(logits) − logits[label], the sum in double. A label
  /// outside is returned (the call waits for the kernel).
  virtual BadIndex crossEntropy(const Launch &l, Elem t, Elem idType,
                                const void *logits, const void *labels,
                                int64_t count, int64_t classes, void *out,
                                Scratch &scratch) = 0;
  /// Entries above each q x k matrix's diagonal become -infinity (0 with
  /// `zero`).
  virtual void causalMask(const Launch &l, Elem t, const void *in, void *out,
                          int64_t rows, int64_t q, int64_t k, bool zero) = 0;
  /// One fused Adam/AdamW step of f32 `w` and its moments; `lr`, `c1`,
  /// `c2` are f32 scalars in device memory.
  virtual void adam(const Launch &l, const float *w, const float *g,
                    const float *m, const float *v, const float *lr,
                    const float *c1, const float *c2, const AdamConstants &k,
                    float *w2, float *m2, float *v2, int64_t n) = 0;
  /// The 8-bit form: moments as codes of blocks of `block` values of each
  /// row of `rowLength`, with one f32 scale per block; `signedMap` and
  /// `unsignedMap` are the 256 values of the codes, in device memory.
  virtual void adam8(const Launch &l, const float *w, const float *g,
                     const uint8_t *mCodes, const float *mScale,
                     const uint8_t *vCodes, const float *vScale,
                     const float *lr, const float *c1, const float *c2,
                     const AdamConstants &k, const float *signedMap,
                     const float *unsignedMap, int64_t n, int64_t rowLength,
                     int64_t block, float *w2, uint8_t *mCodes2, float *mScale2,
                     uint8_t *vCodes2, float *vScale2) = 0;
  /// The batched product, of inputs of type `t` with f32 accumulation,
  /// into `out` of type `outType` (t, or f32).
  virtual void matmul(const Launch &l, Elem t, const void *a, const void *b,
                      Elem outType, void *out, const MatmulShape &shape,
                      Scratch &scratch) = 0;
};

/// The kernels built for the host through Thrust's host system; null when
/// this build has none (no CCCL headers).
std::unique_ptr<DeviceKernels> makeHostKernels();

} // namespace pc::runtime::portable

#endif // PC_RUNTIME_KERNELS_PORTABLE_DEVICEKERNELS_H

//===- Math.h - Per-element and per-row math of the portable kernels -*- C++
//-*-===//
//
// The math of the device kernels, written once as `__host__ __device__`
// functions: nvcc compiles it into the CUDA backend's kernels, g++ into the
// same kernels on Thrust's host system (HostKernels.cpp), which CI runs
// against the CPU backend. Nothing here allocates, throws or calls a
// library beyond <cmath>.
//
// Values are loaded into f32 and stored back once, rounded to nearest
// even: what the CPU backend's widening does for f16 and bf16, so that both
// backends compute the same function. Row sums follow the CPU kernels'
// order (eight lanes, combined in order, then the tail), so that sums whose
// terms are the same give the same bits on both.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_KERNELS_PORTABLE_MATH_H
#define PC_RUNTIME_KERNELS_PORTABLE_MATH_H

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define PC_HD __host__ __device__
#define PC_PRAGMA(x) _Pragma(#x)
/// Unrolls a loop fully (PC_UNROLL) or `n` times (PC_UNROLL_BY) on the
/// GPU, where a loop's next load issues only once the last one's use has.
#define PC_UNROLL _Pragma("unroll")
#define PC_UNROLL_BY(n) PC_PRAGMA(unroll n)
#else
#define PC_HD
#define PC_UNROLL
#define PC_UNROLL_BY(n)
#endif

namespace pc::runtime::portable {

/// Storage of the 16-bit float types: their bits.
struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

PC_HD inline uint32_t bitsOf(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
#endif
}
PC_HD inline float floatOf(uint32_t w) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(w);
#else
  float f;
  std::memcpy(&f, &w, 4);
  return f;
#endif
}

/// IEEE half to f32 (exact).
PC_HD inline float toFloat(F16 h) {
  uint32_t sign = uint32_t(h.bits & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1fu, man = h.bits & 0x3ffu;
  if (exp == 0x1f)
    return floatOf(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    // Zero or subnormal: man · 2^-24, exact in f32.
    float f = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  return floatOf(sign | ((exp + 112) << 23) | (man << 13));
}

/// f32 to IEEE half, to nearest even; NaNs stay (quiet) NaNs.
PC_HD inline F16 toF16(float f) {
  uint32_t x = bitsOf(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) // Infinity or NaN.
    return {static_cast<uint16_t>(sign | 0x7c00u |
                                  (x > 0x7f800000u ? 0x200u : 0u))};
  if (x >= 0x477ff000u) // 65520 and above round to infinity.
    return {static_cast<uint16_t>(sign | 0x7c00u)};
  if (x < 0x38800000u) {
    // Below 2^-14: a subnormal half. Adding 0.5 puts the value's units of
    // 2^-24 in the mantissa's low bits, rounded to nearest even by the
    // addition itself.
    float sum = floatOf(x) + 0.5f;
    return {static_cast<uint16_t>(sign | (bitsOf(sum) - 0x3f000000u))};
  }
  x += 0xfffu + ((x >> 13) & 1u);
  return {static_cast<uint16_t>(sign | ((x - 0x38000000u) >> 13))};
}

PC_HD inline float toFloat(BF16 h) { return floatOf(uint32_t(h.bits) << 16); }

PC_HD inline BF16 toBF16(float f) {
  uint32_t w = bitsOf(f);
  if ((w & 0x7f800000u) == 0x7f800000u && (w & 0x7fffffu))
    return {static_cast<uint16_t>((w >> 16) | 0x40u)};
  w += 0x7fffu + ((w >> 16) & 1u);
  return {static_cast<uint16_t>(w >> 16)};
}

PC_HD inline float toFloat(float f) { return f; }

/// Loads element `i` of a float tensor of storage T into f32, and stores.
template <typename T> struct Float;
template <> struct Float<float> {
  PC_HD static float load(const float *p, int64_t i) { return p[i]; }
  PC_HD static void store(float *p, int64_t i, float v) { p[i] = v; }
};
template <> struct Float<F16> {
  PC_HD static float load(const F16 *p, int64_t i) { return toFloat(p[i]); }
  PC_HD static void store(F16 *p, int64_t i, float v) { p[i] = toF16(v); }
};
template <> struct Float<BF16> {
  PC_HD static float load(const BF16 *p, int64_t i) { return toFloat(p[i]); }
  PC_HD static void store(BF16 *p, int64_t i, float v) { p[i] = toBF16(v); }
};

/// The most dims a kernel's broadcasting index math takes.
inline constexpr int kMaxRank = 8;

/// A row-major shape, and an operand's strides over it (0 where it is
/// broadcast), by value so that a functor carries it to the device.
struct Index {
  int32_t rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};

  /// The operand's offset of element `i` of the shape. The loop is
  /// unrolled over kMaxRank so that every array index is a constant: a
  /// dynamic one would put the arrays, and so the whole functor, in each
  /// GPU thread's local memory.
  PC_HD int64_t offset(int64_t i) const {
    int64_t off = 0;
    PC_UNROLL
    for (int32_t d = kMaxRank - 1; d >= 0; --d) {
      if (d >= rank)
        continue;
      int64_t s = size[d];
      off += (i % s) * stride[d];
      i /= s;
    }
    return off;
  }
};

enum class UnaryOp : uint8_t {
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
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div };
/// The IR's order (pc.compare's predicate).
enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };
enum class Reduction : uint8_t { Sum, Mean, Max };

/// sqrt(2 / pi) and the cubic coefficient of the tanh form of GELU.
inline constexpr float kGeluK = 0.7978845608028654f;
inline constexpr float kGeluC = 0.044715f;

PC_HD inline float unaryOf(UnaryOp op, float v) {
  switch (op) {
  case UnaryOp::Neg:
    return -v;
  case UnaryOp::Exp:
    return std::exp(v);
  case UnaryOp::Log:
    return std::log(v);
  case UnaryOp::Tanh:
    return std::tanh(v);
  case UnaryOp::Relu:
    return v > 0 ? v : 0.0f;
  case UnaryOp::Sigmoid:
    return 1.0f / (1.0f + std::exp(-v));
  case UnaryOp::Gelu:
    return 0.5f * v * (1.0f + std::erf(v / std::sqrt(2.0f)));
  case UnaryOp::GeluTanh:
    return 0.5f * v * (1.0f + std::tanh(kGeluK * (v + kGeluC * v * v * v)));
  case UnaryOp::Sqrt:
    return std::sqrt(v);
  case UnaryOp::Erf:
    return std::erf(v);
  }
  return v;
}

/// d gelu(x) / dx · dy, exact or in the tanh form.
PC_HD inline float geluGradOf(float dy, float x, bool approximate) {
  if (!approximate)
    return dy * (0.5f * (1.0f + std::erf(x * 0.7071067811865476f)) +
                 x * std::exp(-0.5f * x * x) * 0.3989422804014327f);
  float t = std::tanh(kGeluK * (x + kGeluC * x * x * x));
  return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluK *
                                       (1.0f + 3.0f * kGeluC * x * x));
}

PC_HD inline float binaryOf(BinaryOp op, float a, float b) {
  switch (op) {
  case BinaryOp::Add:
    return a + b;
  case BinaryOp::Sub:
    return a - b;
  case BinaryOp::Mul:
    return a * b;
  case BinaryOp::Div:
    return a / b;
  }
  return a;
}

/// Integer arithmetic in 64-bit two's complement, wrapping; division
/// truncates, by zero it is 0 (the CPU backend's rules).
PC_HD inline int64_t binaryOf(BinaryOp op, int64_t a, int64_t b) {
  uint64_t x = static_cast<uint64_t>(a), y = static_cast<uint64_t>(b);
  switch (op) {
  case BinaryOp::Add:
    return static_cast<int64_t>(x + y);
  case BinaryOp::Sub:
    return static_cast<int64_t>(x - y);
  case BinaryOp::Mul:
    return static_cast<int64_t>(x * y);
  case BinaryOp::Div:
    return b == 0 ? 0 : b == -1 ? static_cast<int64_t>(0 - x) : a / b;
  }
  return a;
}

PC_HD inline bool compareOf(CompareOp op, float a, float b) {
  switch (op) {
  case CompareOp::Eq:
    return a == b;
  case CompareOp::Ne:
    return a != b;
  case CompareOp::Lt:
    return a < b;
  case CompareOp::Le:
    return a <= b;
  case CompareOp::Gt:
    return a > b;
  case CompareOp::Ge:
    return a >= b;
  }
  return false;
}

/// std::max's rule (the first unless the second is greater), which passes
/// over a NaN in the second place, as the CPU kernels do.
PC_HD inline float maxOf(float a, float b) { return a < b ? b : a; }

/// Eight lanes, as the CPU kernels' vector sums keep them.
inline constexpr int kLanes = 8;

/// The order of pc.reduce_sum/mean/max and the layer norm's scale gradient
/// over floats, on every backend, chosen so that a GPU can reduce in
/// parallel and still give the CPU's bits:
/// - where the last dim is kept (or reduced and of size 1), each output's
///   terms (one per reduced position, in row-major order) go in chunks of
///   kReduceChunk: each chunk reduced in order from the identity, then the
///   chunks' results in order;
/// - where the last dim is reduced and longer than 1, each reduced row goes
///   in pieces of at most kRowPiece (each over eight lanes, rowSum/rowMax),
///   and the pieces' results are reduced in order, row after row.
/// Up to kReduceChunk terms and rows up to kRowPiece long, this is the plain
/// sequential order, to the bit.
inline constexpr int64_t kReduceChunk = 64;
inline constexpr int64_t kRowPiece = 1024;

/// How many groups of at most `size` the `n` terms make.
PC_HD inline int64_t groupsOf(int64_t n, int64_t size) {
  return (n + size - 1) / size;
}

/// The sum of `n` f32 values read through `at(i)`: eight lane sums, then
/// the lanes in order, then the tail (cpu::rowSum's order and bits).
template <typename At> PC_HD float rowSum(At at, int64_t n) {
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lanes[l] += at(i + l);
  float sum = 0;
  for (int l = 0; l < kLanes; ++l)
    sum += lanes[l];
  for (; i < n; ++i)
    sum += at(i);
  return sum;
}

/// The maximum of `n` values (-infinity when empty), over eight lanes
/// (cpu::rowMax's rule).
template <typename At> PC_HD float rowMax(At at, int64_t n) {
  float lanes[kLanes];
  for (int l = 0; l < kLanes; ++l)
    lanes[l] = -INFINITY;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      float v = at(i + l);
      lanes[l] = v > lanes[l] ? v : lanes[l];
    }
  float mx = lanes[0];
  for (int l = 1; l < kLanes; ++l)
    mx = maxOf(mx, lanes[l]);
  for (; i < n; ++i)
    mx = maxOf(mx, at(i));
  return mx;
}

/// A row's cross entropy from its maximum, its sum of exp(x − max) (in
/// double) and the label's logit: logsumexp − logit, in double, then
/// rounded once (cpu::crossEntropy's).
PC_HD inline float crossEntropyOf(float mx, double sum, float picked) {
  return static_cast<float>(mx + std::log(sum) - picked);
}

/// x̂ = (x − shift) · scale for one row of a layer or RMS norm: sums in
/// double over eight lanes (cpu::rowStats's order and bits).
struct RowStats {
  float shift, scale;
};

/// Two sums in double over a row (Σx and Σx²; Σg and Σg·x̂), kept in
/// eight lanes as the CPU's vector sums keep them.
struct Sums {
  double a, b;
};

/// Lane `l` of a row's sums of `term(i)`, over the elements l, l + 8, ...
/// of the whole eight-element groups. Each lane is its own chain, so that
/// lanes computed apart (the CUDA backend's threads) give the bits of
/// lanes computed together.
template <typename Term> PC_HD Sums laneSums(Term term, int64_t n, int l) {
  Sums s = {0, 0};
  PC_UNROLL_BY(8)
  for (int64_t i = l; i + (kLanes - l) <= n; i += kLanes) {
    Sums t = term(i);
    s.a += t.a;
    s.b += t.b;
  }
  return s;
}

/// The row's sums from its lanes': the lanes in order, then the tail past
/// the last whole group.
template <typename Term>
PC_HD Sums finishSums(const Sums *lanes, Term term, int64_t n) {
  Sums s = {0, 0};
  for (int l = 0; l < kLanes; ++l) {
    s.a += lanes[l].a;
    s.b += lanes[l].b;
  }
  for (int64_t i = n / kLanes * kLanes; i < n; ++i) {
    Sums t = term(i);
    s.a += t.a;
    s.b += t.b;
  }
  return s;
}

template <typename Term> PC_HD Sums rowSums(Term term, int64_t n) {
  Sums lanes[kLanes];
  for (int l = 0; l < kLanes; ++l)
    lanes[l] = laneSums(term, n, l);
  return finishSums(lanes, term, n);
}

/// A norm's terms: x and x², in double.
template <typename At> PC_HD auto momentsOf(At at) {
  return [at](int64_t i) {
    double v = at(i);
    return Sums{v, v * v};
  };
}

/// The row's x̂ from Σx and Σx² (cpu::rowStats's bits).
PC_HD inline RowStats statsOf(Sums m, int64_t n, double epsilon, bool rms) {
  double mean = m.a / n;
  double var = m.b / n - (rms ? 0 : mean * mean);
  return {rms ? 0.0f : static_cast<float>(mean),
          static_cast<float>(1 / std::sqrt(var + epsilon))};
}

template <typename At>
PC_HD RowStats rowStats(At at, int64_t n, double epsilon, bool rms) {
  return statsOf(rowSums(momentsOf(at), n), n, epsilon, rms);
}

/// x̂ of one element: (x − shift) · scale.
PC_HD inline float xhatOf(float x, RowStats s) {
  return (x - s.shift) * s.scale;
}

/// A layer norm gradient's terms: g and g·x̂ in double (g = dy · gamma),
/// whose means it takes (cpu::layerNormGrad's order, as the moments').
template <typename G, typename X> PC_HD auto gradTermsOf(G g, X xhat) {
  return [g, xhat](int64_t i) {
    float gv = g(i);
    return Sums{double(gv), double(gv) * double(xhat(i))};
  };
}

/// mean(g) and mean(g·x̂) of a row, from their sums.
struct GradMeans {
  float g, gx;
};
PC_HD inline GradMeans gradMeansOf(Sums s, int64_t n) {
  return {static_cast<float>(s.a / n), static_cast<float>(s.b / n)};
}

/// One input gradient of a layer norm: scale · (g − mean(g) − x̂ ·
/// mean(g·x̂)).
PC_HD inline float layerNormGradOf(float g, float xhat, RowStats s,
                                   GradMeans m) {
  return s.scale * (g - m.g - xhat * m.gx);
}

/// Lane `l` of a softmax gradient's dot product Σ dy·y over a row of `len`
/// whose first `n` entries count (a causal row ends at its diagonal): the
/// whole eight-element groups before min(n, the row's last whole group),
/// then the one partial group a causal row ends in, each lane its own
/// chain (cpu::softmaxGrad's lanes: they keep the full row's split, so
/// that zeros past the diagonal give the full form's bits).
template <typename G, typename P>
PC_HD float laneDot(G g, P p, int64_t n, int64_t len, int l) {
  const int64_t full = len / kLanes * kLanes, end = n < full ? n : full;
  float lane = 0;
  int64_t i = l;
  PC_UNROLL_BY(8)
  for (; i + (kLanes - l) <= end; i += kLanes)
    lane += g(i) * p(i);
  // i - l is now the first group past `end`: the partial one, if any.
  if (i - l < n && i - l < full && i < n)
    lane += g(i) * p(i);
  return lane;
}

/// The dot product from its lanes: the lanes in order, then the entries
/// past the row's last whole group.
template <typename G, typename P>
PC_HD float finishDot(const float *lanes, G g, P p, int64_t n, int64_t len) {
  const int64_t full = len / kLanes * kLanes;
  float dot = 0;
  for (int l = 0; l < kLanes; ++l)
    dot += lanes[l];
  for (int64_t i = n < full ? n : full; i < n; ++i)
    dot += g(i) * p(i);
  return dot;
}

/// One input gradient of a softmax: y · (dy − Σ dy·y).
PC_HD inline float softmaxGradOf(float g, float p, float dot) {
  return p * (g - dot);
}

/// One output of a layer or RMS norm: x̂ · gamma + beta (beta 0 for RMS).
PC_HD inline float normalizedOf(float x, RowStats s, float gamma, float beta) {
  float v = (x - s.shift) * s.scale * gamma;
  return v + beta;
}

/// One output of a softmax (or log-softmax) whose row has maximum `mx`,
/// Σ exp(x − mx) `sum` and log-sum-exp `lse`.
PC_HD inline float softmaxOf(float x, float mx, float sum, float lse,
                             bool log) {
  return log ? x - lse : std::exp(x - mx) / sum;
}

/// Adam's constants, as the f32 values its elementwise form multiplies by.
struct AdamConstants {
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2, epsilon, weightDecay;
};

/// One Adam/AdamW step of one element, in the elementwise form's order
/// (cpu::adamUpdate's bits): the new moments in `m`, `v`; returns the new
/// weight.
PC_HD inline float adamStep(float w, float g, float &m, float &v, float lr,
                            float c1, float c2, const AdamConstants &k) {
  m = m * k.beta1 + g * k.oneMinusBeta1;
  v = v * k.beta2 + (g * g) * k.oneMinusBeta2;
  float step = (m / c1) / (std::sqrt(v / c2) + k.epsilon);
  if (k.weightDecay != 0.0f)
    step = step + w * k.weightDecay;
  return w - lr * step;
}

/// The code of `x` in an ascending map of 256 values: the nearest, the
/// lower on a tie (cpu::quantize's rule), by binary search.
PC_HD inline uint8_t encode8(const float *map, float x) {
  int lo = 0, hi = 255;
  // The last code whose value is not above x (0 when all are).
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (map[mid] <= x)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo == 255 || x <= map[lo])
    return static_cast<uint8_t>(lo);
  return static_cast<uint8_t>(x - map[lo] <= map[lo + 1] - x ? lo : lo + 1);
}

} // namespace pc::runtime::portable

#endif // PC_RUNTIME_KERNELS_PORTABLE_MATH_H

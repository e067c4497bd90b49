//===- ThrustKernels.inl - The device kernels as Thrust algorithms -*- C++
//-*-===//
//
// One source, two builds: included by HostKernels.cpp (g++, Thrust's host
// system) and by runtime/cuda/CudaKernels.cu (nvcc, CUDA streams), each
// with its `Policy`:
//   static auto on(const Launch &);            the execution policy
//   static auto on(const Launch &, Alloc &);   the same, temporaries from Alloc
//   static void copy(void *, const void *, size_t, const Launch &);
//                                              a copy, queued
//   static void sortByKey(const Launch &, Alloc &, int64_t *keys, int64_t n,
//                         int64_t *values);   a stable sort by key
//   static void toHost(void *, const void *, size_t, const Launch &);
//                                              a copy to the host, waited for
//   static void fromHost(void *, const void *, size_t);
//                                              a copy from the host, done
//   static void zero(void *, size_t, const Launch &);     zeros, queued
// Every kernel is one algorithm over the elements (or rows, or output
// elements) of its call, with its math in Math.h: no launch per element or
// per row. The matrix product is the including backend's (a BLAS).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/portable/DeviceKernels.h"

#include <thrust/binary_search.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include <cstddef>
#include <limits>
#include <type_traits>

namespace pc::runtime::portable {
namespace {

using Counter = thrust::counting_iterator<int64_t>;

/// Runs `fn(i)` for i in [0, n) under `Policy`.
template <typename Policy, typename Fn>
void forEach(const Launch &l, int64_t n, Fn fn) {
  if (n > 0)
    thrust::for_each_n(Policy::on(l), Counter(0), n, fn);
}

/// Integers stored as i32 or i64, computed in 64 bits.
template <typename T> PC_HD int64_t loadInt(const T *p, int64_t i) {
  return static_cast<int64_t>(p[i]);
}
template <typename T> PC_HD void storeInt(T *p, int64_t i, int64_t v) {
  p[i] = static_cast<T>(static_cast<typename std::make_unsigned<T>::type>(v));
}

PC_HD inline int64_t idAt(const void *ids, bool wide, int64_t i) {
  return wide ? static_cast<const int64_t *>(ids)[i]
              : static_cast<const int32_t *>(ids)[i];
}

PC_HD inline void atomicMinI64(int64_t *p, int64_t v) {
#ifdef __CUDA_ARCH__
  atomicMin(reinterpret_cast<long long *>(p), static_cast<long long>(v));
#else
  int64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v < cur && !__atomic_compare_exchange_n(
                        p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
#endif
}

template <typename Fn> void onInt(Elem t, Fn fn) {
  if (t == Elem::I64)
    return fn(int64_t{});
  return fn(int32_t{});
}

bool isInt(Elem t) { return t == Elem::I32 || t == Elem::I64; }

//===-- Elementwise -----------------------------------------------------===//

template <typename T> struct UnaryFloat {
  const T *in;
  T *out;
  UnaryOp op;
  PC_HD void operator()(int64_t i) const {
    Float<T>::store(out, i, unaryOf(op, Float<T>::load(in, i)));
  }
};

template <typename T> struct UnaryInt {
  const T *in;
  T *out;
  bool relu;
  PC_HD void operator()(int64_t i) const {
    int64_t x = loadInt(in, i);
    storeInt(out, i,
             relu ? (x > 0 ? x : 0)
                  : static_cast<int64_t>(0 - static_cast<uint64_t>(x)));
  }
};

/// Operand offsets of element i: i itself where the operand has out's
/// shape (the common case, no index math).
struct Operand {
  Index index;
  bool direct;
  PC_HD int64_t at(int64_t i) const { return direct ? i : index.offset(i); }
};

/// The offsets of two operands that both have out's shape: a functor of a
/// few words instead of two Indexes (what a GPU thread copies per element).
struct Same {
  PC_HD int64_t at(int64_t i) const { return i; }
};

/// Calls fn(oa, ob), or fn(Same, Same) when both are out's own shape.
template <typename Fn>
void withOffsets(const Operand &oa, const Operand &ob, Fn fn) {
  if (oa.direct && ob.direct)
    return fn(Same{}, Same{});
  fn(oa, ob);
}

Operand operand(const Index &ix, int64_t n) {
  bool direct = true;
  int64_t expect = 1;
  for (int32_t d = ix.rank - 1; d >= 0; --d) {
    if (ix.size[d] != 1 && ix.stride[d] != expect)
      direct = false;
    expect *= ix.size[d];
  }
  return {ix, direct && expect == n};
}

template <typename T, typename Off = Operand> struct BinaryFloat {
  const T *a, *b;
  Off ia, ib;
  T *out;
  BinaryOp op;
  PC_HD void operator()(int64_t i) const {
    Float<T>::store(
        out, i,
        binaryOf(op, Float<T>::load(a, ia.at(i)), Float<T>::load(b, ib.at(i))));
  }
};

template <typename T, typename Off = Operand> struct BinaryInt {
  const T *a, *b;
  Off ia, ib;
  T *out;
  BinaryOp op;
  PC_HD void operator()(int64_t i) const {
    storeInt(out, i, binaryOf(op, loadInt(a, ia.at(i)), loadInt(b, ib.at(i))));
  }
};

template <typename T, typename Off = Operand> struct CompareFloat {
  const T *a, *b;
  Off ia, ib;
  T *out;
  CompareOp op;
  PC_HD void operator()(int64_t i) const {
    bool holds =
        compareOf(op, Float<T>::load(a, ia.at(i)), Float<T>::load(b, ib.at(i)));
    Float<T>::store(out, i, holds ? 1.0f : 0.0f);
  }
};

template <typename T> struct GeluGrad {
  const T *dy, *x;
  T *out;
  bool approximate;
  PC_HD void operator()(int64_t i) const {
    Float<T>::store(
        out, i,
        geluGradOf(Float<T>::load(dy, i), Float<T>::load(x, i), approximate));
  }
};

//===-- Rows ------------------------------------------------------------===//

/// One (outer, inner) line of a softmax over the middle dim.
template <typename T> struct Softmax {
  const T *x;
  T *y;
  int64_t len, inner, q;
  bool log, causal;
  PC_HD void operator()(int64_t line) const {
    int64_t o = line / inner, j = line % inner;
    int64_t base = o * len * inner + j;
    auto at = [&](int64_t i) { return Float<T>::load(x, base + i * inner); };
    int64_t n = causal ? (o % q + 1 < len ? o % q + 1 : len) : len;
    if (causal) {
      // The CPU's causal form: eight-lane maximum and sum over the seen
      // entries.
      float mx = rowMax(at, n);
      float sum = rowSum([&](int64_t i) { return std::exp(at(i) - mx); }, n);
      float lse = mx + std::log(sum);
      for (int64_t i = 0; i < len; ++i) {
        float v = i < n ? softmaxOf(at(i), mx, sum, lse, log)
                        : (log ? -INFINITY : 0.0f);
        Float<T>::store(y, base + i * inner, v);
      }
      return;
    }
    float mx = -INFINITY;
    for (int64_t i = 0; i < len; ++i)
      mx = maxOf(mx, at(i));
    float sum = 0;
    for (int64_t i = 0; i < len; ++i)
      sum += std::exp(at(i) - mx);
    float lse = mx + std::log(sum);
    for (int64_t i = 0; i < len; ++i)
      Float<T>::store(y, base + i * inner, softmaxOf(at(i), mx, sum, lse, log));
  }
};

template <typename T> struct SoftmaxGrad {
  const T *dy, *y;
  T *out;
  int64_t len, inner, q;
  bool causal;
  PC_HD void operator()(int64_t line) const {
    int64_t o = line / inner, j = line % inner;
    int64_t base = o * len * inner + j;
    auto g = [&](int64_t i) { return Float<T>::load(dy, base + i * inner); };
    auto p = [&](int64_t i) { return Float<T>::load(y, base + i * inner); };
    float dot = 0;
    int64_t n = len;
    if (inner == 1) {
      // cpu::softmaxGrad's lanes: a causal row ends at its diagonal, but
      // its lanes keep the full row's split, so that zeros past the
      // diagonal give the full form's bits.
      n = causal ? (o % q + 1 < len ? o % q + 1 : len) : len;
      float lanes[kLanes];
      for (int l = 0; l < kLanes; ++l)
        lanes[l] = laneDot(g, p, n, len, l);
      dot = finishDot(lanes, g, p, n, len);
    } else {
      for (int64_t i = 0; i < len; ++i)
        dot += g(i) * p(i);
    }
    for (int64_t i = 0; i < len; ++i)
      Float<T>::store(out, base + i * inner,
                      i < n ? softmaxGradOf(g(i), p(i), dot) : 0.0f);
  }
};

template <typename T> struct Normalize {
  const T *x, *gamma, *beta;
  T *y;
  int64_t width;
  float epsilon;
  bool rms;
  PC_HD void operator()(int64_t row) const {
    int64_t base = row * width;
    auto at = [&](int64_t i) { return Float<T>::load(x, base + i); };
    RowStats s = rowStats(at, width, epsilon, rms);
    for (int64_t i = 0; i < width; ++i)
      Float<T>::store(y, base + i,
                      normalizedOf(at(i), s, Float<T>::load(gamma, i),
                                   beta ? Float<T>::load(beta, i) : 0.0f));
  }
};

template <typename T> struct LayerNormGrad {
  const T *dy, *x, *gamma;
  T *out;
  int64_t width;
  float epsilon;
  PC_HD void operator()(int64_t row) const {
    int64_t base = row * width;
    auto xa = [&](int64_t i) { return Float<T>::load(x, base + i); };
    RowStats s = rowStats(xa, width, epsilon, false);
    auto gOf = [&](int64_t i) {
      return Float<T>::load(dy, base + i) * Float<T>::load(gamma, i);
    };
    auto xhat = [&](int64_t i) { return xhatOf(xa(i), s); };
    // mean(g) and mean(g · x̂), g = dy · gamma, in double over eight lanes
    // (cpu::layerNormGrad's order).
    GradMeans m = gradMeansOf(rowSums(gradTermsOf(gOf, xhat), width), width);
    for (int64_t i = 0; i < width; ++i)
      Float<T>::store(out, base + i, layerNormGradOf(gOf(i), xhat(i), s, m));
  }
};

template <typename T> struct RowStatsOf {
  const T *x;
  RowStats *stats;
  int64_t width;
  float epsilon;
  PC_HD void operator()(int64_t row) const {
    stats[row] =
        rowStats([&](int64_t i) { return Float<T>::load(x, row * width + i); },
                 width, epsilon, false);
  }
};

/// Σ dy · x̂ over one chunk of rows (Math.h's order) of column `col`.
template <typename T> struct ScaleGradChunk {
  const T *dy, *x;
  const RowStats *stats;
  int64_t rows, width;
  PC_HD float operator()(int64_t col, int64_t chunk) const {
    float r = 0;
    for (int64_t o = chunk * kReduceChunk,
                 end = o + kReduceChunk < rows ? o + kReduceChunk : rows;
         o < end; ++o) {
      int64_t at = o * width + col;
      r += Float<T>::load(dy, at) *
           ((Float<T>::load(x, at) - stats[o].shift) * stats[o].scale);
    }
    return r;
  }
};

/// Chunk e / width of column e % width, into part[e].
template <typename T> struct ScaleGradParts {
  ScaleGradChunk<T> chunk;
  float *part;
  PC_HD void operator()(int64_t e) const {
    part[e] = chunk(e % chunk.width, e / chunk.width);
  }
};

/// A column's chunks summed in order: from `part` where the chunks went
/// first, else computed here.
template <typename T> struct ScaleGrad {
  ScaleGradChunk<T> chunk;
  const float *part;
  T *out;
  PC_HD void operator()(int64_t col) const {
    float r = 0;
    for (int64_t c = 0, n = groupsOf(chunk.rows, kReduceChunk); c < n; ++c)
      r += part ? part[c * chunk.width + col] : chunk(col, c);
    Float<T>::store(out, col, r);
  }
};

//===-- Reductions ------------------------------------------------------===//

/// An output's terms in groups (Math.h's order): a piece of a reduced row
/// where the last dim is reduced (`width` other than 1; 0 has no pieces),
/// else a chunk of elements.
template <typename T> struct ReduceGroups {
  const T *x;
  Index kept, reduced;
  int64_t outer, width;
  bool max;
  PC_HD bool pieces() const {
    return width != 1 || kept.rank + reduced.rank == 0;
  }
  PC_HD int64_t perRow() const { return groupsOf(width, kRowPiece); }
  PC_HD int64_t count() const {
    return pieces() ? outer * perRow() : groupsOf(outer, kReduceChunk);
  }
  /// Group `g` of the output whose first element is at `base`.
  PC_HD float operator()(int64_t base, int64_t g) const {
    if (pieces()) {
      int64_t at = g % perRow() * kRowPiece;
      int64_t off = base + reduced.offset(g / perRow()) + at;
      int64_t len = width - at < kRowPiece ? width - at : kRowPiece;
      auto a = [&](int64_t e) { return Float<T>::load(x, off + e); };
      return max ? rowMax(a, len) : rowSum(a, len);
    }
    float acc = max ? -INFINITY : 0.0f;
    for (int64_t j = g * kReduceChunk,
                 end = j + kReduceChunk < outer ? j + kReduceChunk : outer;
         j < end; ++j) {
      float v = Float<T>::load(x, base + reduced.offset(j));
      acc = max ? maxOf(acc, v) : acc + v;
    }
    return acc;
  }
};

/// Group e / n of output e % n, into part[e].
template <typename T> struct ReduceParts {
  ReduceGroups<T> group;
  float *part;
  int64_t n;
  PC_HD void operator()(int64_t e) const {
    part[e] = group(group.kept.offset(e % n), e / n);
  }
};

/// An output's groups reduced in order: from `part` where the groups went
/// first, else computed here.
template <typename T> struct ReduceFloat {
  ReduceGroups<T> group;
  const float *part;
  T *y;
  int64_t n, count;
  Reduction op;
  PC_HD void operator()(int64_t i) const {
    int64_t base = part ? 0 : group.kept.offset(i);
    float acc = group.max ? -INFINITY : 0.0f;
    for (int64_t g = 0, groups = group.count(); g < groups; ++g) {
      float v = part ? part[g * n + i] : group(base, g);
      acc = group.max ? maxOf(acc, v) : acc + v;
    }
    if (op == Reduction::Mean && count)
      acc /= static_cast<float>(count);
    Float<T>::store(y, i, acc);
  }
};

template <typename T> struct ReduceInt {
  const T *x;
  T *y;
  Index kept, reduced;
  int64_t outer, width;
  bool max;
  PC_HD void operator()(int64_t i) const {
    int64_t base = kept.offset(i);
    T acc = max ? std::numeric_limits<T>::lowest() : T(0);
    for (int64_t j = 0; j < outer; ++j)
      for (int64_t e = 0; e < width; ++e) {
        T v = x[base + reduced.offset(j) + e];
        acc = max ? (acc < v ? v : acc)
                  : static_cast<T>(static_cast<uint64_t>(acc) +
                                   static_cast<uint64_t>(v));
      }
    y[i] = acc;
  }
};

//===-- Data movement ---------------------------------------------------===//

template <typename W> struct CopyIndexed {
  const W *in;
  W *out;
  Index src, dst;
  Operand s, d;
  PC_HD void operator()(int64_t i) const { out[d.at(i)] = in[s.at(i)]; }
};

PC_HD inline double loadAny(Elem t, const void *p, int64_t i) {
  switch (t) {
  case Elem::F32:
    return static_cast<const float *>(p)[i];
  case Elem::F64:
    return static_cast<const double *>(p)[i];
  case Elem::I32:
    return static_cast<const int32_t *>(p)[i];
  case Elem::I64:
    return static_cast<double>(static_cast<const int64_t *>(p)[i]);
  case Elem::F16:
    return toFloat(static_cast<const F16 *>(p)[i]);
  case Elem::BF16:
    return toFloat(static_cast<const BF16 *>(p)[i]);
  case Elem::U8:
    return static_cast<const uint8_t *>(p)[i];
  }
  return 0;
}

PC_HD inline void storeAny(Elem t, void *p, int64_t i, double v) {
  switch (t) {
  case Elem::F32:
    static_cast<float *>(p)[i] = static_cast<float>(v);
    return;
  case Elem::F64:
    static_cast<double *>(p)[i] = v;
    return;
  case Elem::I32:
    static_cast<int32_t *>(p)[i] = static_cast<int32_t>(std::trunc(v));
    return;
  case Elem::I64:
    static_cast<int64_t *>(p)[i] = static_cast<int64_t>(std::trunc(v));
    return;
  case Elem::F16:
    static_cast<F16 *>(p)[i] = toF16(static_cast<float>(v));
    return;
  case Elem::BF16:
    static_cast<BF16 *>(p)[i] = toBF16(static_cast<float>(v));
    return;
  case Elem::U8: {
    double c = std::trunc(v);
    static_cast<uint8_t *>(p)[i] = static_cast<uint8_t>(c < 0     ? 0
                                                        : c > 255 ? 255
                                                                  : c);
    return;
  }
  }
}

struct Convert {
  Elem from, to;
  const void *in;
  void *out;
  PC_HD void operator()(int64_t i) const {
    storeAny(to, out, i, loadAny(from, in, i));
  }
};

//===-- Ids and labels --------------------------------------------------===//

template <typename T> struct Embedding {
  const void *ids;
  bool wide;
  const T *table;
  T *out;
  int64_t rows, width;
  int64_t *firstBad;
  PC_HD void operator()(int64_t e) const {
    int64_t i = e / width, c = e % width;
    int64_t id = idAt(ids, wide, i);
    if (id < 0 || id >= rows) {
      Float<T>::store(out, e, 0.0f);
      if (c == 0 && firstBad)
        atomicMinI64(firstBad, i);
      return;
    }
    out[e] = table[id * width + c];
  }
};

/// An id as a sort key: ids outside [0, rows) sort last, as `rows`.
struct SortKey {
  const void *ids;
  bool wide;
  int64_t rows;
  int64_t *keys;
  PC_HD void operator()(int64_t i) const {
    int64_t id = idAt(ids, wide, i);
    keys[i] = id < 0 || id >= rows ? rows : id;
  }
};

template <typename T> struct EmbeddingGrad {
  const int64_t *keys, *positions;
  int64_t count;
  const T *grad;
  T *out;
  int64_t width;
  PC_HD void operator()(int64_t e) const {
    int64_t row = e / width, c = e % width;
    // The ids equal to `row`, in their order of appearance (a stable sort).
    const int64_t *lo =
        thrust::lower_bound(thrust::seq, keys, keys + count, row);
    const int64_t *hi = thrust::upper_bound(thrust::seq, lo, keys + count, row);
    float acc = 0;
    for (int64_t j = lo - keys, end = hi - keys; j < end; ++j)
      acc += Float<T>::load(grad, positions[j] * width + c);
    Float<T>::store(out, e, acc);
  }
};

template <typename T> struct OneHot {
  const void *labels;
  bool wide;
  int64_t classes;
  T *out;
  PC_HD void operator()(int64_t e) const {
    int64_t label = idAt(labels, wide, e / classes);
    Float<T>::store(out, e, label == e % classes ? 1.0f : 0.0f);
  }
};

template <typename T> struct PickLabels {
  const T *values;
  const void *labels;
  bool wide;
  int64_t classes;
  T *out;
  PC_HD void operator()(int64_t i) const {
    int64_t label = idAt(labels, wide, i);
    Float<T>::store(out, i,
                    label >= 0 && label < classes
                        ? Float<T>::load(values, i * classes + label)
                        : 0.0f);
  }
};

template <typename T> struct CrossEntropy {
  const T *logits;
  const void *labels;
  bool wide;
  int64_t classes;
  T *out;
  int64_t *firstBad;
  PC_HD void operator()(int64_t i) const {
    int64_t label = idAt(labels, wide, i);
    if (label < 0 || label >= classes) {
      atomicMinI64(firstBad, i);
      Float<T>::store(out, i, NAN);
      return;
    }
    const T *row = logits + i * classes;
    float mx = -INFINITY;
    for (int64_t c = 0; c < classes; ++c)
      mx = maxOf(mx, Float<T>::load(row, c));
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(Float<T>::load(row, c) - mx);
    Float<T>::store(out, i,
                    crossEntropyOf(mx, sum, Float<T>::load(row, label)));
  }
};

template <typename T> struct CausalMask {
  const T *x;
  T *y;
  int64_t q, k;
  bool zero;
  PC_HD void operator()(int64_t e) const {
    int64_t row = e / k, col = e % k;
    if (col <= row % q)
      y[e] = x[e];
    else
      Float<T>::store(y, e, zero ? 0.0f : -INFINITY);
  }
};

//===-- Optimizers ------------------------------------------------------===//

struct Adam {
  const float *w, *g, *m, *v, *lr, *c1, *c2;
  AdamConstants k;
  float *w2, *m2, *v2;
  PC_HD void operator()(int64_t i) const {
    float mi = m[i], vi = v[i];
    w2[i] = adamStep(w[i], g[i], mi, vi, *lr, *c1, *c2, k);
    m2[i] = mi;
    v2[i] = vi;
  }
};

/// One block of the 8-bit Adam: the update, the block's new scales, then
/// its codes from the recomputed moments (the same bits a second time).
struct Adam8 {
  const float *w, *g;
  const uint8_t *mCodes, *vCodes;
  const float *mScale, *vScale, *lr, *c1, *c2, *sm, *um;
  AdamConstants k;
  int64_t row, perRow, block;
  float *w2, *mScale2, *vScale2;
  uint8_t *mCodes2, *vCodes2;
  PC_HD void moments(int64_t i, int64_t s, float &m, float &v) const {
    float gi = g[i];
    m = (sm[mCodes[i]] * mScale[s]) * k.beta1 + gi * k.oneMinusBeta1;
    float root = um[vCodes[i]];
    v = (root * root * vScale[s]) * k.beta2 + (gi * gi) * k.oneMinusBeta2;
  }
  PC_HD void operator()(int64_t s) const {
    int64_t r = s / perRow, b = s % perRow;
    int64_t begin = r * row + b * block;
    int64_t size = row - b * block < block ? row - b * block : block;
    float mMax = 0, vMax = 0;
    for (int64_t j = 0; j < size; ++j) {
      int64_t i = begin + j;
      float m, v;
      moments(i, s, m, v);
      float step = (m / *c1) / (std::sqrt(v / *c2) + k.epsilon);
      if (k.weightDecay != 0.0f)
        step = step + w[i] * k.weightDecay;
      w2[i] = w[i] - *lr * step;
      mMax = maxOf(mMax, std::fabs(m));
      vMax = maxOf(vMax, v);
    }
    mScale2[s] = mMax;
    vScale2[s] = vMax;
    for (int64_t j = 0; j < size; ++j) {
      int64_t i = begin + j;
      float m, v;
      moments(i, s, m, v);
      mCodes2[i] = encode8(sm, mMax > 0 ? m / mMax : 0.0f);
      vCodes2[i] = encode8(um, vMax > 0 ? std::sqrt(v / vMax) : 0.0f);
    }
  }
};

/// Thrust's temporaries from a call's Scratch.
struct ScratchAllocator {
  using value_type = char;
  Scratch *scratch;
  char *allocate(std::ptrdiff_t n) {
    return static_cast<char *>(scratch->get(static_cast<size_t>(n)));
  }
  void deallocate(char *, size_t) {}
};

} // namespace

/// Every kernel but the matrix product, which the backend adds.
template <typename Policy> class ThrustKernels : public DeviceKernels {
public:
  void copy(const Launch &l, void *dst, const void *src,
            size_t bytes) override {
    Policy::copy(dst, src, bytes, l);
  }
  void toHost(const Launch &l, void *dst, const void *src,
              size_t bytes) override {
    Policy::toHost(dst, src, bytes, l);
  }
  void fromHost(void *dst, const void *src, size_t bytes) override {
    Policy::fromHost(dst, src, bytes);
  }
  void zero(const Launch &l, void *dst, size_t bytes) override {
    Policy::zero(dst, bytes, l);
  }

  void unary(const Launch &l, UnaryOp op, Elem t, const void *in, void *out,
             int64_t n) override {
    if (isInt(t))
      return onInt(t, [&](auto z) {
        using T = decltype(z);
        forEach<Policy>(l, n,
                        UnaryInt<T>{static_cast<const T *>(in),
                                    static_cast<T *>(out),
                                    op == UnaryOp::Relu});
      });
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(
          l, n,
          UnaryFloat<T>{static_cast<const T *>(in), static_cast<T *>(out), op});
    });
  }

  void binary(const Launch &l, BinaryOp op, Elem t, const void *a,
              const Index &ia, const void *b, const Index &ib, void *out,
              int64_t n) override {
    withOffsets(operand(ia, n), operand(ib, n), [&](auto oa, auto ob) {
      using Off = decltype(oa);
      if (isInt(t))
        return onInt(t, [&](auto z) {
          using T = decltype(z);
          forEach<Policy>(l, n,
                          BinaryInt<T, Off>{static_cast<const T *>(a),
                                            static_cast<const T *>(b), oa, ob,
                                            static_cast<T *>(out), op});
        });
      onFloat(t, [&](auto z) {
        using T = decltype(z);
        forEach<Policy>(l, n,
                        BinaryFloat<T, Off>{static_cast<const T *>(a),
                                            static_cast<const T *>(b), oa, ob,
                                            static_cast<T *>(out), op});
      });
    });
  }

  void compare(const Launch &l, CompareOp op, Elem t, const void *a,
               const Index &ia, const void *b, const Index &ib, void *out,
               int64_t n) override {
    withOffsets(operand(ia, n), operand(ib, n), [&](auto oa, auto ob) {
      using Off = decltype(oa);
      onFloat(t, [&](auto z) {
        using T = decltype(z);
        forEach<Policy>(l, n,
                        CompareFloat<T, Off>{static_cast<const T *>(a),
                                             static_cast<const T *>(b), oa, ob,
                                             static_cast<T *>(out), op});
      });
    });
  }

  void geluGrad(const Launch &l, Elem t, const void *dy, const void *x,
                void *out, int64_t n, bool approximate) override {
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(l, n,
                      GeluGrad<T>{static_cast<const T *>(dy),
                                  static_cast<const T *>(x),
                                  static_cast<T *>(out), approximate});
    });
  }

  void softmax(const Launch &l, Elem t, const void *in, void *out,
               int64_t outer, int64_t len, int64_t inner, bool log, bool causal,
               int64_t q) override {
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(l, outer * inner,
                      Softmax<T>{static_cast<const T *>(in),
                                 static_cast<T *>(out), len, inner, q, log,
                                 causal});
    });
  }

  void softmaxGrad(const Launch &l, Elem t, const void *dy, const void *y,
                   void *out, int64_t outer, int64_t len, int64_t inner,
                   bool causal, int64_t q) override {
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(
          l, outer * inner,
          SoftmaxGrad<T>{static_cast<const T *>(dy), static_cast<const T *>(y),
                         static_cast<T *>(out), len, inner, q, causal});
    });
  }

  void normalize(const Launch &l, Elem t, const void *in, const void *gamma,
                 const void *beta, void *out, int64_t rows, int64_t width,
                 float epsilon, bool rms) override {
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(l, rows,
                      Normalize<T>{static_cast<const T *>(in),
                                   static_cast<const T *>(gamma),
                                   static_cast<const T *>(beta),
                                   static_cast<T *>(out), width, epsilon, rms});
    });
  }

  void layerNormGrad(const Launch &l, Elem t, const void *dy, const void *x,
                     const void *gamma, void *out, int64_t rows, int64_t width,
                     float epsilon) override {
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(l, rows,
                      LayerNormGrad<T>{static_cast<const T *>(dy),
                                       static_cast<const T *>(x),
                                       static_cast<const T *>(gamma),
                                       static_cast<T *>(out), width, epsilon});
    });
  }

  void layerNormScaleGrad(const Launch &l, Elem t, const void *dy,
                          const void *x, void *out, int64_t rows, int64_t width,
                          float epsilon, Scratch &scratch) override {
    auto *stats = static_cast<RowStats *>(
        scratch.get(sizeof(RowStats) * (rows > 0 ? rows : 1)));
    layerNormStats(l, t, x, stats, rows, width, epsilon);
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      ScaleGradChunk<T> chunk{static_cast<const T *>(dy),
                              static_cast<const T *>(x), stats, rows, width};
      // More than one chunk: the chunks of every column at once, then
      // their sums (a thread per column would run the rows in sequence).
      float *part = nullptr;
      if (int64_t chunks = groupsOf(rows, kReduceChunk); chunks > 1) {
        part =
            static_cast<float *>(scratch.get(sizeof(float) * chunks * width));
        forEach<Policy>(l, chunks * width, ScaleGradParts<T>{chunk, part});
      }
      forEach<Policy>(l, width,
                      ScaleGrad<T>{chunk, part, static_cast<T *>(out)});
    });
  }

  void reduce(const Launch &l, Reduction op, Elem t, const void *in,
              const Index &kept, const Index &reduced, int64_t width,
              int64_t count, void *out, int64_t n, Scratch &scratch) override {
    int64_t outer = 1;
    for (int32_t d = 0; d < reduced.rank; ++d)
      outer *= reduced.size[d];
    if (isInt(t))
      return onInt(t, [&](auto z) {
        using T = decltype(z);
        forEach<Policy>(l, n,
                        ReduceInt<T>{static_cast<const T *>(in),
                                     static_cast<T *>(out), kept, reduced,
                                     outer, width, op == Reduction::Max});
      });
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      ReduceGroups<T> group{
          static_cast<const T *>(in), kept, reduced, outer, width,
          op == Reduction::Max};
      // More than one group per output: every output's groups at once,
      // then each output's results in order. Not for rows of a few
      // elements (a partial per row would cost as much scratch as the
      // input): those go a thread per output, as before the groups.
      float *part = nullptr;
      if (int64_t groups = group.count();
          groups > 1 && n > 0 && (!group.pieces() || width > kReduceChunk)) {
        part = static_cast<float *>(scratch.get(sizeof(float) * groups * n));
        forEach<Policy>(l, groups * n, ReduceParts<T>{group, part, n});
      }
      forEach<Policy>(
          l, n,
          ReduceFloat<T>{group, part, static_cast<T *>(out), n, count, op});
    });
  }

  void copyIndexed(const Launch &l, int64_t elementBytes, const void *in,
                   int64_t inBase, const Index &src, void *out, int64_t outBase,
                   const Index &dst, int64_t n) override {
    auto run = [&](auto w) {
      using W = decltype(w);
      forEach<Policy>(l, n,
                      CopyIndexed<W>{static_cast<const W *>(in) + inBase,
                                     static_cast<W *>(out) + outBase, src, dst,
                                     operand(src, n), operand(dst, n)});
    };
    switch (elementBytes) {
    case 8:
      return run(uint64_t{});
    case 4:
      return run(uint32_t{});
    case 2:
      return run(uint16_t{});
    default:
      return run(uint8_t{});
    }
  }

  void convert(const Launch &l, Elem from, const void *in, Elem to, void *out,
               int64_t n) override {
    forEach<Policy>(l, n, Convert{from, to, in, out});
  }

  BadIndex embedding(const Launch &l, Elem t, Elem idType, const void *ids,
                     int64_t count, const void *table, int64_t rows,
                     int64_t width, bool zeroOutOfRange, void *out,
                     Scratch &scratch) override {
    int64_t *bad = zeroOutOfRange ? nullptr : firstBadSlot(l, scratch);
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(l, count * width,
                      Embedding<T>{ids, idType == Elem::I64,
                                   static_cast<const T *>(table),
                                   static_cast<T *>(out), rows, width, bad});
    });
    return bad ? readBad(l, bad, ids, idType) : BadIndex{};
  }

  void embeddingGrad(const Launch &l, Elem t, Elem idType, const void *ids,
                     int64_t count, const void *grad, int64_t rows,
                     int64_t width, void *out, Scratch &scratch) override {
    size_t bytes = sizeof(int64_t) * (count > 0 ? count : 1);
    auto *keys = static_cast<int64_t *>(scratch.get(bytes));
    auto *positions = static_cast<int64_t *>(scratch.get(bytes));
    forEach<Policy>(l, count, SortKey{ids, idType == Elem::I64, rows, keys});
    ScratchAllocator alloc{&scratch};
    if (count > 0) {
      thrust::sequence(Policy::on(l), positions, positions + count);
      Policy::sortByKey(l, alloc, keys, count, positions);
    }
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(l, rows * width,
                      EmbeddingGrad<T>{keys, positions, count,
                                       static_cast<const T *>(grad),
                                       static_cast<T *>(out), width});
    });
  }

  void oneHot(const Launch &l, Elem t, Elem idType, const void *labels,
              int64_t count, int64_t classes, void *out) override {
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(l, count * classes,
                      OneHot<T>{labels, idType == Elem::I64, classes,
                                static_cast<T *>(out)});
    });
  }

  void pickLabels(const Launch &l, Elem t, Elem idType, const void *values,
                  const void *labels, int64_t count, int64_t classes,
                  void *out) override {
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(l, count,
                      PickLabels<T>{static_cast<const T *>(values), labels,
                                    idType == Elem::I64, classes,
                                    static_cast<T *>(out)});
    });
  }

  BadIndex crossEntropy(const Launch &l, Elem t, Elem idType,
                        const void *logits, const void *labels, int64_t count,
                        int64_t classes, void *out, Scratch &scratch) override {
    int64_t *bad = firstBadSlot(l, scratch);
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(l, count,
                      CrossEntropy<T>{static_cast<const T *>(logits), labels,
                                      idType == Elem::I64, classes,
                                      static_cast<T *>(out), bad});
    });
    return readBad(l, bad, labels, idType);
  }

  void causalMask(const Launch &l, Elem t, const void *in, void *out,
                  int64_t rows, int64_t q, int64_t k, bool zero) override {
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(l, rows * k,
                      CausalMask<T>{static_cast<const T *>(in),
                                    static_cast<T *>(out), q, k, zero});
    });
  }

  void adam(const Launch &l, const float *w, const float *g, const float *m,
            const float *v, const float *lr, const float *c1, const float *c2,
            const AdamConstants &k, float *w2, float *m2, float *v2,
            int64_t n) override {
    forEach<Policy>(l, n, Adam{w, g, m, v, lr, c1, c2, k, w2, m2, v2});
  }

  void adam8(const Launch &l, const float *w, const float *g,
             const uint8_t *mCodes, const float *mScale, const uint8_t *vCodes,
             const float *vScale, const float *lr, const float *c1,
             const float *c2, const AdamConstants &k, const float *signedMap,
             const float *unsignedMap, int64_t n, int64_t rowLength,
             int64_t block, float *w2, uint8_t *mCodes2, float *mScale2,
             uint8_t *vCodes2, float *vScale2) override {
    if (rowLength <= 0)
      return;
    int64_t perRow = (rowLength + block - 1) / block;
    forEach<Policy>(l, n / rowLength * perRow,
                    Adam8{w,           g,       mCodes,    vCodes,  mScale,
                          vScale,      lr,      c1,        c2,      signedMap,
                          unsignedMap, k,       rowLength, perRow,  block,
                          w2,          mScale2, vScale2,   mCodes2, vCodes2});
  }

protected:
  /// Each row's layer norm statistics (the norm's scale gradient's first
  /// pass): a thread per row here.
  virtual void layerNormStats(const Launch &l, Elem t, const void *x,
                              RowStats *stats, int64_t rows, int64_t width,
                              float epsilon) {
    onFloat(t, [&](auto z) {
      using T = decltype(z);
      forEach<Policy>(
          l, rows,
          RowStatsOf<T>{static_cast<const T *>(x), stats, width, epsilon});
    });
  }

  /// A device slot for the first bad position, set to "none".
  int64_t *firstBadSlot(const Launch &l, Scratch &scratch) {
    auto *slot = static_cast<int64_t *>(scratch.get(sizeof(int64_t)));
    thrust::fill_n(Policy::on(l), slot, 1, std::numeric_limits<int64_t>::max());
    return slot;
  }
  BadIndex readBad(const Launch &l, const int64_t *slot, const void *ids,
                   Elem idType) {
    int64_t position = 0;
    Policy::toHost(&position, slot, sizeof position, l);
    if (position == std::numeric_limits<int64_t>::max())
      return {};
    BadIndex bad{position, 0};
    if (idType == Elem::I64) {
      Policy::toHost(&bad.value, static_cast<const int64_t *>(ids) + position,
                     sizeof(int64_t), l);
    } else {
      int32_t v = 0;
      Policy::toHost(&v, static_cast<const int32_t *>(ids) + position, sizeof v,
                     l);
      bad.value = v;
    }
    return bad;
  }
};

} // namespace pc::runtime::portable

//===- CpuKernels.cpp - Kernels of the logical ops on CPU -----------------===//

#include "runtime/kernels/CpuKernels.h"
#include "runtime/kernels/Clones.h"

#include "absl/strings/str_cat.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

namespace pc::runtime::cpu {

absl::Status expectF32(const TensorView &t, const char *what) {
  if (t.type != CommType::F32)
    return absl::UnimplementedError(
        absl::StrCat(what, ": the CPU kernel takes f32 values"));
  return absl::OkStatus();
}

namespace {

/// Reads an id or label of either integer type.
int64_t idAt(const TensorView &t, int64_t i) {
  return t.type == CommType::I64 ? t.as<int64_t>()[i] : t.as<int32_t>()[i];
}

absl::Status expectIds(const TensorView &t, const char *what) {
  if (t.type != CommType::I64 && t.type != CommType::I32)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ids and labels are i32 or i64"));
  return absl::OkStatus();
}

Shape stridesOf(const Shape &shape) {
  Shape s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

/// Offsets into an operand of `shape` (aligned from the back, size-1 dims
/// broadcast) for the element `index` of the result.
int64_t broadcastOffset(const Shape &shape, const Shape &strides,
                        const Shape &index) {
  int64_t off = index.size() - shape.size(), linear = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1)
      linear += index[d + off] * strides[d];
  return linear;
}

/// Strides of an operand of `shape` over the result dims `os` (aligned from
/// the back): 0 where the operand is broadcast.
Shape broadcastStrides(const Shape &shape, const Shape &os) {
  Shape own = stridesOf(shape), out(os.size(), 0);
  int64_t off = os.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1)
      out[d + off] = own[d];
  return out;
}

/// The inner loop over the last dim, specialized on whether each operand
/// moves (stride 1) or stays (stride 0), so that it vectorizes.
template <typename Fn>
void row(const float *a, int64_t sa, const float *b, int64_t sb, float *out,
         int64_t n, Fn fn) {
  if (sa && sb)
    for (int64_t j = 0; j < n; ++j)
      out[j] = fn(a[j], b[j]);
  else if (sa)
    for (int64_t j = 0; j < n; ++j)
      out[j] = fn(a[j], b[0]);
  else if (sb)
    for (int64_t j = 0; j < n; ++j)
      out[j] = fn(a[0], b[j]);
  else
    for (int64_t j = 0; j < n; ++j)
      out[j] = fn(a[0], b[0]);
}

/// NumPy broadcasting: rows of the last dim, the outer dims walked as an
/// odometer (no per-element index arithmetic).
template <typename Fn>
void applyBinary(const float *a, const Shape &as, const float *b,
                 const Shape &bs, float *out, const Shape &os, Fn fn) {
  int64_t n = product(os);
  if (n == 0)
    return;
  if (as == os && bs == os) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = fn(a[i], b[i]);
    return;
  }
  if (os.empty()) {
    out[0] = fn(a[0], b[0]);
    return;
  }
  Shape sa = broadcastStrides(as, os), sb = broadcastStrides(bs, os);
  size_t r = os.size();
  int64_t width = os[r - 1], rows = n / width;
  Shape idx(r - 1, 0);
  int64_t offA = 0, offB = 0;
  for (int64_t i = 0; i < rows; ++i) {
    row(a + offA, sa[r - 1], b + offB, sb[r - 1], out + i * width, width, fn);
    for (size_t d = r - 1; d-- > 0;) {
      offA += sa[d];
      offB += sb[d];
      if (++idx[d] < os[d])
        break;
      offA -= sa[d] * os[d];
      offB -= sb[d] * os[d];
      idx[d] = 0;
    }
  }
}

} // namespace

absl::Status matmul(const TensorView &a, const TensorView &b, bool ta, bool tb,
                    const TensorView &out, float alpha,
                    const TensorView *addend) {
  if (absl::Status s = expectF32(a, "matmul"); !s.ok())
    return s;
  size_t ra = a.shape.size(), rb = b.shape.size(), rr = out.shape.size();
  int64_t m = out.shape[rr - 2], n = out.shape[rr - 1];
  int64_t k = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  Shape batch(out.shape.begin(), out.shape.end() - 2);
  Shape aBatch(a.shape.begin(), a.shape.end() - 2);
  Shape bBatch(b.shape.begin(), b.shape.end() - 2);
  Shape sA = stridesOf(aBatch), sB = stridesOf(bBatch);
  int64_t aMat = a.shape[ra - 2] * a.shape[ra - 1];
  int64_t bMat = b.shape[rb - 2] * b.shape[rb - 1];
  for (int64_t i = 0, nb = product(batch); i < nb; ++i) {
    Shape idx = delinearize(batch, i);
    const float *pa = a.as<float>() + broadcastOffset(aBatch, sA, idx) * aMat;
    const float *pb = b.as<float>() + broadcastOffset(bBatch, sB, idx) * bMat;
    float *pc = out.as<float>() + i * m * n;
    if (m == 0 || n == 0)
      continue;
    if (k == 0) {
      std::fill(pc, pc + m * n, 0.0f);
      continue;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, pa, ta ? m : k,
                pb, tb ? k : n, 0.0f, pc, n);
  }
  // The scaled product, then the sum: the order of the fused form.
  if (addend)
    return binary(Binary::Add, out, *addend, out);
  return absl::OkStatus();
}

PC_CLONES absl::Status binary(Binary op, const TensorView &a,
                              const TensorView &b, const TensorView &out) {
  if (absl::Status s = expectF32(a, "binary op"); !s.ok())
    return s;
  const float *x = a.as<float>(), *y = b.as<float>();
  float *z = out.as<float>();
  switch (op) {
  case Binary::Add:
    applyBinary(x, a.shape, y, b.shape, z, out.shape,
                [](float p, float q) { return p + q; });
    break;
  case Binary::Sub:
    applyBinary(x, a.shape, y, b.shape, z, out.shape,
                [](float p, float q) { return p - q; });
    break;
  case Binary::Mul:
    applyBinary(x, a.shape, y, b.shape, z, out.shape,
                [](float p, float q) { return p * q; });
    break;
  case Binary::Div:
    applyBinary(x, a.shape, y, b.shape, z, out.shape,
                [](float p, float q) { return p / q; });
    break;
  }
  return absl::OkStatus();
}

PC_CLONES absl::Status unary(Unary op, const TensorView &in,
                             const TensorView &out) {
  if (absl::Status s = expectF32(in, "unary op"); !s.ok())
    return s;
  const float *x = in.as<float>();
  float *y = out.as<float>();
  int64_t n = in.numel();
  const float k = std::sqrt(2.0f / static_cast<float>(M_PI));
  // One loop per op, so that each vectorizes.
  // Pointers by value: through a captured reference they would be
  // reloaded after every store, and the loop would stay scalar.
  auto each = [x, y, n](auto fn) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = fn(x[i]);
  };
  switch (op) {
  case Unary::Neg:
    each([](float v) { return -v; });
    break;
  case Unary::Exp:
    each([](float v) { return std::exp(v); });
    break;
  case Unary::Log:
    each([](float v) { return std::log(v); });
    break;
  case Unary::Tanh:
    each([](float v) { return std::tanh(v); });
    break;
  case Unary::Relu:
    each([](float v) { return v > 0 ? v : 0.0f; });
    break;
  case Unary::Sigmoid:
    each([](float v) { return 1.0f / (1.0f + std::exp(-v)); });
    break;
  case Unary::Gelu:
    each([](float v) {
      return 0.5f * v * (1.0f + std::erf(v / std::sqrt(2.0f)));
    });
    break;
  case Unary::GeluTanh:
    each([k](float v) {
      return 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
    });
    break;
  case Unary::Sqrt:
    each([](float v) { return std::sqrt(v); });
    break;
  case Unary::Erf:
    each([](float v) { return std::erf(v); });
    break;
  }
  return absl::OkStatus();
}

PC_CLONES absl::Status softmax(const TensorView &in, int64_t axis, bool log,
                               const TensorView &out) {
  if (absl::Status s = expectF32(in, "softmax"); !s.ok())
    return s;
  int64_t outer = product(Shape(in.shape.begin(), in.shape.begin() + axis));
  int64_t len = in.shape[axis];
  int64_t inner = product(Shape(in.shape.begin() + axis + 1, in.shape.end()));
  const float *x = in.as<float>();
  float *y = out.as<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return (o * len + i) * inner + j; };
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < len; ++i)
        mx = std::max(mx, x[at(i)]);
      float sum = 0;
      for (int64_t i = 0; i < len; ++i)
        sum += std::exp(x[at(i)] - mx);
      float lse = mx + std::log(sum);
      for (int64_t i = 0; i < len; ++i)
        y[at(i)] = log ? x[at(i)] - lse : std::exp(x[at(i)] - mx) / sum;
    }
  return absl::OkStatus();
}

namespace {
/// Eight lanes of f32 and of f64, as GCC and Clang vector types: sums
/// over them vectorize in every clone (the lanes are combined in order).
typedef float F8 __attribute__((vector_size(32)));
typedef double D8 __attribute__((vector_size(64)));
constexpr int kLanes = 8;

PC_INLINE D8 loadWide(const float *p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, D8);
}

PC_INLINE double sumLanes(D8 v) {
  double s = 0;
  for (int l = 0; l < kLanes; ++l)
    s += v[l];
  return s;
}

/// The sum of `n` floats over 8 lanes, the lanes combined in order, then
/// the tail.
PC_INLINE float rowSum(const float *x, int64_t n) {
  F8 lanes = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    F8 v;
    std::memcpy(&v, x + i, sizeof v);
    lanes += v;
  }
  float sum = 0;
  for (int l = 0; l < kLanes; ++l)
    sum += lanes[l];
  for (; i < n; ++i)
    sum += x[i];
  return sum;
}

/// The maximum of `n` floats (-infinity when empty; NaNs are passed over,
/// as std::max passes over them), over 8 lanes.
PC_INLINE float rowMax(const float *x, int64_t n) {
  F8 lanes;
  for (int l = 0; l < kLanes; ++l)
    lanes[l] = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    F8 v;
    std::memcpy(&v, x + i, sizeof v);
    lanes = v > lanes ? v : lanes;
  }
  float mx = lanes[0];
  for (int l = 1; l < kLanes; ++l)
    mx = std::max(mx, lanes[l]);
  for (; i < n; ++i)
    mx = std::max(mx, x[i]);
  return mx;
}

/// A row's layer-norm statistics: x̂ = (x − shift) · scale. The sums are in
/// double (long rows lose too much in f32), over 8 lanes so that they
/// vectorize; every layer-norm kernel uses this one function, so the
/// forward and both gradients see the same bits.
struct RowStats {
  float shift, scale;
};
PC_INLINE RowStats rowStats(const float *row, int64_t n, double epsilon,
                            bool rms) {
  D8 s = {}, q = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    D8 v = loadWide(row + i);
    s += v;
    q += v * v;
  }
  double mean = sumLanes(s), sq = sumLanes(q);
  for (; i < n; ++i) {
    mean += row[i];
    sq += double(row[i]) * row[i];
  }
  mean /= n;
  double var = sq / n - (rms ? 0 : mean * mean);
  return {rms ? 0.0f : static_cast<float>(mean),
          static_cast<float>(1 / std::sqrt(var + epsilon))};
}
} // namespace

PC_CLONES absl::Status normalize(const TensorView &in, int64_t axis,
                                 const TensorView &gamma,
                                 const TensorView *beta, float epsilon,
                                 bool rms, const TensorView &out) {
  if (absl::Status s = expectF32(in, "layer norm"); !s.ok())
    return s;
  int64_t inner = product(Shape(in.shape.begin() + axis, in.shape.end()));
  int64_t outer = inner ? in.numel() / inner : 0;
  const float *x = in.as<float>(), *g = gamma.as<float>();
  const float *bt = beta ? beta->as<float>() : nullptr;
  float *y = out.as<float>();
  for (int64_t o = 0; o < outer; ++o) {
    const float *row = x + o * inner;
    auto [shift, scale] = rowStats(row, inner, epsilon, rms);
    float *yrow = y + o * inner;
    if (bt)
      for (int64_t i = 0; i < inner; ++i)
        yrow[i] = (row[i] - shift) * scale * g[i] + bt[i];
    else
      for (int64_t i = 0; i < inner; ++i)
        yrow[i] = (row[i] - shift) * scale * g[i] + 0.0f;
  }
  return absl::OkStatus();
}

namespace {
/// Float terms in chunks (Math.h's order, where the last dim is kept):
/// each output's chunk is reduced into `part`, which goes into `y` when the
/// output's next chunk starts (term % kReduceChunk == 0) and at the end.
struct ChunkedTerms {
  bool max;
  float init;
  std::vector<float> part;

  ChunkedTerms(bool max, int64_t outputs)
      : max(max), init(max ? -std::numeric_limits<float>::infinity() : 0.0f),
        part(outputs, init) {}

  void add(float *y, int64_t o, const float *src, int64_t width, int64_t term) {
    float *p = part.data() + o;
    if (term % portable::kReduceChunk == 0 && term > 0)
      for (int64_t j = 0; j < width; ++j) {
        y[o + j] = max ? std::max(y[o + j], p[j]) : y[o + j] + p[j];
        p[j] = init;
      }
    if (max)
      for (int64_t j = 0; j < width; ++j)
        p[j] = std::max(p[j], src[j]);
    else
      for (int64_t j = 0; j < width; ++j)
        p[j] += src[j];
  }
  void finish(float *y) {
    for (size_t e = 0; e < part.size(); ++e)
      y[e] = max ? std::max(y[e], part[e]) : y[e] + part[e];
  }
};

template <typename T>
PC_INLINE void reduceAs(Reduction op, const TensorView &in,
                        const std::vector<bool> &reduced, int64_t count,
                        const TensorView &out) {
  size_t rank = in.shape.size();
  Shape keptFull, reducedFull;
  for (size_t d = 0; d < rank; ++d) {
    keptFull.push_back(reduced[d] ? 1 : in.shape[d]);
    reducedFull.push_back(reduced[d] ? in.shape[d] : 1);
  }
  Shape so = stridesOf(keptFull), sr = stridesOf(reducedFull);
  // The output stride of each input dim (0 where the dim is reduced), and
  // its stride among the reduced positions (0 where it is kept).
  Shape step(rank, 0), termStep(rank, 0);
  for (size_t d = 0; d < rank; ++d)
    (reduced[d] ? termStep : step)[d] = (reduced[d] ? sr : so)[d];
  T *y = out.as<T>();
  T init = op != Reduction::Max ? T(0)
           : std::numeric_limits<T>::has_infinity
               ? -std::numeric_limits<T>::infinity()
               : std::numeric_limits<T>::lowest();
  std::fill(y, y + out.numel(), init);
  const T *x = in.as<T>();
  int64_t n = in.numel();
  if (n == 0)
    return;
  if (rank == 0) {
    y[0] = op == Reduction::Max ? std::max(y[0], x[0]) : y[0] + x[0];
    return;
  }
  int64_t width = in.shape[rank - 1], rows = n / width;
  int64_t inner = step[rank - 1];
  // Float rows (the last dim reduced, longer than 1) go in pieces, other
  // float terms in chunks: Math.h's order.
  constexpr bool kFloat = std::is_same_v<T, float>;
  bool pieces = !inner && width > 1;
  std::optional<ChunkedTerms> chunks;
  if (kFloat && !pieces && count > portable::kReduceChunk)
    chunks.emplace(op == Reduction::Max, out.numel());
  Shape idx(rank - 1, 0);
  int64_t o = 0, term = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const T *src = x + i * width;
    bool done = false;
    if constexpr (kFloat) {
      if (pieces) {
        // Each piece over 8 lanes, so that it vectorizes (and a GPU can
        // take the pieces at once).
        for (int64_t at = 0; at < width; at += portable::kRowPiece) {
          int64_t len = std::min(portable::kRowPiece, width - at);
          y[o] = op == Reduction::Max ? std::max(y[o], rowMax(src + at, len))
                                      : y[o] + rowSum(src + at, len);
        }
        done = true;
      } else if (chunks) {
        chunks->add(y, o, src, width, term);
        done = true;
      }
    }
    if (done) {
    } else if (op == Reduction::Max) {
      for (int64_t j = 0; j < width; ++j)
        y[o + j * inner] = std::max(y[o + j * inner], src[j]);
    } else if (inner) {
      for (int64_t j = 0; j < width; ++j)
        y[o + j] += src[j];
    } else {
      T acc = 0;
      for (int64_t j = 0; j < width; ++j)
        acc += src[j];
      y[o] += acc;
    }
    for (size_t d = rank - 1; d-- > 0;) {
      o += step[d];
      term += termStep[d];
      if (++idx[d] < in.shape[d])
        break;
      o -= step[d] * in.shape[d];
      term -= termStep[d] * in.shape[d];
      idx[d] = 0;
    }
  }
  if constexpr (kFloat)
    if (chunks)
      chunks->finish(y);
  if (op == Reduction::Mean && count)
    for (int64_t i = 0, m = out.numel(); i < m; ++i)
      y[i] /= static_cast<T>(count);
}
} // namespace

PC_CLONES absl::Status reduce(Reduction op, const TensorView &in,
                              std::span<const int64_t> axes,
                              const TensorView &out) {
  size_t rank = in.shape.size();
  std::vector<bool> reduced(rank, false);
  int64_t count = 1;
  for (int64_t a : axes) {
    reduced[(a + rank) % rank] = true;
    count *= in.shape[(a + rank) % rank];
  }
  // Integers sum and take maxima exactly (no mean: the IR has none).
  if (op != Reduction::Mean && in.type == CommType::I64) {
    reduceAs<int64_t>(op, in, reduced, count, out);
    return absl::OkStatus();
  }
  if (op != Reduction::Mean && in.type == CommType::I32) {
    reduceAs<int32_t>(op, in, reduced, count, out);
    return absl::OkStatus();
  }
  if (absl::Status s = expectF32(in, "reduce"); !s.ok())
    return s;
  reduceAs<float>(op, in, reduced, count, out);
  return absl::OkStatus();
}

absl::Status transpose(const TensorView &in, std::span<const int64_t> perm,
                       const TensorView &out) {
  int64_t e = sizeOf(in.type), n = out.numel();
  size_t rank = perm.size();
  if (n == 0)
    return absl::OkStatus();
  if (rank == 0) {
    std::copy_n(in.data(), e, out.data());
    return absl::OkStatus();
  }
  // The input stride of each output dim; the output walked as an odometer
  // row by row of its last dim.
  Shape si = stridesOf(in.shape), step(rank);
  for (size_t d = 0; d < rank; ++d)
    step[d] = si[perm[d]] * e;
  int64_t width = out.shape[rank - 1], inner = step[rank - 1];
  Shape idx(rank - 1, 0);
  const char *src = in.data();
  char *dst = out.data();
  for (int64_t r = 0, rows = n / width; r < rows; ++r) {
    for (int64_t j = 0; j < width; ++j, dst += e)
      std::memcpy(dst, src + j * inner, e);
    for (size_t d = rank - 1; d-- > 0;) {
      src += step[d];
      if (++idx[d] < out.shape[d])
        break;
      src -= step[d] * out.shape[d];
      idx[d] = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status embedding(const TensorView &ids, const TensorView &table,
                       bool zeroOutOfRange, const TensorView &out) {
  if (absl::Status s = expectIds(ids, "embedding"); !s.ok())
    return s;
  int64_t rows = table.shape[0], width = table.shape[1];
  const float *t = table.as<float>();
  float *y = out.as<float>();
  for (int64_t i = 0, n = ids.numel(); i < n; ++i) {
    int64_t id = idAt(ids, i);
    if (id < 0 || id >= rows) {
      if (!zeroOutOfRange)
        return absl::OutOfRangeError(
            absl::StrCat("pc.embedding: id ", id, " at position ", i,
                         " is outside [0, ", rows, ")"));
      std::fill(y + i * width, y + (i + 1) * width, 0.0f);
      continue;
    }
    std::copy_n(t + id * width, width, y + i * width);
  }
  return absl::OkStatus();
}

absl::Status oneHot(const TensorView &labels, const TensorView &out) {
  if (absl::Status s = expectIds(labels, "one hot"); !s.ok())
    return s;
  if (absl::Status s = expectF32(out, "one hot"); !s.ok())
    return s;
  int64_t classes = out.shape.back();
  float *y = out.as<float>();
  std::fill(y, y + out.numel(), 0.0f);
  for (int64_t i = 0, n = labels.numel(); i < n; ++i) {
    int64_t c = idAt(labels, i);
    if (c >= 0 && c < classes)
      y[i * classes + c] = 1.0f;
  }
  return absl::OkStatus();
}

PC_CLONES absl::Status embeddingGrad(const TensorView &ids,
                                     const TensorView &grad,
                                     const TensorView &out) {
  if (absl::Status s = expectIds(ids, "embedding grad"); !s.ok())
    return s;
  if (absl::Status s = expectF32(grad, "embedding grad"); !s.ok())
    return s;
  int64_t rows = out.shape[0], width = out.shape[1];
  const float *g = grad.as<float>();
  float *y = out.as<float>();
  std::fill(y, y + out.numel(), 0.0f);
  // Rows accumulate in id order of appearance: deterministic, and each row
  // a contiguous, vectorizable add.
  for (int64_t i = 0, n = ids.numel(); i < n; ++i) {
    int64_t id = idAt(ids, i);
    if (id < 0 || id >= rows)
      continue;
    float *row = y + id * width;
    const float *src = g + i * width;
    for (int64_t j = 0; j < width; ++j)
      row[j] += src[j];
  }
  return absl::OkStatus();
}

PC_CLONES absl::Status compare(Comparison op, const TensorView &a,
                               const TensorView &b, const TensorView &out) {
  if (absl::Status s = expectF32(a, "compare"); !s.ok())
    return s;
  const float *x = a.as<float>(), *y = b.as<float>();
  float *z = out.as<float>();
  auto run = [&](auto pred) {
    applyBinary(x, a.shape, y, b.shape, z, out.shape,
                [pred](float p, float q) { return pred(p, q) ? 1.0f : 0.0f; });
  };
  switch (op) {
  case Comparison::Eq:
    run([](float p, float q) { return p == q; });
    break;
  case Comparison::Ne:
    run([](float p, float q) { return p != q; });
    break;
  case Comparison::Lt:
    run([](float p, float q) { return p < q; });
    break;
  case Comparison::Le:
    run([](float p, float q) { return p <= q; });
    break;
  case Comparison::Gt:
    run([](float p, float q) { return p > q; });
    break;
  case Comparison::Ge:
    run([](float p, float q) { return p >= q; });
    break;
  }
  return absl::OkStatus();
}

PC_CLONES absl::Status causalMask(const TensorView &in, const TensorView &out,
                                  bool zero) {
  if (absl::Status s = expectF32(in, "causal mask"); !s.ok())
    return s;
  size_t rank = in.shape.size();
  int64_t q = in.shape[rank - 2], k = in.shape[rank - 1];
  const float *x = in.as<float>();
  float *y = out.as<float>();
  const float fill = zero ? 0.0f : -std::numeric_limits<float>::infinity();
  // Row r of each q x k matrix keeps its first r + 1 columns.
  for (int64_t row = 0, rows = k ? in.numel() / k : 0; row < rows; ++row) {
    int64_t keep = std::min(k, row % q + 1);
    std::copy_n(x + row * k, keep, y + row * k);
    std::fill(y + row * k + keep, y + (row + 1) * k, fill);
  }
  return absl::OkStatus();
}

int64_t causalPackedSize(int64_t q, int64_t k) {
  int64_t n = 0;
  for (int64_t r = 0; r < q; ++r)
    n += std::min(k, r + 1);
  return n;
}

PC_CLONES void causalCenter(const float *x, int64_t matrices, int64_t q,
                            int64_t k, float *packed) {
  for (int64_t row = 0; row < matrices * q; ++row) {
    const float *xr = x + row * k;
    int64_t n = std::min(k, row % q + 1);
    float mx = rowMax(xr, n);
    for (int64_t i = 0; i < n; ++i)
      packed[i] = xr[i] - mx;
    packed += n;
  }
}

PC_CLONES void causalNormalize(const float *packed, int64_t matrices, int64_t q,
                               int64_t k, float *y) {
  for (int64_t row = 0; row < matrices * q; ++row) {
    float *yr = y + row * k;
    int64_t n = std::min(k, row % q + 1);
    float sum = rowSum(packed, n);
    for (int64_t i = 0; i < n; ++i)
      yr[i] = packed[i] / sum;
    std::fill(yr + n, yr + k, 0.0f);
    packed += n;
  }
}

PC_CLONES absl::Status layerNormGrad(const TensorView &dy, const TensorView &x,
                                     const TensorView &gamma, int64_t axis,
                                     float epsilon, const TensorView &out) {
  if (absl::Status s = expectF32(x, "layer norm grad"); !s.ok())
    return s;
  int64_t inner = product(Shape(x.shape.begin() + axis, x.shape.end()));
  int64_t outer = inner ? x.numel() / inner : 0;
  const float *px = x.as<float>(), *pg = dy.as<float>(),
              *gm = gamma.as<float>();
  float *r = out.as<float>();
  for (int64_t o = 0; o < outer; ++o) {
    const float *row = px + o * inner, *grow = pg + o * inner;
    float *orow = r + o * inner;
    auto [shift, rstd] = rowStats(row, inner, epsilon, false);
    // mean(g) and mean(g · x̂), g = dy · gamma, in double over 8 lanes.
    D8 lg = {}, lgx = {};
    int64_t i = 0;
    for (; i + kLanes <= inner; i += kLanes) {
      F8 dy8, g8, x8;
      std::memcpy(&dy8, grow + i, sizeof dy8);
      std::memcpy(&g8, gm + i, sizeof g8);
      std::memcpy(&x8, row + i, sizeof x8);
      F8 g = dy8 * g8;
      lg += __builtin_convertvector(g, D8);
      lgx += __builtin_convertvector(g, D8) *
             __builtin_convertvector((x8 - shift) * rstd, D8);
    }
    double sg = sumLanes(lg), sgx = sumLanes(lgx);
    for (; i < inner; ++i) {
      float g = grow[i] * gm[i];
      sg += g;
      sgx += double(g) * ((row[i] - shift) * rstd);
    }
    float a = static_cast<float>(sg / inner),
          b = static_cast<float>(sgx / inner);
    for (int64_t i = 0; i < inner; ++i) {
      float xhat = (row[i] - shift) * rstd;
      orow[i] = rstd * (grow[i] * gm[i] - a - xhat * b);
    }
  }
  return absl::OkStatus();
}

PC_CLONES absl::Status layerNormScaleGrad(const TensorView &dy,
                                          const TensorView &x, int64_t axis,
                                          float epsilon,
                                          const TensorView &out) {
  if (absl::Status s = expectF32(x, "layer norm scale grad"); !s.ok())
    return s;
  int64_t inner = out.numel();
  int64_t outer = inner ? x.numel() / inner : 0;
  const float *px = x.as<float>(), *pg = dy.as<float>();
  float *r = out.as<float>();
  std::fill(r, r + inner, 0.0f);
  // Row by row into chunks of rows, the chunks into the sum: the order (and
  // so the bits) of reduce_sum(dy · layer_norm(x, 1, 0)) over the rows.
  std::vector<float> part(outer > portable::kReduceChunk ? inner : 0);
  float *p = part.empty() ? r : part.data();
  for (int64_t o = 0; o < outer; ++o) {
    const float *row = px + o * inner, *grow = pg + o * inner;
    if (o % portable::kReduceChunk == 0 && o > 0)
      for (int64_t i = 0; i < inner; ++i) {
        r[i] += p[i];
        p[i] = 0;
      }
    auto [shift, scale] = rowStats(row, inner, epsilon, false);
    for (int64_t i = 0; i < inner; ++i)
      p[i] += grow[i] * ((row[i] - shift) * scale);
  }
  if (!part.empty())
    for (int64_t i = 0; i < inner; ++i)
      r[i] += p[i];
  return absl::OkStatus();
}

PC_CLONES absl::Status softmaxGrad(const TensorView &dy, const TensorView &y,
                                   int64_t axis, bool causal,
                                   const TensorView &out) {
  if (absl::Status s = expectF32(dy, "softmax grad"); !s.ok())
    return s;
  int64_t outer = product(Shape(y.shape.begin(), y.shape.begin() + axis));
  int64_t len = y.shape[axis];
  int64_t inner = product(Shape(y.shape.begin() + axis + 1, y.shape.end()));
  const float *g = dy.as<float>(), *p = y.as<float>();
  float *r = out.as<float>();
  if (inner == 1) {
    // Rows of the last dim: a dot product (over 8 lanes, combined in
    // order), then one vectorized pass. A causal row ends at its diagonal.
    int64_t q = causal ? y.shape[y.shape.size() - 2] : 1;
    for (int64_t o = 0; o < outer; ++o) {
      const float *gr = g + o * len, *pr = p + o * len;
      float *rr = r + o * len;
      // A causal row ends at its diagonal. Its sum keeps the full row's
      // lanes (the lane region ends at `full`, the rest is added after),
      // so a row whose y is 0 past the diagonal sums to the full form's
      // bits.
      int64_t n = causal ? std::min(len, o % q + 1) : len;
      int64_t full = len / kLanes * kLanes;
      F8 lanes = {};
      int64_t i = 0;
      for (; i + kLanes <= std::min(n, full); i += kLanes) {
        F8 a, b;
        std::memcpy(&a, gr + i, sizeof a);
        std::memcpy(&b, pr + i, sizeof b);
        lanes += a * b;
      }
      if (i < n && i < full) {
        for (int l = 0; i + l < n; ++l)
          lanes[l] += gr[i + l] * pr[i + l];
        i = n;
      }
      float dot = 0;
      for (int l = 0; l < kLanes; ++l)
        dot += lanes[l];
      for (; i < n; ++i)
        dot += gr[i] * pr[i];
      for (i = 0; i < n; ++i)
        rr[i] = pr[i] * (gr[i] - dot);
      std::fill(rr + n, rr + len, 0.0f);
    }
    return absl::OkStatus();
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return (o * len + i) * inner + j; };
      float dot = 0;
      for (int64_t i = 0; i < len; ++i)
        dot += g[at(i)] * p[at(i)];
      for (int64_t i = 0; i < len; ++i)
        r[at(i)] = p[at(i)] * (g[at(i)] - dot);
    }
  return absl::OkStatus();
}

PC_CLONES absl::Status adamUpdate(const TensorView &w, const TensorView &g,
                                  const TensorView &m, const TensorView &v,
                                  float lr, float c1, float c2,
                                  const AdamConstants &k, const TensorView &w2,
                                  const TensorView &m2, const TensorView &v2) {
  if (absl::Status s = expectF32(w, "adam update"); !s.ok())
    return s;
  const float *pw = w.as<float>(), *pg = g.as<float>(), *pm = m.as<float>(),
              *pv = v.as<float>();
  float *ow = w2.as<float>(), *om = m2.as<float>(), *ov = v2.as<float>();
  // The elementwise form's operations in its order, so that the results
  // are the same bits; one loop, which vectorizes. The constants are
  // copied, and `ivdep` says what the compiler cannot prove: each output
  // is its input (in place) or apart from every input, so no iteration
  // reads what another wrote. Without both, seven pointers and a struct
  // that might alias them keep the loop scalar (about 5x slower).
  const AdamConstants c = k;
  const bool decay = c.weightDecay != 0.0f;
  const int64_t n = w.numel();
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    float mi = pm[i] * c.beta1 + pg[i] * c.oneMinusBeta1;
    float vi = pv[i] * c.beta2 + (pg[i] * pg[i]) * c.oneMinusBeta2;
    float step = (mi / c1) / (std::sqrt(vi / c2) + c.epsilon);
    if (decay)
      step = step + pw[i] * c.weightDecay;
    om[i] = mi;
    ov[i] = vi;
    ow[i] = pw[i] - lr * step;
  }
  return absl::OkStatus();
}

PC_CLONES absl::Status crossEntropy(const TensorView &logits,
                                    const TensorView &labels,
                                    const TensorView &out) {
  if (absl::Status s = expectIds(labels, "cross entropy"); !s.ok())
    return s;
  int64_t classes = logits.shape.back();
  const float *x = logits.as<float>();
  float *y = out.as<float>();
  for (int64_t i = 0, n = labels.numel(); i < n; ++i) {
    int64_t label = idAt(labels, i);
    if (label < 0 || label >= classes)
      return absl::OutOfRangeError(
          absl::StrCat("pc.cross_entropy: label ", label, " at position ", i,
                       " is outside [0, ", classes, ")"));
    const float *row = x + i * classes;
    float mx = *std::max_element(row, row + classes);
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(row[c] - mx);
    y[i] = portable::crossEntropyOf(mx, sum, row[label]);
  }
  return absl::OkStatus();
}

PC_CLONES absl::Status pickLabels(const TensorView &values,
                                  const TensorView &labels,
                                  const TensorView &out) {
  if (absl::Status s = expectIds(labels, "pick labels"); !s.ok())
    return s;
  int64_t classes = values.shape.back();
  const float *x = values.as<float>();
  float *y = out.as<float>();
  for (int64_t i = 0, n = labels.numel(); i < n; ++i) {
    int64_t label = idAt(labels, i);
    y[i] = label >= 0 && label < classes ? x[i * classes + label] : 0.0f;
  }
  return absl::OkStatus();
}

absl::Status cast(const TensorView &in, const TensorView &out) {
  convertInto(in, out);
  return absl::OkStatus();
}

} // namespace pc::runtime::cpu

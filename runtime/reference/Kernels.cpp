//===- Kernels.cpp - Reference kernels on double arrays -------------------===//

#include "runtime/reference/Kernels.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace pc::reference {

Array Array::zeros(std::vector<int64_t> shape) {
  Array a;
  a.data.assign(product(shape), 0.0);
  a.shape = std::move(shape);
  return a;
}

namespace {
/// The row-major strides of `shape`.
Shape stridesOf(const Shape &shape) {
  Shape s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

/// The linear index into an array of `shape` (aligned from the back, size-1
/// dims broadcast) of the element at `index` of a larger shape.
int64_t broadcastIndex(const Shape &shape, const Shape &strides,
                       const Shape &index) {
  int64_t off = index.size() - shape.size(), linear = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1)
      linear += index[d + off] * strides[d];
  return linear;
}
} // namespace

Array elementwise(const Array &a, const std::function<double(double)> &fn) {
  Array r = a;
  for (double &x : r.data)
    x = fn(x);
  return r;
}

Array broadcastBinary(const Array &a, const Array &b, const Shape &resultShape,
                      const std::function<double(double, double)> &fn) {
  Array r = Array::zeros(resultShape);
  Shape sa = stridesOf(a.shape), sb = stridesOf(b.shape);
  for (int64_t i = 0; i < r.size(); ++i) {
    Shape idx = delinearize(resultShape, i);
    r.data[i] = fn(a.data[broadcastIndex(a.shape, sa, idx)],
                   b.data[broadcastIndex(b.shape, sb, idx)]);
  }
  return r;
}

Array broadcastTo(const Array &a, const Shape &shape) {
  return broadcastBinary(a, Array{{}, {0.0}}, shape,
                         [](double x, double) { return x; });
}

Array matmul(const Array &a, const Array &b, bool ta, bool tb,
             const Shape &resultShape) {
  Array r = Array::zeros(resultShape);
  size_t ra = a.shape.size(), rb = b.shape.size(), rr = resultShape.size();
  int64_t m = resultShape[rr - 2], n = resultShape[rr - 1];
  int64_t k = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  Shape batch(resultShape.begin(), resultShape.end() - 2);
  Shape aBatch(a.shape.begin(), a.shape.end() - 2);
  Shape bBatch(b.shape.begin(), b.shape.end() - 2);
  Shape sA = stridesOf(aBatch), sB = stridesOf(bBatch);
  int64_t aMat = a.shape[ra - 2] * a.shape[ra - 1];
  int64_t bMat = b.shape[rb - 2] * b.shape[rb - 1];
  for (int64_t bi = 0, nb = product(batch); bi < nb; ++bi) {
    Shape idx = delinearize(batch, bi);
    const double *pa = a.data.data() + broadcastIndex(aBatch, sA, idx) * aMat;
    const double *pb = b.data.data() + broadcastIndex(bBatch, sB, idx) * bMat;
    double *pr = r.data.data() + bi * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += (ta ? pa[p * m + i] : pa[i * k + p]) *
                 (tb ? pb[j * k + p] : pb[p * n + j]);
        pr[i * n + j] = acc;
      }
  }
  return r;
}

Array softmax(const Array &a, int64_t axis, bool log) {
  Array r = a;
  int64_t outer = product(Shape(a.shape.begin(), a.shape.begin() + axis));
  int64_t len = a.shape[axis];
  int64_t inner = product(Shape(a.shape.begin() + axis + 1, a.shape.end()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t i) -> double & {
        return r.data[(o * len + i) * inner + in];
      };
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < len; ++i)
        mx = std::max(mx, at(i));
      double sum = 0;
      for (int64_t i = 0; i < len; ++i)
        sum += std::exp(at(i) - mx);
      for (int64_t i = 0; i < len; ++i)
        at(i) = log ? at(i) - mx - std::log(sum) : std::exp(at(i) - mx) / sum;
    }
  return r;
}

Array normalize(const Array &x, int64_t axis, const Array &gamma,
                const Array *beta, double epsilon, bool rms) {
  Array r = x;
  int64_t inner = product(Shape(x.shape.begin() + axis, x.shape.end()));
  for (int64_t o = 0, outer = x.size() / std::max<int64_t>(inner, 1); o < outer;
       ++o) {
    double *p = r.data.data() + o * inner;
    double mean = 0, sq = 0;
    for (int64_t i = 0; i < inner; ++i) {
      mean += p[i];
      sq += p[i] * p[i];
    }
    mean /= inner;
    double var = sq / inner - (rms ? 0 : mean * mean);
    double scale = 1 / std::sqrt(var + epsilon);
    for (int64_t i = 0; i < inner; ++i)
      p[i] = ((rms ? p[i] : p[i] - mean) * scale) * gamma.data[i] +
             (beta ? beta->data[i] : 0.0);
  }
  return r;
}

Array reduce(const Array &a, const std::vector<int64_t> &axes, bool keepdim,
             Reduce kind) {
  size_t rank = a.shape.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t ax : axes)
    reduced[(ax + rank) % rank] = true;
  Shape kept, keptFull;
  for (size_t d = 0; d < rank; ++d) {
    keptFull.push_back(reduced[d] ? 1 : a.shape[d]);
    if (!reduced[d])
      kept.push_back(a.shape[d]);
  }
  Array r = Array::zeros(keptFull);
  if (kind == Reduce::Max)
    std::fill(r.data.begin(), r.data.end(),
              -std::numeric_limits<double>::infinity());
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d)
    if (reduced[d])
      count *= a.shape[d];
  Shape sr = stridesOf(keptFull);
  for (int64_t i = 0; i < a.size(); ++i) {
    Shape idx = delinearize(a.shape, i);
    int64_t o = 0;
    for (size_t d = 0; d < rank; ++d)
      if (!reduced[d])
        o += idx[d] * sr[d];
    if (kind == Reduce::Max)
      r.data[o] = std::max(r.data[o], a.data[i]);
    else
      r.data[o] += a.data[i];
  }
  if (kind == Reduce::Mean)
    for (double &x : r.data)
      x /= count;
  if (!keepdim)
    r.shape = kept;
  return r;
}

Array transpose(const Array &a, const std::vector<int64_t> &perm) {
  Shape shape;
  for (int64_t p : perm)
    shape.push_back(a.shape[p]);
  Array r = Array::zeros(shape);
  Shape sa = stridesOf(a.shape);
  for (int64_t i = 0; i < r.size(); ++i) {
    Shape idx = delinearize(shape, i);
    int64_t src = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      src += idx[d] * sa[perm[d]];
    r.data[i] = a.data[src];
  }
  return r;
}

Array slice(const Array &a, const Shape &start, const Shape &sizes) {
  Array r = Array::zeros(sizes);
  Shape sa = stridesOf(a.shape);
  for (int64_t i = 0; i < r.size(); ++i) {
    Shape idx = delinearize(sizes, i);
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      src += (idx[d] + start[d]) * sa[d];
    r.data[i] = a.data[src];
  }
  return r;
}

void place(Array &into, const Array &piece, const Shape &start) {
  Shape s = stridesOf(into.shape);
  for (int64_t i = 0; i < piece.size(); ++i) {
    Shape idx = delinearize(piece.shape, i);
    int64_t dst = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      dst += (idx[d] + start[d]) * s[d];
    into.data[dst] = piece.data[i];
  }
}

Array concat(const std::vector<Array> &parts, int64_t axis) {
  Shape shape = parts.front().shape;
  shape[axis] = 0;
  for (const Array &p : parts)
    shape[axis] += p.shape[axis];
  Array r = Array::zeros(shape);
  Shape start(shape.size(), 0);
  for (const Array &p : parts) {
    place(r, p, start);
    start[axis] += p.shape[axis];
  }
  return r;
}

absl::StatusOr<Array> embedding(const Array &ids, const Array &table,
                                bool zeroOutOfRange) {
  int64_t rows = table.shape[0], width = table.shape[1];
  Shape shape = ids.shape;
  shape.push_back(width);
  Array r = Array::zeros(shape);
  for (int64_t i = 0; i < ids.size(); ++i) {
    int64_t id = static_cast<int64_t>(ids.data[i]);
    if (id < 0 || id >= rows) {
      if (zeroOutOfRange)
        continue;
      return absl::OutOfRangeError(absl::StrCat("pc.embedding: id ", id,
                                                " at position ", i,
                                                " is outside [0, ", rows, ")"));
    }
    std::copy_n(table.data.begin() + id * width, width,
                r.data.begin() + i * width);
  }
  return r;
}

Array oneHot(const Array &labels, int64_t classes) {
  Shape shape = labels.shape;
  shape.push_back(classes);
  Array r = Array::zeros(shape);
  for (int64_t i = 0; i < labels.size(); ++i) {
    int64_t c = static_cast<int64_t>(labels.data[i]);
    if (c >= 0 && c < classes)
      r.data[i * classes + c] = 1;
  }
  return r;
}

Array embeddingGrad(const Array &ids, const Array &grad, int64_t rows) {
  int64_t width = grad.shape.back();
  Array r = Array::zeros({rows, width});
  for (int64_t i = 0; i < ids.size(); ++i) {
    int64_t id = static_cast<int64_t>(ids.data[i]);
    if (id < 0 || id >= rows)
      continue;
    for (int64_t j = 0; j < width; ++j)
      r.data[id * width + j] += grad.data[i * width + j];
  }
  return r;
}

Array causalMask(const Array &a, bool zero) {
  Array r = a;
  size_t rank = a.shape.size();
  int64_t q = a.shape[rank - 2], k = a.shape[rank - 1];
  for (int64_t i = 0; i < r.size(); ++i) {
    int64_t col = i % k, row = (i / k) % q;
    if (col > row)
      r.data[i] = zero ? 0.0 : -std::numeric_limits<double>::infinity();
  }
  return r;
}

namespace {
/// A row's mean and reciprocal standard deviation (two passes).
std::pair<double, double> rowStats(const double *row, int64_t n,
                                   double epsilon) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i)
    mean += row[i];
  mean /= n;
  for (int64_t i = 0; i < n; ++i)
    var += (row[i] - mean) * (row[i] - mean);
  return {mean, 1 / std::sqrt(var / n + epsilon)};
}
} // namespace

Array layerNormGrad(const Array &dy, const Array &x, const Array &gamma,
                    int64_t axis, double epsilon) {
  Array r = dy;
  int64_t inner = product(Shape(x.shape.begin() + axis, x.shape.end()));
  for (int64_t o = 0, outer = x.size() / std::max<int64_t>(inner, 1); o < outer;
       ++o) {
    const double *row = x.data.data() + o * inner;
    const double *g = dy.data.data() + o * inner;
    auto [mean, rstd] = rowStats(row, inner, epsilon);
    double a = 0, b = 0;
    for (int64_t i = 0; i < inner; ++i) {
      a += g[i] * gamma.data[i];
      b += g[i] * gamma.data[i] * (row[i] - mean) * rstd;
    }
    a /= inner;
    b /= inner;
    for (int64_t i = 0; i < inner; ++i)
      r.data[o * inner + i] =
          rstd * (g[i] * gamma.data[i] - a - (row[i] - mean) * rstd * b);
  }
  return r;
}

Array layerNormScaleGrad(const Array &dy, const Array &x, int64_t axis,
                         double epsilon) {
  Shape normalized(x.shape.begin() + axis, x.shape.end());
  int64_t inner = product(normalized);
  Array r = Array::zeros(normalized);
  for (int64_t o = 0, outer = x.size() / std::max<int64_t>(inner, 1); o < outer;
       ++o) {
    const double *row = x.data.data() + o * inner;
    const double *g = dy.data.data() + o * inner;
    auto [mean, rstd] = rowStats(row, inner, epsilon);
    for (int64_t i = 0; i < inner; ++i)
      r.data[i] += g[i] * (row[i] - mean) * rstd;
  }
  return r;
}

Array softmaxGrad(const Array &dy, const Array &y, int64_t axis) {
  Array r = dy;
  int64_t outer = product(Shape(y.shape.begin(), y.shape.begin() + axis));
  int64_t len = y.shape[axis];
  int64_t inner = product(Shape(y.shape.begin() + axis + 1, y.shape.end()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t i) { return (o * len + i) * inner + in; };
      double dot = 0;
      for (int64_t i = 0; i < len; ++i)
        dot += dy.data[at(i)] * y.data[at(i)];
      for (int64_t i = 0; i < len; ++i)
        r.data[at(i)] = y.data[at(i)] * (dy.data[at(i)] - dot);
    }
  return r;
}

absl::StatusOr<Array> crossEntropy(const Array &logits, const Array &labels) {
  int64_t classes = logits.shape.back();
  Array r = Array::zeros(labels.shape);
  for (int64_t i = 0; i < labels.size(); ++i) {
    int64_t label = static_cast<int64_t>(labels.data[i]);
    if (label < 0 || label >= classes)
      return absl::OutOfRangeError(
          absl::StrCat("pc.cross_entropy: label ", label, " at position ", i,
                       " is outside [0, ", classes, ")"));
    const double *row = logits.data.data() + i * classes;
    double mx = *std::max_element(row, row + classes), sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(row[c] - mx);
    r.data[i] = mx + std::log(sum) - row[label];
  }
  return r;
}

Array pickLabels(const Array &values, const Array &labels) {
  int64_t classes = values.shape.back();
  Array r = Array::zeros(labels.shape);
  for (int64_t i = 0; i < labels.size(); ++i) {
    int64_t label = static_cast<int64_t>(labels.data[i]);
    if (label >= 0 && label < classes)
      r.data[i] = values.data[i * classes + label];
  }
  return r;
}

Array combine(const std::vector<Array> &arrays, ReduceKind kind) {
  Array r = arrays.front();
  for (size_t m = 1; m < arrays.size(); ++m)
    for (int64_t i = 0; i < r.size(); ++i) {
      double x = arrays[m].data[i];
      switch (kind) {
      case ReduceKind::Sum:
      case ReduceKind::Avg:
        r.data[i] += x;
        break;
      case ReduceKind::Max:
        r.data[i] = std::max(r.data[i], x);
        break;
      case ReduceKind::Min:
        r.data[i] = std::min(r.data[i], x);
        break;
      }
    }
  if (kind == ReduceKind::Avg)
    for (double &x : r.data)
      x /= static_cast<double>(arrays.size());
  return r;
}

} // namespace pc::reference

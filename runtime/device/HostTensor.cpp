//===- HostTensor.cpp - Dense tensors in host memory ----------------------===//

#include "runtime/device/HostTensor.h"

#include "runtime/device/Tensor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace pc::runtime {

HostTensor HostTensor::zeros(std::vector<int64_t> shape, CommType type) {
  HostTensor t;
  t.bytes.assign(product(shape) * sizeOf(type), 0);
  t.shape = std::move(shape);
  t.type = type;
  return t;
}

absl::StatusOr<HostTensor> HostTensor::fromData(std::vector<int64_t> shape,
                                                CommType type, const void *data,
                                                size_t bytes) {
  auto fail = [&](const std::string &why) {
    return absl::InvalidArgumentError(
        absl::StrCat("HostTensor::fromData: ", nameOf(type), " of shape [",
                     absl::StrJoin(shape, ", "), "]: ", why));
  };
  // The size in bytes, computed without overflow: a hostile or mistaken
  // shape must not wrap around to a size that matches `bytes`.
  uint64_t want = static_cast<uint64_t>(sizeOf(type));
  for (int64_t d : shape) {
    if (d < 0)
      return fail("a negative dim");
    if (d > 0 &&
        want > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
      return fail("too large");
    want *= static_cast<uint64_t>(d);
  }
  if (want != bytes)
    return fail(absl::StrCat("takes ", want, " bytes, not ", bytes));
  if (bytes > 0 && !data)
    return fail("the data is null");
  HostTensor t = zeros(std::move(shape), type);
  copyBytes(t.data(), data, bytes);
  return t;
}

double HostTensor::get(int64_t i) const { return TensorView(*this).get(i); }

void HostTensor::set(int64_t i, double v) { TensorView(*this).set(i, v); }

HostTensor HostTensor::convert(CommType to) const {
  if (to == type)
    return *this;
  HostTensor out = zeros(shape, to);
  convertInto(*this, out);
  return out;
}

void copyBox(const char *src, std::span<const int64_t> srcShape,
             std::span<const int64_t> srcOffset, char *dst,
             std::span<const int64_t> dstShape,
             std::span<const int64_t> dstOffset, std::span<const int64_t> sizes,
             int64_t elemBytes) {
  const size_t rank = sizes.size();
  if (product(sizes) == 0)
    return;
  // A row is contiguous in both tensors: the innermost dim, and each next
  // one out while the box spans the dims inside it whole in both (a piece
  // split along dim 0 is one row; along the last, a row per outer index).
  size_t inner = rank; // the row is dims [inner, rank)
  int64_t row = elemBytes;
  while (inner > 0) {
    size_t d = inner - 1;
    row *= sizes[d];
    --inner;
    if (sizes[d] != srcShape[d] || sizes[d] != dstShape[d])
      break;
  }
  // The rows' strides and first offsets, in bytes.
  std::vector<int64_t> srcStride(rank, elemBytes), dstStride(rank, elemBytes);
  for (size_t d = rank; d-- > 1;) {
    srcStride[d - 1] = srcStride[d] * srcShape[d];
    dstStride[d - 1] = dstStride[d] * dstShape[d];
  }
  int64_t s = 0, t = 0;
  for (size_t d = 0; d < rank; ++d) {
    s += srcOffset[d] * srcStride[d];
    t += dstOffset[d] * dstStride[d];
  }
  // Walk the outer dims [0, inner) as an odometer: no division or
  // allocation per row, which made a collective's many short rows cost more
  // than their bytes.
  std::vector<int64_t> idx(inner, 0);
  while (true) {
    std::memcpy(dst + t, src + s, row);
    size_t d = inner;
    for (; d > 0; --d) {
      size_t k = d - 1;
      s += srcStride[k];
      t += dstStride[k];
      if (++idx[k] < sizes[k])
        break;
      s -= sizes[k] * srcStride[k];
      t -= sizes[k] * dstStride[k];
      idx[k] = 0;
    }
    if (d == 0)
      return;
  }
}

} // namespace pc::runtime

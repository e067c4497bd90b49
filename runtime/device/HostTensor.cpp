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
  size_t rank = sizes.size();
  if (product(sizes) == 0)
    return;
  if (rank == 0) {
    std::memcpy(dst, src, elemBytes);
    return;
  }
  // Copy rows of the innermost dim; walk the outer dims.
  std::vector<int64_t> srcStride(rank, 1), dstStride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) {
    srcStride[d] = srcStride[d + 1] * srcShape[d + 1];
    dstStride[d] = dstStride[d + 1] * dstShape[d + 1];
  }
  std::vector<int64_t> outer(sizes.begin(), sizes.end() - 1);
  int64_t rows = product(outer), row = sizes[rank - 1] * elemBytes;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> idx = delinearize(outer, r);
    int64_t s = 0, t = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t i = d + 1 < rank ? idx[d] : 0;
      s += (i + srcOffset[d]) * srcStride[d];
      t += (i + dstOffset[d]) * dstStride[d];
    }
    std::memcpy(dst + t * elemBytes, src + s * elemBytes, row);
  }
}

} // namespace pc::runtime

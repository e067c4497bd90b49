//===- HostTensor.cpp - Dense tensors in host memory ----------------------===//

#include "runtime/device/HostTensor.h"

#include "runtime/device/HalfFloat.h"

#include <cmath>
#include <cstring>

namespace pc::runtime {

HostTensor HostTensor::zeros(std::vector<int64_t> shape, CommType type) {
  HostTensor t;
  t.bytes.assign(product(shape) * sizeOf(type), 0);
  t.shape = std::move(shape);
  t.type = type;
  return t;
}

double HostTensor::get(int64_t i) const {
  switch (type) {
  case CommType::F32:
    return as<float>()[i];
  case CommType::F64:
    return as<double>()[i];
  case CommType::I32:
    return as<int32_t>()[i];
  case CommType::I64:
    return static_cast<double>(as<int64_t>()[i]);
  case CommType::F16:
    return f16ToFloat(as<uint16_t>()[i]);
  case CommType::BF16:
    return bf16ToFloat(as<uint16_t>()[i]);
  }
  return 0;
}

void HostTensor::set(int64_t i, double v) {
  switch (type) {
  case CommType::F32:
    as<float>()[i] = static_cast<float>(v);
    break;
  case CommType::F64:
    as<double>()[i] = v;
    break;
  case CommType::I32:
    as<int32_t>()[i] = static_cast<int32_t>(std::trunc(v));
    break;
  case CommType::I64:
    as<int64_t>()[i] = static_cast<int64_t>(std::trunc(v));
    break;
  case CommType::F16:
    as<uint16_t>()[i] = floatToF16(static_cast<float>(v));
    break;
  case CommType::BF16:
    as<uint16_t>()[i] = floatToBf16(static_cast<float>(v));
    break;
  }
}

HostTensor HostTensor::convert(CommType to) const {
  if (to == type)
    return *this;
  HostTensor out = zeros(shape, to);
  int64_t n = numel();
  // The common widenings and narrowings of 16-bit floats, without doubles.
  if (to == CommType::F32 && type == CommType::F16) {
    for (int64_t i = 0; i < n; ++i)
      out.as<float>()[i] = f16ToFloat(as<uint16_t>()[i]);
  } else if (to == CommType::F32 && type == CommType::BF16) {
    for (int64_t i = 0; i < n; ++i)
      out.as<float>()[i] = bf16ToFloat(as<uint16_t>()[i]);
  } else if (type == CommType::F32 && to == CommType::F16) {
    for (int64_t i = 0; i < n; ++i)
      out.as<uint16_t>()[i] = floatToF16(as<float>()[i]);
  } else if (type == CommType::F32 && to == CommType::BF16) {
    for (int64_t i = 0; i < n; ++i)
      out.as<uint16_t>()[i] = floatToBf16(as<float>()[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      out.set(i, get(i));
  }
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

//===- Tensor.cpp - Tensors in a device's memory, and views ---------------===//

#include "runtime/device/Tensor.h"

#include "runtime/device/HalfFloat.h"
#include "runtime/device/HostTensor.h"
#include "runtime/kernels/Clones.h"

#include <algorithm>
#include <cmath>

namespace pc::runtime {

TensorView::TensorView(const HostTensor &t)
    : shape(t.shape), type(t.type), ptr(const_cast<char *>(t.data())) {}

TensorView::TensorView(const Tensor &t)
    : shape(t.shape), type(t.type), ptr(t.data()) {}

double TensorView::get(int64_t i) const {
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
  case CommType::U8:
    return as<uint8_t>()[i];
  }
  return 0;
}

void TensorView::set(int64_t i, double v) const {
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
  case CommType::U8:
    as<uint8_t>()[i] =
        static_cast<uint8_t>(std::clamp(std::trunc(v), 0.0, 255.0));
    break;
  }
}

namespace {
// f16 conversions: x86-64-v3 has F16C, which converts 8 values in one
// instruction; the baseline calls libgcc per value, 10x slower per step.
PC_CLONES void widenF16(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f16ToFloat(in[i]);
}
PC_CLONES void narrowF16(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = floatToF16(in[i]);
}
} // namespace

void convertInto(const TensorView &from, const TensorView &to) {
  int64_t n = from.numel();
  CommType a = from.type, b = to.type;
  // The common widenings and narrowings of 16-bit floats, without doubles.
  if (a == b) {
    std::copy_n(from.data(), from.byteSize(), to.data());
  } else if (b == CommType::F32 && a == CommType::F16) {
    widenF16(from.as<uint16_t>(), to.as<float>(), n);
  } else if (b == CommType::F32 && a == CommType::BF16) {
    for (int64_t i = 0; i < n; ++i)
      to.as<float>()[i] = bf16ToFloat(from.as<uint16_t>()[i]);
  } else if (a == CommType::F32 && b == CommType::F16) {
    narrowF16(from.as<float>(), to.as<uint16_t>(), n);
  } else if (a == CommType::F32 && b == CommType::BF16) {
    for (int64_t i = 0; i < n; ++i)
      to.as<uint16_t>()[i] = floatToBf16(from.as<float>()[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      to.set(i, from.get(i));
  }
}

absl::StatusOr<Tensor> Tensor::allocate(Allocator &allocator,
                                        std::vector<int64_t> shape,
                                        CommType type) {
  absl::StatusOr<Buffer> buffer =
      allocator.allocate(product(shape) * sizeOf(type));
  if (!buffer.ok())
    return buffer.status();
  return Tensor(std::move(shape), type, *std::move(buffer));
}

} // namespace pc::runtime

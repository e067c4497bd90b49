//===- Reduce.cpp - Elementwise reductions of collectives -----------------===//

#include "runtime/comm/Reduce.h"

#include "runtime/device/HalfFloat.h"

#include <algorithm>

namespace pc::runtime {
namespace {

template <typename T>
void reduceInto(T *acc, const T *x, int64_t n, ReduceKind kind) {
  for (int64_t i = 0; i < n; ++i) {
    switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Avg:
      acc[i] += x[i];
      break;
    case ReduceKind::Max:
      acc[i] = std::max(acc[i], x[i]);
      break;
    case ReduceKind::Min:
      acc[i] = std::min(acc[i], x[i]);
      break;
    }
  }
}

/// 16-bit floats: widen, reduce in f32, round back.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void reduceInto16(uint16_t *acc, const uint16_t *x, int64_t n,
                  ReduceKind kind) {
  for (int64_t i = 0; i < n; ++i) {
    float a = Widen(acc[i]), b = Widen(x[i]);
    acc[i] = Narrow(kind == ReduceKind::Max   ? std::max(a, b)
                    : kind == ReduceKind::Min ? std::min(a, b)
                                              : a + b);
  }
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void divide16(uint16_t *x, int64_t n, int64_t by) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = Narrow(Widen(x[i]) / static_cast<float>(by));
}

template <typename T> void divide(T *x, int64_t n, int64_t by) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = static_cast<T>(x[i] / static_cast<T>(by));
}

} // namespace

void reduceInto(void *acc, const void *x, int64_t n, CommType type,
                ReduceKind kind) {
  switch (type) {
  case CommType::F16:
    return reduceInto16<f16ToFloat, floatToF16>(
        static_cast<uint16_t *>(acc), static_cast<const uint16_t *>(x), n,
        kind);
  case CommType::BF16:
    return reduceInto16<bf16ToFloat, floatToBf16>(
        static_cast<uint16_t *>(acc), static_cast<const uint16_t *>(x), n,
        kind);
  case CommType::F32:
    return reduceInto(static_cast<float *>(acc), static_cast<const float *>(x),
                      n, kind);
  case CommType::F64:
    return reduceInto(static_cast<double *>(acc),
                      static_cast<const double *>(x), n, kind);
  case CommType::I32:
    return reduceInto(static_cast<int32_t *>(acc),
                      static_cast<const int32_t *>(x), n, kind);
  case CommType::I64:
    return reduceInto(static_cast<int64_t *>(acc),
                      static_cast<const int64_t *>(x), n, kind);
  case CommType::U8:
    return reduceInto(static_cast<uint8_t *>(acc),
                      static_cast<const uint8_t *>(x), n, kind);
  }
}

void divide(void *x, int64_t n, CommType type, int64_t by) {
  switch (type) {
  case CommType::F16:
    return divide16<f16ToFloat, floatToF16>(static_cast<uint16_t *>(x), n, by);
  case CommType::BF16:
    return divide16<bf16ToFloat, floatToBf16>(static_cast<uint16_t *>(x), n,
                                              by);
  case CommType::F32:
    return divide(static_cast<float *>(x), n, by);
  case CommType::F64:
    return divide(static_cast<double *>(x), n, by);
  case CommType::I32:
    return divide(static_cast<int32_t *>(x), n, by);
  case CommType::I64:
    return divide(static_cast<int64_t *>(x), n, by);
  case CommType::U8:
    return divide(static_cast<uint8_t *>(x), n, by);
  }
}

} // namespace pc::runtime

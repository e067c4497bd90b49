//===- Reduce.cpp - Elementwise reductions of collectives -----------------===//

#include "runtime/comm/Reduce.h"

#include "runtime/device/HalfFloat.h"

#include <algorithm>

namespace pc::runtime {
namespace {

/// reduce(a, b): max and min keep a unless b is strictly past it, so the
/// order of the operands matters for NaN and signed zeros.
template <typename T> T combine(T a, T b, ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Max:
    return std::max(a, b);
  case ReduceKind::Min:
    return std::min(a, b);
  case ReduceKind::Sum:
  case ReduceKind::Avg:
    break;
  }
  return static_cast<T>(a + b);
}

/// acc[i] = reduce(acc[i], x[i]), or reduce(x[i], acc[i]) with XFirst.
template <bool XFirst, typename T>
void reduceInto(T *acc, const T *x, int64_t n, ReduceKind kind) {
  for (int64_t i = 0; i < n; ++i)
    acc[i] = XFirst ? combine(x[i], acc[i], kind) : combine(acc[i], x[i], kind);
}

/// 16-bit floats: widen, reduce in f32, round back.
template <bool XFirst, float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void reduceInto16(uint16_t *acc, const uint16_t *x, int64_t n,
                  ReduceKind kind) {
  for (int64_t i = 0; i < n; ++i) {
    float a = Widen(acc[i]), b = Widen(x[i]);
    acc[i] = Narrow(XFirst ? combine(b, a, kind) : combine(a, b, kind));
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

template <bool XFirst>
void reduceTyped(void *acc, const void *x, int64_t n, CommType type,
                 ReduceKind kind) {
  switch (type) {
  case CommType::F16:
    return reduceInto16<XFirst, f16ToFloat, floatToF16>(
        static_cast<uint16_t *>(acc), static_cast<const uint16_t *>(x), n,
        kind);
  case CommType::BF16:
    return reduceInto16<XFirst, bf16ToFloat, floatToBf16>(
        static_cast<uint16_t *>(acc), static_cast<const uint16_t *>(x), n,
        kind);
  case CommType::F32:
    return reduceInto<XFirst>(static_cast<float *>(acc),
                              static_cast<const float *>(x), n, kind);
  case CommType::F64:
    return reduceInto<XFirst>(static_cast<double *>(acc),
                              static_cast<const double *>(x), n, kind);
  case CommType::I32:
    return reduceInto<XFirst>(static_cast<int32_t *>(acc),
                              static_cast<const int32_t *>(x), n, kind);
  case CommType::I64:
    return reduceInto<XFirst>(static_cast<int64_t *>(acc),
                              static_cast<const int64_t *>(x), n, kind);
  case CommType::U8:
    return reduceInto<XFirst>(static_cast<uint8_t *>(acc),
                              static_cast<const uint8_t *>(x), n, kind);
  }
}

} // namespace

void reduceInto(void *acc, const void *x, int64_t n, CommType type,
                ReduceKind kind) {
  reduceTyped<false>(acc, x, n, type, kind);
}

void reduceOnto(void *acc, const void *x, int64_t n, CommType type,
                ReduceKind kind) {
  reduceTyped<true>(acc, x, n, type, kind);
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

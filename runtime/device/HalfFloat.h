//===- HalfFloat.h - f16 and bf16 storage conversions -----------*- C++ -*-===//
//
// The 16-bit float types are stored as their bits and computed in f32, as
// CPU backends do: a kernel widens its inputs, runs in f32 and rounds its
// outputs once, to nearest even. f16 uses the compiler's _Float16; bf16 is
// the upper half of an f32 and is rounded here.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_DEVICE_HALFFLOAT_H
#define PC_RUNTIME_DEVICE_HALFFLOAT_H

#include <cstdint>
#include <cstring>

namespace pc::runtime {

inline float f16ToFloat(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return static_cast<float>(h);
}

inline uint16_t floatToF16(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

inline float bf16ToFloat(uint16_t bits) {
  uint32_t w = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

inline uint16_t floatToBf16(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  if ((w & 0x7f800000u) == 0x7f800000u && (w & 0x7fffffu))
    return static_cast<uint16_t>((w >> 16) | 0x40); // A quiet NaN stays NaN.
  w += 0x7fffu + ((w >> 16) & 1); // Round to nearest, ties to even.
  return static_cast<uint16_t>(w >> 16);
}

} // namespace pc::runtime

#endif // PC_RUNTIME_DEVICE_HALFFLOAT_H

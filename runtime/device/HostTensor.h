//===- HostTensor.h - Dense tensors in host memory --------------*- C++ -*-===//
//
// A dense row-major tensor in host memory, and the strided box copy that
// kernels and collectives use to pack and unpack pieces.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_DEVICE_HOSTTENSOR_H
#define PC_RUNTIME_DEVICE_HOSTTENSOR_H

#include "dialect/Sharding.h"
#include "runtime/comm/Communicator.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

namespace pc::runtime {

/// memcpy that allows empty copies from or to null (an empty staging
/// vector's data()), which memcpy itself does not.
inline void copyBytes(void *dst, const void *src, size_t bytes) {
  if (bytes > 0)
    std::memcpy(dst, src, bytes);
}

struct HostTensor {
  std::vector<int64_t> shape;
  CommType type = CommType::F32;
  std::vector<char> bytes;

  int64_t numel() const { return product(shape); }
  /// Never null, even for an empty tensor: memcpy and BLAS take it.
  char *data() { return bytes.empty() ? emptyData() : bytes.data(); }
  const char *data() const {
    return bytes.empty() ? emptyData() : bytes.data();
  }
  size_t byteSize() const { return bytes.size(); }
  static HostTensor zeros(std::vector<int64_t> shape, CommType type);
  /// A tensor of `shape` and `type` holding a copy of the `bytes` bytes at
  /// `data` (row-major). InvalidArgument, naming the call, when `bytes` is
  /// not numel * sizeOf(type), a dim is negative, or `data` is null for a
  /// non-empty tensor: a size mismatch is a caller's bug that would
  /// otherwise read past the buffer.
  static absl::StatusOr<HostTensor> fromData(std::vector<int64_t> shape,
                                             CommType type, const void *data,
                                             size_t bytes);
  /// The same from typed values (float, double, int32_t or int64_t), the
  /// type following T: `HostTensor::fromData<float>({2, 3}, vec)`.
  template <typename T>
  static absl::StatusOr<HostTensor> fromData(std::vector<int64_t> shape,
                                             std::span<const T> values) {
    return fromData(std::move(shape), commTypeOf<T>(), values.data(),
                    values.size_bytes());
  }
  /// Element `i`, widened to double, and its assignment (rounded to the
  /// type; integers truncate). Slow paths: for generic kernels and files.
  double get(int64_t i) const;
  void set(int64_t i, double v);
  /// This tensor in `to`, element by element.
  HostTensor convert(CommType to) const;
  template <typename T> T *as() { return reinterpret_cast<T *>(data()); }
  template <typename T> const T *as() const {
    return reinterpret_cast<const T *>(data());
  }

private:
  template <typename T> static constexpr CommType commTypeOf() {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> ||
                      std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>,
                  "HostTensor::fromData takes float, double, int32_t or "
                  "int64_t values; use the untyped overload for f16 and bf16");
    if constexpr (std::is_same_v<T, float>)
      return CommType::F32;
    else if constexpr (std::is_same_v<T, double>)
      return CommType::F64;
    else if constexpr (std::is_same_v<T, int32_t>)
      return CommType::I32;
    else
      return CommType::I64;
  }
  /// What an empty tensor's data() points at; never read or written.
  static char *emptyData() {
    alignas(64) static char empty[64];
    return empty;
  }
};

/// Copies the box of `sizes` at `srcOffset` in `src` to `dstOffset` in
/// `dst` (row-major tensors of `elemBytes`-byte elements).
void copyBox(const char *src, std::span<const int64_t> srcShape,
             std::span<const int64_t> srcOffset, char *dst,
             std::span<const int64_t> dstShape,
             std::span<const int64_t> dstOffset, std::span<const int64_t> sizes,
             int64_t elemBytes);

} // namespace pc::runtime

#endif // PC_RUNTIME_DEVICE_HOSTTENSOR_H

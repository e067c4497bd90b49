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

#include <cstring>
#include <span>
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

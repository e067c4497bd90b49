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

#include <span>
#include <vector>

namespace pc::runtime {

struct HostTensor {
  std::vector<int64_t> shape;
  CommType type = CommType::F32;
  std::vector<char> bytes;

  int64_t numel() const { return product(shape); }
  char *data() { return bytes.data(); }
  const char *data() const { return bytes.data(); }
  size_t byteSize() const { return bytes.size(); }
  static HostTensor zeros(std::vector<int64_t> shape, CommType type);
  /// Element `i`, widened to double, and its assignment (rounded to the
  /// type; integers truncate). Slow paths: for generic kernels and files.
  double get(int64_t i) const;
  void set(int64_t i, double v);
  /// This tensor in `to`, element by element.
  HostTensor convert(CommType to) const;
  template <typename T> T *as() { return reinterpret_cast<T *>(bytes.data()); }
  template <typename T> const T *as() const {
    return reinterpret_cast<const T *>(bytes.data());
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

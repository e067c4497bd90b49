//===- Tensor.h - Tensors in a device's memory, and views -------*- C++ -*-===//
//
// A Tensor is a dense row-major tensor whose bytes are a Buffer of one
// device's allocator: what kernels read and write, what registers hold, and
// what the allocator's usage and peak count. Host tensors
// (runtime/device/HostTensor.h) exist only at the boundaries: inputs,
// outputs, checkpoints.
//
// A TensorView is a non-owning, host-addressable window on such bytes: a
// host tensor, or a tensor of a device whose memory the host addresses (the
// CPU device). CPU kernels and the CPU collectives work on views. A view
// carries no constness of its own: a kernel takes the views of its inputs
// as `const TensorView &` and only reads them.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_DEVICE_TENSOR_H
#define PC_RUNTIME_DEVICE_TENSOR_H

#include "dialect/Sharding.h"
#include "runtime/comm/Communicator.h"
#include "runtime/device/Device.h"

#include <span>
#include <vector>

namespace pc::runtime {

struct HostTensor;
class Tensor;

class TensorView {
public:
  TensorView(std::span<const int64_t> shape, CommType type, void *data)
      : shape(shape.begin(), shape.end()), type(type),
        ptr(static_cast<char *>(data)) {}
  /// Views of a host tensor, and of a tensor of a host-addressable device.
  TensorView(const HostTensor &t);
  TensorView(const Tensor &t);

  /// A copy (a few dims), so that a view outlives the shape it came from.
  std::vector<int64_t> shape;
  CommType type;

  char *data() const { return ptr; }
  int64_t numel() const { return product(shape); }
  size_t byteSize() const { return numel() * sizeOf(type); }
  template <typename T> T *as() const { return reinterpret_cast<T *>(ptr); }
  /// Element `i`, widened to double, and its assignment (rounded to the
  /// type; integers truncate). Slow paths: generic kernels and files.
  double get(int64_t i) const;
  void set(int64_t i, double v) const;

private:
  char *ptr;
};

/// `to` = `from`, element by element in `to`'s type (same shape).
void convertInto(const TensorView &from, const TensorView &to);

/// A tensor in one device's memory, freed with its buffer.
class Tensor {
public:
  Tensor() = default;
  Tensor(std::vector<int64_t> shape, CommType type, Buffer buffer)
      : shape(std::move(shape)), type(type), buffer(std::move(buffer)) {}

  /// An uninitialized tensor from `allocator`.
  static absl::StatusOr<Tensor>
  allocate(Allocator &allocator, std::vector<int64_t> shape, CommType type);
  /// `base`'s elements under `shape` (as many elements), sharing its
  /// memory, which the view keeps alive: a reshape moves no bytes. Tensors
  /// are immutable once made, so sharing is safe.
  static Tensor reshaped(std::shared_ptr<const Tensor> base,
                         std::vector<int64_t> shape) {
    Tensor t;
    t.shape = std::move(shape);
    t.type = base->type;
    t.base = std::move(base);
    return t;
  }

  std::vector<int64_t> shape;
  CommType type = CommType::F32;

  char *data() const {
    return base ? base->data() : static_cast<char *>(buffer.data());
  }
  size_t byteSize() const { return base ? base->byteSize() : buffer.bytes(); }
  int64_t numel() const { return product(shape); }
  template <typename T> T *as() const { return reinterpret_cast<T *>(data()); }

private:
  Buffer buffer;
  /// The tensor a view shares its memory with (none: it owns `buffer`).
  std::shared_ptr<const Tensor> base;
};

} // namespace pc::runtime

#endif // PC_RUNTIME_DEVICE_TENSOR_H

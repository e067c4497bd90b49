//===- KernelContext.h - Where a kernel runs, and its memory ----*- C++ -*-===//
//
// A kernel sees its rank's Device, the Stream its firing runs on, and a
// TensorAllocator: the only way a kernel, a binding or the executor gets
// device memory for a tensor. The tensor allocator takes buffers from the
// device's allocator and keeps the executor's own count of the bytes of the
// tensors alive; the two must agree (a kernel that took memory behind the
// executor's back, or a buffer that outlived its tensor, shows as a
// difference, which a test checks on the GPT).
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_KERNELCONTEXT_H
#define PC_RUNTIME_EXEC_KERNELCONTEXT_H

#include "runtime/device/Device.h"
#include "runtime/device/Tensor.h"

#include <memory>
#include <mutex>

namespace pc::runtime {

/// Live bytes of tensors, as the executor counts them.
struct TensorBytes {
  int64_t live = 0;
  int64_t peak = 0;
};

class TensorAllocator {
public:
  explicit TensorAllocator(Device &device) : dev(device) {}
  TensorAllocator(const TensorAllocator &) = delete;
  TensorAllocator &operator=(const TensorAllocator &) = delete;
  /// Every tensor it gave out must be gone first.
  ~TensorAllocator();

  /// An uninitialized tensor of `shape` and `type` in the device's memory,
  /// counted until its last reference goes. ResourceExhausted (from the
  /// device) when it does not fit.
  absl::StatusOr<std::shared_ptr<Tensor>> allocate(std::vector<int64_t> shape,
                                                   CommType type);

  TensorBytes count() const;
  /// Starts a new peak from the live bytes now, here and in the device's
  /// allocator.
  void resetPeak();
  Device &device() const { return dev; }

private:
  struct Ledger {
    // One lock around each allocation and its count, and each release and
    // its count: the device's allocator and the ledger then see the same
    // sequence, so their peaks are comparable exactly.
    std::mutex mu;
    TensorBytes bytes;
  };
  Device &dev;
  std::shared_ptr<Ledger> ledger = std::make_shared<Ledger>();
};

/// What a kernel runs with at one firing.
class KernelContext {
public:
  KernelContext(TensorAllocator &tensors, Stream &stream)
      : tensors(tensors), onStream(stream) {}

  Device &device() const { return tensors.device(); }
  /// The stream this firing runs on: a backend whose kernels are
  /// asynchronous enqueues its work here; the CPU backend's kernels run on
  /// the stream's worker already, and compute inline.
  Stream &stream() const { return onStream; }
  /// An output or a temporary, uninitialized.
  absl::StatusOr<std::shared_ptr<Tensor>> allocate(std::vector<int64_t> shape,
                                                   CommType type) const {
    return tensors.allocate(std::move(shape), type);
  }

private:
  TensorAllocator &tensors;
  Stream &onStream;
};

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_KERNELCONTEXT_H

//===- Device.h - The device abstraction of the runtime ---------*- C++ -*-===//
//
// What the actor runtime needs from a device, shaped after asynchronous
// accelerators so that the CUDA backend implements the same interface:
//  - an allocator with per-device usage and peak tracking, whose buffers are
//    RAII handles;
//  - streams: FIFO queues of work that run asynchronously to the caller and
//    to each other;
//  - events: points in a stream that other streams (or the host) wait for;
//  - asynchronous copies, ordered on a stream.
// Errors are absl::Status values; a failed task poisons its stream, whose
// later tasks are skipped and whose synchronize() returns the first error.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_DEVICE_DEVICE_H
#define PC_RUNTIME_DEVICE_DEVICE_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace pc::runtime {

class Allocator;

/// Memory on one device, released when the handle dies.
class Buffer {
public:
  Buffer() = default;
  Buffer(Allocator *owner, void *data, size_t bytes)
      : owner(owner), ptr(data), size(bytes) {}
  Buffer(Buffer &&other) noexcept { *this = std::move(other); }
  Buffer &operator=(Buffer &&other) noexcept;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { reset(); }

  void *data() const { return ptr; }
  size_t bytes() const { return size; }
  /// True for a live allocation (zero bytes included).
  explicit operator bool() const { return owner != nullptr; }
  /// Releases the memory now.
  void reset();

private:
  Allocator *owner = nullptr;
  void *ptr = nullptr;
  size_t size = 0;
};

/// Byte counts of one allocator.
struct MemoryStats {
  int64_t inUse = 0;
  int64_t peak = 0;
  int64_t allocations = 0;
  /// Bytes the allocator holds for reuse, beyond inUse.
  int64_t cached = 0;
};

class Allocator {
public:
  virtual ~Allocator() = default;
  /// `bytes` of memory; ResourceExhausted when the device's capacity would
  /// be exceeded.
  virtual absl::StatusOr<Buffer> allocate(size_t bytes) = 0;
  virtual MemoryStats stats() const = 0;
  /// Starts a new peak measurement from the current usage.
  virtual void resetPeak() = 0;

protected:
  friend class Buffer;
  virtual void release(void *data, size_t bytes) = 0;
};

/// Names the calling thread `name` (its first 15 characters, as Linux
/// keeps them) where the platform allows, so that `top -H`, `perf` and
/// debuggers tell a rank's threads apart; elsewhere, nothing.
void nameThisThread(std::string_view name);

/// A task of a stream; its status poisons the stream when not OK.
using Task = std::function<absl::Status()>;

class Event;

class Stream {
public:
  virtual ~Stream() = default;
  /// Queues `task` after everything queued before on this stream.
  virtual void enqueue(Task task) = 0;
  /// Makes later tasks of this stream wait until `event` has happened.
  virtual void waitFor(const Event &event) = 0;
  /// Runs `fn` on the host once everything queued before it has run, even
  /// on a poisoned stream, with the stream's first error (OK when none). The
  /// actor runtime learns of finished firings through it; on CUDA, an
  /// event recorded on the stream that a completion thread waits for.
  virtual void
  enqueueCallback(std::function<void(const absl::Status &)> fn) = 0;
  /// Blocks until every queued task ran; returns the first error.
  virtual absl::Status synchronize() = 0;
  virtual const std::string &name() const = 0;
  /// The backend's own handle of the queue its kernels launch on (a
  /// cudaStream_t); null where kernels run on the stream's worker itself.
  virtual void *nativeHandle() const { return nullptr; }
};

class Event {
public:
  virtual ~Event() = default;
  /// Marks the point after everything queued on `stream` so far.
  virtual void record(Stream &stream) = 0;
  /// Blocks the host until the last recorded point has happened.
  virtual absl::Status synchronize() const = 0;
  /// True when the last recorded point has happened (or none was recorded).
  virtual bool query() const = 0;
};

class Device {
public:
  virtual ~Device() = default;
  virtual const std::string &name() const = 0;
  /// The kind of device, as a mesh names it ("cpu", "cuda"): it selects the
  /// kernels (runtime/exec/KernelRegistry.h).
  virtual std::string_view kind() const = 0;
  virtual Allocator &allocator() = 0;
  virtual absl::StatusOr<std::unique_ptr<Stream>>
  createStream(const std::string &name) = 0;
  virtual std::unique_ptr<Event> createEvent() = 0;
  /// Copies `bytes` from `src` to `dst` in `stream`'s order. Both may be on
  /// this device or on the host.
  virtual void copyAsync(void *dst, const void *src, size_t bytes,
                         Stream &stream) = 0;
};

} // namespace pc::runtime

#endif // PC_RUNTIME_DEVICE_DEVICE_H

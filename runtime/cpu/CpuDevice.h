//===- CpuDevice.h - A CPU virtual device -----------------------*- C++ -*-===//
//
// One CPU virtual device: host memory with usage accounting and an optional
// capacity, and streams that are worker threads running their tasks in
// order. Many of these share one process for `--devices cpu:N`.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_CPU_CPUDEVICE_H
#define PC_RUNTIME_CPU_CPUDEVICE_H

#include "runtime/device/Device.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace pc::runtime {

class CpuAllocator final : public Allocator {
public:
  /// `capacity` bytes at most (0: unlimited); `device` names the device in
  /// errors.
  CpuAllocator(std::string device, int64_t capacity);
  ~CpuAllocator() override;

  absl::StatusOr<Buffer> allocate(size_t bytes) override;
  MemoryStats stats() const override;
  void resetPeak() override;
  /// Whether released blocks are kept for reuse (not under sanitizers).
  static bool caches();

private:
  void release(void *data, size_t bytes) override;

  /// Frees every cached block.
  void trimCache();
  int64_t cachedBytesNow() const;

  std::string device;
  int64_t capacity;
  std::atomic<int64_t> inUse{0}, peak{0}, allocations{0};
  /// Takes a cached block of `rounded` bytes, or returns null.
  void *takeCached(size_t rounded);
  /// Frees the block released longest ago.
  void evictOldest();

  /// Released blocks of 64 KiB and more, for the next allocation of their
  /// size: a training step allocates the same sizes every step, and fresh
  /// pages from the kernel cost a fault and a zeroing each (about a tenth
  /// of a GPT step on CPU). What is held stays within twice the highest
  /// use seen (or within the capacity); past it, the blocks released
  /// longest ago go first, so sizes of a step's start-up or of an earlier
  /// shape do not crowd out the sizes every step uses.
  struct Cached {
    void *data;
    size_t size;
  };
  mutable std::mutex cacheMu;
  std::list<Cached> released; // oldest first
  std::unordered_map<size_t, std::vector<std::list<Cached>::iterator>>
      bySize; // per size, oldest first
  int64_t cachedBytes = 0, highest = 0;
};

class CpuStream final : public Stream {
public:
  /// `threads`: the OpenMP threads of the kernels that run on it (set on
  /// its worker, so they are this stream's own, not the process's).
  explicit CpuStream(std::string name, int threads = 1);
  /// Runs what is queued, then stops the worker.
  ~CpuStream() override;

  void enqueue(Task task) override;
  void waitFor(const Event &event) override;
  /// Events use it too, so that waiters learn of failures instead of
  /// waiting forever.
  void enqueueCallback(std::function<void(const absl::Status &)> fn) override;
  absl::Status synchronize() override;
  const std::string &name() const override { return streamName; }

private:
  struct Item {
    Task task;
    std::function<void(const absl::Status &)> control;
  };
  void run();
  void push(Item item);

  std::string streamName;
  int threads;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Item> queue;
  int64_t pending = 0;
  bool stopping = false;
  absl::Status error;
  std::thread worker; // started by the first push
};

class CpuEvent final : public Event {
public:
  CpuEvent();
  void record(Stream &stream) override;
  absl::Status synchronize() const override;
  bool query() const override;

  /// A task that waits for the point recorded last before this call, and
  /// fails with the recording stream's error. It keeps the event's state
  /// alive, so the event itself may be destroyed first.
  Task waitTask() const;

private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    int64_t recorded = 0, completed = 0;
    absl::Status error;
  };
  static absl::Status wait(State &state, int64_t generation);
  std::shared_ptr<State> state;
};

class CpuDevice final : public Device {
public:
  /// Device `index` of the process, with `capacity` bytes (0: unlimited);
  /// its kernels use `threads` threads. `kind` chooses its kernels: "cpu",
  /// or kPortableCpuKind (runtime/exec/Backend.h) for the GPU backend's
  /// kernels built for the host.
  explicit CpuDevice(int index, int64_t capacity = 0, int threads = 1,
                     std::string kind = "cpu");

  const std::string &name() const override { return deviceName; }
  std::string_view kind() const override { return deviceKind; }
  Allocator &allocator() override { return alloc; }
  absl::StatusOr<std::unique_ptr<Stream>>
  createStream(const std::string &name) override;
  std::unique_ptr<Event> createEvent() override;
  void copyAsync(void *dst, const void *src, size_t bytes,
                 Stream &stream) override;

private:
  std::string deviceName, deviceKind;
  CpuAllocator alloc;
  int threads;
};

} // namespace pc::runtime

#endif // PC_RUNTIME_CPU_CPUDEVICE_H

//===- CudaDevice.h - A CUDA GPU behind the runtime's Device ----*- C++ -*-===//
//
// One GPU as the actor runtime sees a device (runtime/device/Device.h):
//  - streams: a CUDA stream and a host worker that runs the stream's tasks
//    in order; a task launches asynchronous GPU work on the CUDA stream
//    (nativeHandle()), so the worker runs ahead of the GPU. A callback is
//    an event recorded on the CUDA stream, which the stream's completion
//    thread waits on, in order, before it runs the callback: the GPU never
//    waits for the host, and a callback may drop tensors (CUDA calls).
//  - events: each record is a fresh CUDA event, so that a stream waiting
//    for one point never waits for a later one (which could wait for it);
//  - a caching allocator with per-device usage, peak and an optional
//    capacity. A released block is reused once every stream of the device
//    has passed the point of its release (an event per stream, recorded at
//    release): work already queued may still read it, work queued later
//    cannot.
//  - copies between host and device through pinned staging when the host
//    side is pageable, so that they stay asynchronous.
// Errors name the device, the call and CUDA's message.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_CUDA_CUDADEVICE_H
#define PC_RUNTIME_CUDA_CUDADEVICE_H

#include "runtime/device/Device.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace pc::cuda {

using runtime::Allocator;
using runtime::Buffer;
using runtime::MemoryStats;
using runtime::Stream;
using runtime::Task;

/// CUDA's error as a status naming the device and the call; OK on success.
absl::Status cudaCheck(int error, const std::string &device, const char *call);

class CudaDevice;

class CudaAllocator final : public Allocator {
public:
  CudaAllocator(CudaDevice &device, int64_t capacity);
  ~CudaAllocator() override;

  absl::StatusOr<Buffer> allocate(size_t bytes) override;
  MemoryStats stats() const override;
  void resetPeak() override;

private:
  void release(void *data, size_t bytes) override;
  /// Frees every cached block whose release every stream has passed
  /// (waiting for them when `wait`).
  void trim(bool wait);

  struct Block {
    void *data;
    size_t size;
    /// One event per stream of the device, recorded at release.
    std::vector<void *> events;
  };
  bool ready(const Block &b) const;
  /// Gives a reused or freed block's events back to `eventPool` (under mu).
  void recycleEvents(Block &b);

  CudaDevice &device;
  int64_t capacity;
  std::atomic<int64_t> inUse{0}, peak{0}, allocations{0};
  mutable std::mutex mu;
  std::map<size_t, std::list<Block>> cached; // by rounded size, oldest first
  int64_t cachedBytes = 0;
  /// Events whose blocks were reused, for the next releases: a release
  /// records one per stream, and creating them cost more than the kernels
  /// of a small op.
  std::vector<void *> eventPool;
};

class CudaStream final : public Stream {
public:
  CudaStream(CudaDevice &device, std::string name);
  /// Runs what is queued, waits for the GPU, then stops the worker.
  ~CudaStream() override;

  void enqueue(Task task) override;
  void waitFor(const runtime::Event &event) override;
  void enqueueCallback(std::function<void(const absl::Status &)> fn) override;
  absl::Status synchronize() override;
  const std::string &name() const override { return streamName; }
  void *nativeHandle() const override { return stream; }

  /// Runs `control` on the worker even when the stream is poisoned, with
  /// the stream's first error (how events record and callbacks launch).
  void control(std::function<void(const absl::Status &)> fn);

private:
  struct Item {
    Task task;
    std::function<void(const absl::Status &)> control;
  };
  void run();

public:
  /// Callbacks behind their GPU work: each waits, in stream order, on
  /// `completer`'s thread for the event recorded after that work, then
  /// runs. An event rather than a host function in the stream: a host
  /// function stalls the stream until CUDA's thread has run it, a round
  /// trip after every firing (the first GPU run: 55 us per firing).
  struct Completions {
    struct Entry {
      std::function<void(const absl::Status &)> fn;
      absl::Status status;
      void *event = nullptr; // cudaEvent_t; none when recording failed
    };
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Entry> ready;
    /// Events that have fired, for reuse.
    std::vector<void *> pool;
    /// Launched and not yet run.
    int64_t outstanding = 0;
    bool stopping = false;
  };

private:
  void complete();
  std::shared_ptr<Completions> completions = std::make_shared<Completions>();
  std::thread completer;

  CudaDevice &device;
  std::string streamName;
  void *stream = nullptr; // cudaStream_t
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Item> queue;
  int64_t pending = 0;
  bool stopping = false;
  absl::Status error;
  std::thread worker;
};

class CudaEvent final : public runtime::Event {
public:
  explicit CudaEvent(CudaDevice &device) : device(device) {}
  void record(Stream &stream) override;
  absl::Status synchronize() const override;
  bool query() const override;

  /// One recorded point: a CUDA event, issued once the recording stream's
  /// worker reaches it.
  struct Point {
    std::mutex mu;
    std::condition_variable cv;
    bool issued = false;
    absl::Status error;
    void *event = nullptr; // cudaEvent_t
    ~Point();
    /// Blocks until the point is issued; its recording stream's error.
    absl::Status waitIssued();
  };
  std::shared_ptr<Point> last() const;

private:
  CudaDevice &device;
  mutable std::mutex mu;
  std::shared_ptr<Point> point;
};

class CudaDevice final : public runtime::Device {
public:
  /// GPU `ordinal` of this process, named `name` ("cuda:0"), with
  /// `capacity` bytes (0: the GPU's).
  static absl::StatusOr<std::unique_ptr<CudaDevice>>
  create(int ordinal, std::string name, int64_t capacity);
  ~CudaDevice() override;

  const std::string &name() const override { return deviceName; }
  std::string_view kind() const override { return "cuda"; }
  Allocator &allocator() override { return *alloc; }
  absl::StatusOr<std::unique_ptr<Stream>>
  createStream(const std::string &name) override;
  std::unique_ptr<runtime::Event> createEvent() override;
  void copyAsync(void *dst, const void *src, size_t bytes,
                 Stream &stream) override;

  int ordinal() const { return gpu; }
  /// Makes this device current on the calling thread.
  absl::Status makeCurrent() const;
  /// The CUDA streams alive now (the allocator records its release events
  /// on each).
  std::vector<void *> liveStreams();

private:
  friend class CudaStream;
  CudaDevice(int ordinal, std::string name);
  void addStream(void *stream);
  void removeStream(void *stream);

  int gpu;
  std::string deviceName;
  std::unique_ptr<CudaAllocator> alloc;
  std::mutex streamsMu;
  std::vector<void *> streams;
  /// Pinned staging for copies from and to pageable host memory.
  std::mutex stagingMu;
  void *staging = nullptr;
  size_t stagingBytes = 0;
};

} // namespace pc::cuda

#endif // PC_RUNTIME_CUDA_CUDADEVICE_H

//===- CudaDevice.cpp - A CUDA GPU behind the runtime's Device ------------===//

#include "runtime/cuda/CudaDevice.h"

#include "absl/strings/str_cat.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>

namespace pc::cuda {

absl::Status cudaCheck(int error, const std::string &device, const char *call) {
  if (error == cudaSuccess)
    return absl::OkStatus();
  auto e = static_cast<cudaError_t>(error);
  std::string message =
      absl::StrCat(device, ": ", call, ": ", cudaGetErrorString(e));
  return e == cudaErrorMemoryAllocation ? absl::ResourceExhaustedError(message)
                                        : absl::InternalError(message);
}

namespace {
/// Blocks are rounded to this, so that sizes recur and align for any type.
constexpr size_t kRound = 512;
size_t rounded(size_t bytes) {
  return std::max<size_t>(kRound, (bytes + kRound - 1) / kRound * kRound);
}
/// Pinned staging per device for copies from and to pageable host memory.
constexpr size_t kStagingBytes = 8 << 20;
} // namespace

//===-- Allocator -------------------------------------------------------===//

namespace {
/// Makes `device` current on this thread until the guard dies, then the
/// thread's own again: tensors die, and get made, on threads of any device.
class CurrentDevice {
public:
  explicit CurrentDevice(const CudaDevice &device) {
    if (cudaGetDevice(&previous) != cudaSuccess)
      previous = -1;
    (void)device.makeCurrent();
  }
  ~CurrentDevice() {
    if (previous >= 0)
      cudaSetDevice(previous);
  }

private:
  int previous = -1;
};
} // namespace

CudaAllocator::CudaAllocator(CudaDevice &device, int64_t capacity)
    : device(device), capacity(capacity) {}

CudaAllocator::~CudaAllocator() {
  (void)device.makeCurrent();
  trim(/*wait=*/true);
  for (void *e : eventPool)
    cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

bool CudaAllocator::ready(const Block &b) const {
  for (void *e : b.events)
    if (cudaEventQuery(static_cast<cudaEvent_t>(e)) != cudaSuccess)
      return false;
  return true;
}

void CudaAllocator::recycleEvents(Block &b) {
  eventPool.insert(eventPool.end(), b.events.begin(), b.events.end());
  b.events.clear();
}

void CudaAllocator::trim(bool wait) {
  std::lock_guard<std::mutex> lock(mu);
  for (auto &[size, blocks] : cached)
    for (auto it = blocks.begin(); it != blocks.end();) {
      if (wait)
        for (void *e : it->events)
          cudaEventSynchronize(static_cast<cudaEvent_t>(e));
      else if (!ready(*it)) {
        ++it;
        continue;
      }
      recycleEvents(*it);
      cudaFree(it->data);
      cachedBytes -= static_cast<int64_t>(it->size);
      it = blocks.erase(it);
    }
}

absl::StatusOr<Buffer> CudaAllocator::allocate(size_t bytes) {
  int64_t now = inUse.fetch_add(static_cast<int64_t>(bytes)) +
                static_cast<int64_t>(bytes);
  if (capacity > 0 && now > capacity) {
    inUse.fetch_sub(static_cast<int64_t>(bytes));
    return absl::ResourceExhaustedError(
        absl::StrCat(device.name(), ": allocating ", bytes, " bytes would use ",
                     now, " bytes, more than its capacity of ", capacity));
  }
  size_t size = rounded(bytes);
  void *data = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cached.find(size);
    if (it != cached.end())
      for (auto b = it->second.begin(); b != it->second.end(); ++b)
        if (ready(*b)) {
          data = b->data;
          recycleEvents(*b);
          it->second.erase(b);
          cachedBytes -= static_cast<int64_t>(size);
          break;
        }
  }
  if (!data) {
    CurrentDevice current(device);
    cudaError_t e = cudaMalloc(&data, size);
    if (e == cudaErrorMemoryAllocation) {
      // Give the cache back and try once more.
      (void)cudaGetLastError();
      trim(/*wait=*/true);
      e = cudaMalloc(&data, size);
    }
    if (e != cudaSuccess) {
      inUse.fetch_sub(static_cast<int64_t>(bytes));
      return cudaCheck(e, device.name(),
                       absl::StrCat("cudaMalloc of ", bytes, " bytes").c_str());
    }
  }
  allocations.fetch_add(1);
  int64_t seen = peak.load();
  while (now > seen && !peak.compare_exchange_weak(seen, now)) {
  }
  return Buffer(this, data, bytes);
}

void CudaAllocator::release(void *data, size_t bytes) {
  inUse.fetch_sub(static_cast<int64_t>(bytes));
  Block b{data, rounded(bytes), {}};
  CurrentDevice current(device);
  // Work already queued on any stream may still read the block; work
  // queued after this point cannot.
  std::vector<void *> streams = device.liveStreams();
  std::vector<void *> pooled;
  {
    std::lock_guard<std::mutex> lock(mu);
    size_t take = std::min(streams.size(), eventPool.size());
    pooled.assign(eventPool.end() - take, eventPool.end());
    eventPool.resize(eventPool.size() - take);
  }
  for (void *s : streams) {
    cudaEvent_t e = nullptr;
    if (!pooled.empty()) {
      e = static_cast<cudaEvent_t>(pooled.back());
      pooled.pop_back();
    } else if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) !=
               cudaSuccess) {
      cudaDeviceSynchronize();
      continue;
    }
    cudaEventRecord(e, static_cast<cudaStream_t>(s));
    b.events.push_back(e);
  }
  std::lock_guard<std::mutex> lock(mu);
  cachedBytes += static_cast<int64_t>(b.size);
  cached[b.size].push_back(std::move(b));
}

MemoryStats CudaAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu);
  return {inUse.load(), peak.load(), allocations.load(), cachedBytes};
}

void CudaAllocator::resetPeak() { peak.store(inUse.load()); }

//===-- Streams ---------------------------------------------------------===//

CudaStream::CudaStream(CudaDevice &device, std::string name)
    : device(device), streamName(std::move(name)) {
  (void)device.makeCurrent();
  cudaStream_t s = nullptr;
  error = cudaCheck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                    device.name(), "cudaStreamCreate");
  stream = s;
  if (stream)
    device.addStream(stream);
  worker = std::thread([this] { run(); });
  completer = std::thread([this] { complete(); });
}

void CudaStream::complete() {
  (void)device.makeCurrent();
  Completions &c = *completions;
  std::unique_lock<std::mutex> lock(c.mu);
  for (;;) {
    c.cv.wait(lock, [&] { return c.stopping || !c.ready.empty(); });
    if (c.ready.empty())
      break;
    Completions::Entry e = std::move(c.ready.front());
    c.ready.pop_front();
    lock.unlock();
    if (e.event) // a blocking-sync event: this thread sleeps, not spins
      if (absl::Status s =
              cudaCheck(cudaEventSynchronize(static_cast<cudaEvent_t>(e.event)),
                        device.name(), "cudaEventSynchronize");
          !s.ok() && e.status.ok())
        e.status = s;
    e.fn(e.status);
    lock.lock();
    if (e.event)
      c.pool.push_back(e.event);
    --c.outstanding;
    c.cv.notify_all();
  }
  for (void *e : c.pool)
    cudaEventDestroy(static_cast<cudaEvent_t>(e));
  c.pool.clear();
}

CudaStream::~CudaStream() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  cv.notify_all();
  worker.join();
  if (stream)
    cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  {
    // Every launched callback has been handed over (the stream is idle);
    // run them, then stop.
    std::unique_lock<std::mutex> lock(completions->mu);
    completions->cv.wait(lock, [&] { return completions->outstanding == 0; });
    completions->stopping = true;
  }
  completions->cv.notify_all();
  completer.join();
  if (stream) {
    device.removeStream(stream);
    cudaStreamDestroy(static_cast<cudaStream_t>(stream));
  }
}

void CudaStream::run() {
  absl::Status current = device.makeCurrent();
  for (;;) {
    Item item;
    absl::Status failed;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty())
        return;
      item = std::move(queue.front());
      queue.pop_front();
      if (error.ok() && !current.ok())
        error = current;
      failed = error;
    }
    absl::Status s;
    if (item.control) {
      item.control(failed);
    } else if (failed.ok()) {
      s = item.task();
      // A launch that failed without saying so.
      if (s.ok())
        s = cudaCheck(cudaPeekAtLastError(), device.name(), streamName.c_str());
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!s.ok() && error.ok())
        error = s;
      --pending;
    }
    cv.notify_all();
  }
}

void CudaStream::enqueue(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu);
    queue.push_back({std::move(task), nullptr});
    ++pending;
  }
  cv.notify_all();
}

void CudaStream::control(std::function<void(const absl::Status &)> fn) {
  {
    std::lock_guard<std::mutex> lock(mu);
    queue.push_back({nullptr, std::move(fn)});
    ++pending;
  }
  cv.notify_all();
}

void CudaStream::waitFor(const runtime::Event &event) {
  std::shared_ptr<CudaEvent::Point> point =
      static_cast<const CudaEvent &>(event).last();
  if (!point)
    return;
  enqueue([this, point]() -> absl::Status {
    if (absl::Status s = point->waitIssued(); !s.ok())
      return s;
    return cudaCheck(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream),
                                         static_cast<cudaEvent_t>(point->event),
                                         0),
                     device.name(), "cudaStreamWaitEvent");
  });
}

void CudaStream::enqueueCallback(std::function<void(const absl::Status &)> fn) {
  control([this, fn = std::move(fn)](const absl::Status &failed) mutable {
    Completions &c = *completions;
    cudaEvent_t event = nullptr;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      ++c.outstanding;
      if (!c.pool.empty()) {
        event = static_cast<cudaEvent_t>(c.pool.back());
        c.pool.pop_back();
      }
    }
    cudaError_t e = cudaSuccess;
    if (!event)
      e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming |
                                               cudaEventBlockingSync);
    if (e == cudaSuccess)
      e = cudaEventRecord(event, static_cast<cudaStream_t>(stream));
    absl::Status status = failed;
    if (e != cudaSuccess) {
      // No event to wait on: the callback runs next, with the error.
      if (status.ok())
        status = cudaCheck(e, device.name(), "cudaEventRecord");
      if (event)
        cudaEventDestroy(event);
      event = nullptr;
    }
    {
      std::lock_guard<std::mutex> lock(c.mu);
      c.ready.push_back({std::move(fn), std::move(status), event});
    }
    c.cv.notify_all();
  });
}

absl::Status CudaStream::synchronize() {
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return pending == 0; });
  }
  absl::Status s =
      stream
          ? cudaCheck(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
                      device.name(), "cudaStreamSynchronize")
          : absl::OkStatus();
  {
    // And the callbacks of what ran.
    std::unique_lock<std::mutex> lock(completions->mu);
    completions->cv.wait(lock, [&] { return completions->outstanding == 0; });
  }
  std::lock_guard<std::mutex> lock(mu);
  if (!s.ok() && error.ok())
    error = s;
  return error;
}

//===-- Events ----------------------------------------------------------===//

CudaEvent::Point::~Point() {
  if (event)
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

absl::Status CudaEvent::Point::waitIssued() {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return issued; });
  return error;
}

void CudaEvent::record(Stream &stream) {
  auto p = std::make_shared<Point>();
  {
    std::lock_guard<std::mutex> lock(mu);
    point = p;
  }
  auto &cs = static_cast<CudaStream &>(stream);
  cs.control([p, &cs, name = device.name()](const absl::Status &failed) {
    absl::Status s = failed;
    cudaEvent_t e = nullptr;
    if (s.ok())
      s = cudaCheck(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), name,
                    "cudaEventCreate");
    if (s.ok())
      s = cudaCheck(
          cudaEventRecord(e, static_cast<cudaStream_t>(cs.nativeHandle())),
          name, "cudaEventRecord");
    {
      std::lock_guard<std::mutex> lock(p->mu);
      p->event = e;
      p->error = s;
      p->issued = true;
    }
    p->cv.notify_all();
  });
}

std::shared_ptr<CudaEvent::Point> CudaEvent::last() const {
  std::lock_guard<std::mutex> lock(mu);
  return point;
}

absl::Status CudaEvent::synchronize() const {
  std::shared_ptr<Point> p = last();
  if (!p)
    return absl::OkStatus();
  if (absl::Status s = p->waitIssued(); !s.ok())
    return s;
  return cudaCheck(cudaEventSynchronize(static_cast<cudaEvent_t>(p->event)),
                   device.name(), "cudaEventSynchronize");
}

bool CudaEvent::query() const {
  std::shared_ptr<Point> p = last();
  if (!p)
    return true;
  {
    std::lock_guard<std::mutex> lock(p->mu);
    if (!p->issued)
      return false;
  }
  return !p->event ||
         cudaEventQuery(static_cast<cudaEvent_t>(p->event)) == cudaSuccess;
}

//===-- Device ----------------------------------------------------------===//

CudaDevice::CudaDevice(int ordinal, std::string name)
    : gpu(ordinal), deviceName(std::move(name)) {}

absl::StatusOr<std::unique_ptr<CudaDevice>>
CudaDevice::create(int ordinal, std::string name, int64_t capacity) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || ordinal >= count) {
    (void)cudaGetLastError();
    return absl::FailedPreconditionError(absl::StrCat(
        name, ": this process sees ", count, " CUDA device",
        count == 1 ? "" : "s", " (CUDA_VISIBLE_DEVICES chooses which)"));
  }
  std::unique_ptr<CudaDevice> d(new CudaDevice(ordinal, std::move(name)));
  if (absl::Status s = d->makeCurrent(); !s.ok())
    return s;
  d->alloc = std::make_unique<CudaAllocator>(*d, capacity);
  return d;
}

CudaDevice::~CudaDevice() {
  (void)makeCurrent();
  if (staging)
    cudaFreeHost(staging);
  alloc.reset();
}

absl::Status CudaDevice::makeCurrent() const {
  return cudaCheck(cudaSetDevice(gpu), deviceName, "cudaSetDevice");
}

absl::StatusOr<std::unique_ptr<Stream>>
CudaDevice::createStream(const std::string &name) {
  auto s = std::make_unique<CudaStream>(*this, name);
  if (!s->nativeHandle())
    return absl::InternalError(
        absl::StrCat(deviceName, ": cannot create stream '", name, "'"));
  return std::unique_ptr<Stream>(std::move(s));
}

std::unique_ptr<runtime::Event> CudaDevice::createEvent() {
  return std::make_unique<CudaEvent>(*this);
}

void CudaDevice::addStream(void *s) {
  std::lock_guard<std::mutex> lock(streamsMu);
  streams.push_back(s);
}

void CudaDevice::removeStream(void *s) {
  std::lock_guard<std::mutex> lock(streamsMu);
  streams.erase(std::remove(streams.begin(), streams.end(), s), streams.end());
}

std::vector<void *> CudaDevice::liveStreams() {
  std::lock_guard<std::mutex> lock(streamsMu);
  return streams;
}

namespace {
bool pageable(const void *p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;
  }
  return a.type == cudaMemoryTypeUnregistered;
}
} // namespace

void CudaDevice::copyAsync(void *dst, const void *src, size_t bytes,
                           Stream &stream) {
  stream.enqueue([this, dst, src, bytes, &stream]() -> absl::Status {
    auto s = static_cast<cudaStream_t>(stream.nativeHandle());
    if (bytes == 0)
      return absl::OkStatus();
    bool fromPageable = pageable(src), toPageable = pageable(dst);
    if (fromPageable && toPageable) {
      std::memcpy(dst, src, bytes);
      return absl::OkStatus();
    }
    if (!fromPageable && !toPageable)
      return cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s),
                       deviceName, "cudaMemcpyAsync");
    // Pageable host memory: chunks through the device's pinned staging,
    // each copied and waited for within this task.
    std::lock_guard<std::mutex> lock(stagingMu);
    if (!staging) {
      if (absl::Status st = cudaCheck(cudaMallocHost(&staging, kStagingBytes),
                                      deviceName, "cudaMallocHost");
          !st.ok())
        return st;
      stagingBytes = kStagingBytes;
    }
    for (size_t done = 0; done < bytes; done += stagingBytes) {
      size_t n = std::min(stagingBytes, bytes - done);
      const char *from = static_cast<const char *>(src) + done;
      char *to = static_cast<char *>(dst) + done;
      if (fromPageable)
        std::memcpy(staging, from, n);
      if (absl::Status st =
              cudaCheck(cudaMemcpyAsync(toPageable ? staging : to,
                                        fromPageable ? staging : from, n,
                                        cudaMemcpyDefault, s),
                        deviceName, "cudaMemcpyAsync");
          !st.ok())
        return st;
      if (absl::Status st = cudaCheck(cudaStreamSynchronize(s), deviceName,
                                      "cudaStreamSynchronize");
          !st.ok())
        return st;
      if (toPageable)
        std::memcpy(to, staging, n);
    }
    return absl::OkStatus();
  });
}

} // namespace pc::cuda

//===- CpuDevice.cpp - A CPU virtual device -------------------------------===//

#include "runtime/cpu/CpuDevice.h"
#include "runtime/device/HostMemory.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <system_error>

// From the OpenMP runtime (libgomp); declared here, since clang's sanitizer
// builds have no omp.h of their own.
extern "C" void omp_set_num_threads(int);

namespace pc::runtime {

//===----------------------------------------------------------------------===//
// CpuAllocator
//===----------------------------------------------------------------------===//

// Cache-line and SIMD aligned, so that kernels may assume it.
static constexpr size_t kAlignment = 64;

CpuAllocator::CpuAllocator(std::string device, int64_t capacity)
    : device(std::move(device)), capacity(capacity) {}

CpuAllocator::~CpuAllocator() { trimCache(); }

/// Sanitizers must see every free: a block reused at once would hide a read
/// after it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
static constexpr bool kCaching = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
static constexpr bool kCaching = false;
#else
static constexpr bool kCaching = true;
#endif
#else
static constexpr bool kCaching = true;
#endif
static constexpr size_t kCachedFrom = size_t(64) << 10;

bool CpuAllocator::caches() { return kCaching; }

/// The block size for `bytes`: aligned, and for cached sizes whole pages,
/// so that near sizes share blocks.
static size_t blockSize(size_t bytes) {
  size_t unit = bytes >= kCachedFrom ? 4096 : kAlignment;
  return std::max(kAlignment, (bytes + unit - 1) / unit * unit);
}

int64_t CpuAllocator::cachedBytesNow() const {
  std::lock_guard<std::mutex> lock(cacheMu);
  return cachedBytes;
}

void CpuAllocator::trimCache() {
  std::lock_guard<std::mutex> lock(cacheMu);
  for (const Cached &c : released)
    std::free(c.data);
  released.clear();
  bySize.clear();
  cachedBytes = 0;
}

void *CpuAllocator::takeCached(size_t rounded) {
  auto it = bySize.find(rounded);
  if (it == bySize.end() || it->second.empty())
    return nullptr;
  // The newest of the size: its pages are the likeliest still in cache.
  auto node = it->second.back();
  it->second.pop_back();
  void *data = node->data;
  released.erase(node);
  cachedBytes -= static_cast<int64_t>(rounded);
  return data;
}

void CpuAllocator::evictOldest() {
  const Cached oldest = released.front();
  // Both lists are in release order, so the oldest block overall is the
  // oldest of its size.
  std::vector<std::list<Cached>::iterator> &same = bySize[oldest.size];
  same.erase(same.begin());
  released.pop_front();
  cachedBytes -= static_cast<int64_t>(oldest.size);
  std::free(oldest.data);
}

/// Allocations from this size on are checked against the machine's
/// available memory first (reading it costs a few microseconds): with
/// overcommit, an allocation larger than what is free succeeds and the
/// process is killed later, when the pages are touched.
static constexpr size_t kCheckedBytes = size_t(64) << 20;

absl::StatusOr<Buffer> CpuAllocator::allocate(size_t bytes) {
  if (bytes > static_cast<size_t>(std::numeric_limits<int64_t>::max() / 2))
    return absl::ResourceExhaustedError(
        absl::StrCat(device, ": cannot allocate ", bytes, " bytes"));
  if (capacity <= 0 && bytes >= kCheckedBytes)
    if (absl::Status s = checkHostMemory(static_cast<int64_t>(bytes),
                                         absl::StrCat(device, ": a tensor"));
        !s.ok())
      return s;
  int64_t now = inUse.fetch_add(bytes) + bytes;
  if (capacity > 0 && now > capacity) {
    inUse.fetch_sub(bytes);
    return absl::ResourceExhaustedError(
        absl::StrCat(device, ": allocating ", bytes, " bytes would use ", now,
                     " bytes, more than its capacity of ", capacity));
  }
  // An empty tensor still gets a real (unread) block: kernels and copies
  // may pass its pointer to memcpy and BLAS, which must never see null.
  size_t rounded = blockSize(bytes);
  void *data = nullptr;
  if (kCaching && rounded >= kCachedFrom) {
    std::lock_guard<std::mutex> lock(cacheMu);
    highest = std::max(highest, now);
    data = takeCached(rounded);
  }
  // Within a capacity, what is cached counts too: other sizes go first.
  if (!data && capacity > 0 && now + cachedBytesNow() > capacity)
    trimCache();
  if (!data)
    data = std::aligned_alloc(kAlignment, rounded);
  if (!data && cachedBytesNow() > 0) {
    // What is cached may be what the machine lacks.
    trimCache();
    data = std::aligned_alloc(kAlignment, rounded);
  }
  if (!data) {
    inUse.fetch_sub(bytes);
    return absl::ResourceExhaustedError(
        absl::StrCat(device, ": out of host memory for ", bytes, " bytes"));
  }
  ++allocations;
  for (int64_t p = peak.load(); now > p && !peak.compare_exchange_weak(p, now);)
    ;
  return Buffer(this, data, bytes);
}

void CpuAllocator::release(void *data, size_t bytes) {
  int64_t now = inUse.fetch_sub(bytes) - bytes;
  size_t rounded = blockSize(bytes);
  if (kCaching && rounded >= kCachedFrom) {
    std::lock_guard<std::mutex> lock(cacheMu);
    // Blocks are cached by exact size, so the sizes' own peaks can add up
    // to more than the highest total: allow twice that.
    int64_t limit = capacity > 0 ? capacity - now : 2 * highest;
    int64_t size = static_cast<int64_t>(rounded);
    if (size <= limit) {
      while (cachedBytes + size > limit)
        evictOldest();
      released.push_back({data, rounded});
      bySize[rounded].push_back(std::prev(released.end()));
      cachedBytes += size;
      return;
    }
  }
  std::free(data);
}

MemoryStats CpuAllocator::stats() const {
  std::lock_guard<std::mutex> lock(cacheMu);
  return {inUse.load(), peak.load(), allocations.load(), cachedBytes};
}

void CpuAllocator::resetPeak() { peak.store(inUse.load()); }

//===----------------------------------------------------------------------===//
// CpuStream
//===----------------------------------------------------------------------===//

namespace {
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PC_TSAN 1
#endif
#endif
/// The threads a stream's kernels get. Under ThreadSanitizer, one: the
/// OpenMP runtime (libgomp) is not instrumented, so TSan cannot see its
/// barriers and would report the team's writes as races.
int streamThreads(int threads) {
#ifdef PC_TSAN
  (void)threads;
  return 1;
#else
  return std::max(1, threads);
#endif
}
} // namespace

CpuStream::CpuStream(std::string name, int threads)
    : streamName(std::move(name)), threads(streamThreads(threads)) {}

CpuStream::~CpuStream() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  cv.notify_all();
  if (worker.joinable())
    worker.join();
}

void CpuStream::push(Item item) {
  std::function<void(const absl::Status &)> refused;
  absl::Status why;
  {
    std::lock_guard<std::mutex> lock(mu);
    // The worker starts with the first work: a rank makes five streams,
    // and a program may use two of them (a thread costs its stack and its
    // libraries' thread-local storage).
    if (!worker.joinable() && error.ok()) {
      try {
        worker = std::thread([this] { run(); });
      } catch (const std::system_error &e) {
        error = absl::ResourceExhaustedError(
            absl::StrCat(streamName, ": cannot start its thread: ", e.what()));
      }
    }
    if (worker.joinable()) {
      queue.push_back(std::move(item));
      ++pending;
    } else {
      // Nothing will run here: the stream has failed, and a callback (an
      // event's) learns it now rather than never.
      refused = std::move(item.control);
      why = error;
    }
  }
  if (refused)
    refused(why);
  cv.notify_all();
}

void CpuStream::enqueue(Task task) { push({std::move(task), nullptr}); }

void CpuStream::enqueueCallback(std::function<void(const absl::Status &)> fn) {
  push({nullptr, std::move(fn)});
}

void CpuStream::waitFor(const Event &event) {
  auto *cpu = dynamic_cast<const CpuEvent *>(&event);
  if (!cpu) {
    enqueue([name = streamName] {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": waits for an event of another device kind"));
    });
    return;
  }
  // Wait for the point recorded by now, not for later recordings.
  enqueue(cpu->waitTask());
}

absl::Status CpuStream::synchronize() {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return pending == 0; });
  return error;
}

void CpuStream::run() {
  // An OpenMP setting of this thread alone: the parallel regions of the
  // kernels it runs (oneDNN's) get this many threads.
  omp_set_num_threads(threads);
  nameThisThread(streamName);
  for (;;) {
    Item item;
    absl::Status current;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty())
        return; // Stopping, and everything queued has run.
      item = std::move(queue.front());
      queue.pop_front();
      current = error;
    }
    absl::Status result;
    if (item.control)
      item.control(current);
    else if (current.ok())
      result = item.task();
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!result.ok() && error.ok())
        error = absl::Status(result.code(),
                             absl::StrCat(streamName, ": ", result.message()));
      --pending;
    }
    cv.notify_all();
  }
}

//===----------------------------------------------------------------------===//
// CpuEvent
//===----------------------------------------------------------------------===//

CpuEvent::CpuEvent() : state(std::make_shared<State>()) {}

void CpuEvent::record(Stream &stream) {
  int64_t generation;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    generation = ++state->recorded;
  }
  auto done = [s = state, generation](const absl::Status &error) {
    std::lock_guard<std::mutex> lock(s->mu);
    s->completed = std::max(s->completed, generation);
    if (!error.ok())
      s->error = error;
    s->cv.notify_all();
  };
  stream.enqueueCallback(done);
}

absl::Status CpuEvent::wait(State &s, int64_t generation) {
  std::unique_lock<std::mutex> lock(s.mu);
  s.cv.wait(lock, [&] { return s.completed >= generation; });
  if (!s.error.ok())
    return absl::Status(
        s.error.code(),
        absl::StrCat("an awaited event failed: ", s.error.message()));
  return absl::OkStatus();
}

Task CpuEvent::waitTask() const {
  int64_t generation;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    generation = state->recorded;
  }
  return [s = state, generation] { return wait(*s, generation); };
}

absl::Status CpuEvent::synchronize() const { return waitTask()(); }

bool CpuEvent::query() const {
  std::lock_guard<std::mutex> lock(state->mu);
  return state->completed >= state->recorded;
}

//===----------------------------------------------------------------------===//
// CpuDevice
//===----------------------------------------------------------------------===//

CpuDevice::CpuDevice(int index, int64_t capacity, int threads, std::string kind)
    : deviceName(absl::StrCat("cpu:", index)), deviceKind(std::move(kind)),
      alloc(deviceName, capacity), threads(threads) {}

absl::StatusOr<std::unique_ptr<Stream>>
CpuDevice::createStream(const std::string &name) {
  return std::unique_ptr<Stream>(std::make_unique<CpuStream>(
      absl::StrCat(deviceName, "/", name), threads));
}

std::unique_ptr<Event> CpuDevice::createEvent() {
  return std::make_unique<CpuEvent>();
}

void CpuDevice::copyAsync(void *dst, const void *src, size_t bytes,
                          Stream &stream) {
  stream.enqueue([dst, src, bytes] {
    if (bytes)
      std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  });
}

} // namespace pc::runtime

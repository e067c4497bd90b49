//===- DeviceTest.cpp - The device abstraction on CPU virtual devices -----===//

#include "runtime/cpu/CpuDevice.h"
#include "runtime/device/HostMemory.h"
#include "runtime/device/HostTensor.h"

#include "absl/strings/str_cat.h"

#include <gtest/gtest.h>

#ifdef __linux__
#include <pthread.h>
#endif

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

using namespace pc::runtime;

namespace {

std::unique_ptr<Stream> makeStream(Device &d, const std::string &name) {
  absl::StatusOr<std::unique_ptr<Stream>> s = d.createStream(name);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

TEST(CpuAllocator, TracksUsageAndPeak) {
  CpuDevice device(0);
  Allocator &a = device.allocator();
  {
    absl::StatusOr<Buffer> x = a.allocate(1000);
    ASSERT_TRUE(x.ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(x->data()) % 64, 0u);
    {
      absl::StatusOr<Buffer> y = a.allocate(500);
      ASSERT_TRUE(y.ok());
      EXPECT_EQ(a.stats().inUse, 1500);
    }
    EXPECT_EQ(a.stats().inUse, 1000);
    EXPECT_EQ(a.stats().peak, 1500);
    Buffer moved = std::move(*x);
    EXPECT_FALSE(*x);
    EXPECT_EQ(a.stats().inUse, 1000);
  }
  EXPECT_EQ(a.stats().inUse, 0);
  EXPECT_EQ(a.stats().peak, 1500);
  EXPECT_EQ(a.stats().allocations, 2);
  a.resetPeak();
  EXPECT_EQ(a.stats().peak, 0);
  absl::StatusOr<Buffer> empty = a.allocate(0);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(*empty);
}

// Released blocks of 64 KiB and more are kept for the next allocation of
// their size (a training step allocates the same sizes every step), never
// more than the highest use seen nor beyond a capacity. Under sanitizers
// nothing is kept, so that they see every free.
TEST(CpuAllocator, ReusesReleasedBlocksWithinBounds) {
  if (!CpuAllocator::caches())
    GTEST_SKIP() << "no block cache under sanitizers";
  CpuDevice device(0);
  Allocator &a = device.allocator();
  void *first = nullptr;
  {
    absl::StatusOr<Buffer> big = a.allocate(1 << 20);
    ASSERT_TRUE(big.ok());
    first = big->data();
    absl::StatusOr<Buffer> small = a.allocate(1000);
    ASSERT_TRUE(small.ok());
  }
  EXPECT_EQ(a.stats().inUse, 0);
  EXPECT_EQ(a.stats().cached, 1 << 20); // the small block went back
  {
    // A near size (the same whole pages) gets the same block.
    absl::StatusOr<Buffer> again = a.allocate((1 << 20) - 100);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->data(), first);
    EXPECT_EQ(a.stats().cached, 0);
    EXPECT_EQ(a.stats().inUse, (1 << 20) - 100);
  }
  // Two blocks of the highest use's size: only what fits under it stays.
  {
    absl::StatusOr<Buffer> x = a.allocate(1 << 20);
    absl::StatusOr<Buffer> y = a.allocate(1 << 20);
    ASSERT_TRUE(x.ok() && y.ok());
  }
  EXPECT_EQ(a.stats().cached, 2 << 20);
  // Within a capacity, kept blocks and live ones fit in it together.
  CpuDevice bounded(1, /*capacity=*/3 << 20);
  Allocator &b = bounded.allocator();
  {
    absl::StatusOr<Buffer> x = b.allocate(2 << 20);
    ASSERT_TRUE(x.ok());
  }
  EXPECT_EQ(b.stats().cached, 2 << 20);
  absl::StatusOr<Buffer> other = b.allocate(1 << 20);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(b.stats().cached, 2 << 20);
  {
    // 1 + 2 MiB live: the kept 2 MiB block of another size must go.
    absl::StatusOr<Buffer> more = b.allocate((2 << 20) - 8192);
    ASSERT_TRUE(more.ok());
    EXPECT_EQ(b.stats().cached, 0);
  }
}

TEST(CpuAllocator, TheBlocksReleasedLongestAgoGoFirst) {
  if (!CpuAllocator::caches())
    GTEST_SKIP() << "no block cache under sanitizers";
  // A GPT step's optimizer releases the old parameters last, when the
  // step's activations are already cached: a full cache must make room
  // for them (dropping what waited longest), not refuse them, or every
  // step allocates fresh pages for the new ones.
  constexpr int64_t kKiB = 1024, kMiB = 1024 * kKiB;
  CpuDevice device(0);
  Allocator &a = device.allocator();
  {
    absl::StatusOr<Buffer> x = a.allocate(kMiB), y = a.allocate(kMiB);
    ASSERT_TRUE(x.ok() && y.ok());
  } // the highest use is 2 MiB, so up to 4 MiB may stay cached
  std::vector<void *> quarter;
  {
    std::vector<Buffer> live;
    for (int i = 0; i < 4; ++i) {
      absl::StatusOr<Buffer> b = a.allocate(512 * kKiB);
      ASSERT_TRUE(b.ok());
      quarter.push_back(b->data());
      live.push_back(*std::move(b));
    }
  }
  EXPECT_EQ(a.stats().cached, 4 * kMiB);
  {
    absl::StatusOr<Buffer> late = a.allocate(256 * kKiB);
    ASSERT_TRUE(late.ok());
  }
  // One of the first 1 MiB blocks went; the newest stayed.
  EXPECT_EQ(a.stats().cached, 3 * kMiB + 256 * kKiB);
  std::vector<Buffer> again;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<Buffer> b = a.allocate(512 * kKiB);
    ASSERT_TRUE(b.ok());
    EXPECT_NE(std::find(quarter.begin(), quarter.end(), b->data()),
              quarter.end());
    again.push_back(*std::move(b));
  }
  EXPECT_EQ(a.stats().cached, kMiB + 256 * kKiB);
}

TEST(CpuAllocator, CapacityIsAClearError) {
  CpuDevice device(3, /*capacity=*/1024);
  absl::StatusOr<Buffer> a = device.allocator().allocate(1000);
  ASSERT_TRUE(a.ok());
  absl::StatusOr<Buffer> b = device.allocator().allocate(100);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(b.status().message(),
            "cpu:3: allocating 100 bytes would use 1100 bytes, more than its "
            "capacity of 1024");
  EXPECT_EQ(device.allocator().stats().inUse, 1000);
}

// Without a budget, a CPU device's capacity is the machine's available
// memory: a tensor larger than that is an error naming the bytes, not an
// allocation that overcommit grants and the OOM killer ends later.
TEST(CpuAllocator, BeyondAvailableMemoryIsAClearError) {
  CpuDevice device(2);
  int64_t tooMuch = availableHostMemory() + (int64_t(1) << 30);
  absl::StatusOr<Buffer> b =
      device.allocator().allocate(static_cast<size_t>(tooMuch));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(b.status().message().find(
                absl::StrCat("cpu:2: a tensor needs ", tooMuch, " bytes")),
            std::string::npos)
      << b.status();
  absl::StatusOr<Buffer> absurd = device.allocator().allocate(SIZE_MAX - 8);
  ASSERT_FALSE(absurd.ok());
  EXPECT_EQ(device.allocator().stats().inUse, 0);
}

TEST(CpuStream, RunsTasksInOrderAsynchronously) {
  CpuDevice device(0);
  auto stream = makeStream(device, "compute");
  std::vector<int> order;
  std::atomic<bool> release{false};
  stream->enqueue([&] {
    while (!release)
      std::this_thread::yield();
    order.push_back(1);
    return absl::OkStatus();
  });
  for (int i = 2; i <= 100; ++i)
    stream->enqueue([&, i] {
      order.push_back(i);
      return absl::OkStatus();
    });
  // enqueue returned while the first task still blocks: it is asynchronous.
  release = true;
  ASSERT_TRUE(stream->synchronize().ok());
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(order[i], i + 1);
}

#ifdef __linux__
/// The name of the calling thread, as top -H and perf show it.
std::string threadName() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

TEST(CpuStream, ItsWorkerIsNamedAfterTheStream) {
  CpuDevice device(3);
  auto compute = makeStream(device, "compute");
  auto offload = makeStream(device, "offload copies");
  std::string computeName, offloadName;
  compute->enqueue([&] {
    computeName = threadName();
    return absl::OkStatus();
  });
  offload->enqueue([&] {
    offloadName = threadName();
    return absl::OkStatus();
  });
  ASSERT_TRUE(compute->synchronize().ok());
  ASSERT_TRUE(offload->synchronize().ok());
  EXPECT_EQ(computeName, "cpu:3/compute");
  // Linux keeps 15 characters.
  EXPECT_EQ(offloadName, "cpu:3/offload c");
}
#endif

TEST(CpuStream, AFailedTaskPoisonsTheStream) {
  CpuDevice device(0);
  auto stream = makeStream(device, "compute");
  bool ranAfter = false;
  stream->enqueue([] { return absl::InternalError("kernel failed"); });
  stream->enqueue([&] {
    ranAfter = true;
    return absl::OkStatus();
  });
  absl::Status s = stream->synchronize();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "cpu:0/compute: kernel failed");
  EXPECT_FALSE(ranAfter);
}

TEST(CpuEvent, OrdersWorkAcrossStreams) {
  CpuDevice device(0);
  auto compute = makeStream(device, "compute");
  auto comm = makeStream(device, "comm");
  auto event = device.createEvent();
  EXPECT_TRUE(event->query()); // Nothing recorded yet.
  std::atomic<int> value{0};
  std::atomic<bool> release{false};
  compute->enqueue([&] {
    while (!release)
      std::this_thread::yield();
    value = 42;
    return absl::OkStatus();
  });
  event->record(*compute);
  EXPECT_FALSE(event->query());
  int seen = -1;
  comm->waitFor(*event);
  comm->enqueue([&] {
    seen = value;
    return absl::OkStatus();
  });
  release = true;
  ASSERT_TRUE(comm->synchronize().ok());
  EXPECT_EQ(seen, 42);
  EXPECT_TRUE(event->synchronize().ok());
  EXPECT_TRUE(event->query());
}

TEST(CpuEvent, FailuresReachTheWaiters) {
  CpuDevice device(0);
  auto producer = makeStream(device, "producer");
  auto consumer = makeStream(device, "consumer");
  {
    // The event may die before the waiting stream runs.
    auto event = device.createEvent();
    producer->enqueue([] { return absl::DataLossError("bad input"); });
    event->record(*producer);
    consumer->waitFor(*event);
  }
  bool ran = false;
  consumer->enqueue([&] {
    ran = true;
    return absl::OkStatus();
  });
  absl::Status s = consumer->synchronize();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("an awaited event failed: cpu:0/producer: bad "
                             "input"),
            std::string::npos)
      << s;
  EXPECT_FALSE(ran);
}

TEST(CpuDevice, CopiesInStreamOrder) {
  CpuDevice device(0);
  auto stream = makeStream(device, "copy");
  absl::StatusOr<Buffer> a = device.allocator().allocate(4096);
  absl::StatusOr<Buffer> b = device.allocator().allocate(4096);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<unsigned char> host(4096);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = static_cast<unsigned char>(i * 7);
  device.copyAsync(a->data(), host.data(), 4096, *stream);
  device.copyAsync(b->data(), a->data(), 4096, *stream);
  ASSERT_TRUE(stream->synchronize().ok());
  EXPECT_EQ(std::memcmp(b->data(), host.data(), 4096), 0);
}

TEST(CpuStream, DestroyingAStreamRunsWhatIsQueued) {
  CpuDevice device(0);
  std::atomic<int> count{0};
  {
    auto stream = makeStream(device, "s");
    for (int i = 0; i < 50; ++i)
      stream->enqueue([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(10));
        ++count;
        return absl::OkStatus();
      });
  }
  EXPECT_EQ(count, 50);
}

/// copyBox against a copy element by element, over random boxes of rank
/// 0-4 whose dims are whole or partial in either tensor: the row merging
/// and the walk over the outer dims must land every element.
TEST(CopyBox, MatchesAnElementwiseCopy) {
  std::mt19937 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  // Boxes chance seldom draws: whole in both tensors (one memcpy), partial
  // in dim 0 only (one memcpy at an offset), a partial dim of one between
  // whole dims, and the innermost dim partial in the destination only.
  struct Fixed {
    std::vector<int64_t> sizes, srcExtra, dstExtra;
  };
  const std::vector<Fixed> fixed = {
      {{2, 3, 4}, {0, 0, 0}, {0, 0, 0}},
      {{2, 3, 4, 5}, {0, 0, 0, 0}, {0, 0, 0, 0}},
      {{2, 3, 4}, {2, 0, 0}, {1, 0, 0}},
      {{3, 1, 4}, {0, 2, 0}, {0, 0, 0}},
      {{2, 3, 4}, {0, 0, 0}, {0, 0, 3}},
  };
  for (int trial = 0; trial < 400 + int(fixed.size()); ++trial) {
    const bool isFixed = trial >= 400;
    const size_t rank = isFixed ? fixed[trial - 400].sizes.size() : pick(0, 4);
    const int64_t elem = std::vector<int64_t>{1, 2, 4, 8}[pick(0, 3)];
    std::vector<int64_t> sizes(rank), srcShape(rank), dstShape(rank),
        srcOff(rank), dstOff(rank);
    for (size_t d = 0; d < rank; ++d) {
      if (isFixed) {
        const Fixed &f = fixed[trial - 400];
        sizes[d] = f.sizes[d];
        srcShape[d] = sizes[d] + f.srcExtra[d];
        dstShape[d] = sizes[d] + f.dstExtra[d];
      } else {
        sizes[d] = pick(0, 4) ? pick(1, 5) : (trial % 7 == 0 ? 0 : 1);
        // Whole in a tensor half the time, so that inner dims merge.
        srcShape[d] = sizes[d] + (pick(0, 1) ? 0 : pick(1, 3));
        dstShape[d] = sizes[d] + (pick(0, 1) ? 0 : pick(1, 3));
      }
      srcOff[d] = pick(0, srcShape[d] - sizes[d]);
      dstOff[d] = pick(0, dstShape[d] - sizes[d]);
    }
    std::vector<char> src(pc::product(srcShape) * elem),
        got(pc::product(dstShape) * elem), want;
    for (char &c : src)
      c = char(pick(0, 255));
    for (char &c : got)
      c = char(pick(0, 255));
    want = got;
    // The reference: every element of the box, by its full index.
    for (int64_t i = 0, n = pc::product(sizes); i < n; ++i) {
      int64_t rest = i, s = 0, t = 0;
      std::vector<int64_t> idx(rank);
      for (size_t d = rank; d-- > 0;) {
        idx[d] = rest % sizes[d];
        rest /= sizes[d];
      }
      for (size_t d = 0; d < rank; ++d) {
        s = s * srcShape[d] + idx[d] + srcOff[d];
        t = t * dstShape[d] + idx[d] + dstOff[d];
      }
      std::memcpy(&want[t * elem], &src[s * elem], elem);
    }
    copyBox(src.data(), srcShape, srcOff, got.data(), dstShape, dstOff, sizes,
            elem);
    ASSERT_EQ(got, want) << "trial " << trial << ", rank " << rank;
  }
}

} // namespace

//===- CudaDevicesTest.cpp - The CUDA backend links and, on a GPU, runs ---===//

#include "runtime/cuda/CudaDevices.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

namespace {

TEST(CudaDevices, LibrariesAreLinkedAndReportVersions) {
  absl::StatusOr<pc::cuda::LibraryVersions> v = pc::cuda::libraryVersions();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_GE(v->cudaRuntime, 13000) << "pc targets CUDA 13";
  EXPECT_GE(v->cublasMajor, 13);
  EXPECT_GE(v->nccl, 22000) << "NCCL 2.x encodes as >= 22000";
}

TEST(CudaDevices, ListingWithoutAGpuIsNotAnError) {
  absl::StatusOr<std::vector<pc::cuda::DeviceInfo>> devices =
      pc::cuda::listDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  for (const pc::cuda::DeviceInfo &d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.totalMemoryBytes, 0);
  }
}

TEST(CudaDevices, FillKernelWritesEveryElement) {
  absl::StatusOr<std::vector<pc::cuda::DeviceInfo>> devices =
      pc::cuda::listDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  if (devices->empty())
    GTEST_SKIP() << "no CUDA device";
  // More elements than one grid-stride pass covers.
  const int64_t n = 65535 * 256 + 17;
  float *data = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(&data), n * sizeof(float)),
            cudaSuccess);
  ASSERT_TRUE(pc::cuda::fillOnDevice(data, n, 2.5f).ok());
  std::vector<float> host(n, 0.0f);
  ASSERT_EQ(
      cudaMemcpy(host.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost),
      cudaSuccess);
  cudaFree(data);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(host[i], 2.5f) << "element " << i;
}

} // namespace

//===-- The CUDA device behind the runtime's Device interface -------------===//
// These run on a GPU (scripts/gpu-check.sh) and skip, visibly, elsewhere.

#include "runtime/comm/World.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/NcclCommunicator.h"

#include <atomic>
#include <future>

namespace {

using pc::cuda::CudaDevice;

/// GPU 0 as a device, or a skip.
#define GPU_OR_SKIP(device)                                                    \
  absl::StatusOr<std::vector<pc::cuda::DeviceInfo>> devices_ =                 \
      pc::cuda::listDevices();                                                 \
  ASSERT_TRUE(devices_.ok()) << devices_.status();                             \
  if (devices_->empty())                                                       \
    GTEST_SKIP() << "GPU test: no CUDA device";                                \
  absl::StatusOr<std::unique_ptr<CudaDevice>> device =                         \
      CudaDevice::create(0, "cuda:0", 0);                                      \
  ASSERT_TRUE(device.ok()) << device.status();

TEST(CudaDevice, AllocatorCountsReusesAndEnforcesItsCapacity) {
  absl::StatusOr<std::vector<pc::cuda::DeviceInfo>> devices =
      pc::cuda::listDevices();
  ASSERT_TRUE(devices.ok());
  if (devices->empty())
    GTEST_SKIP() << "GPU test: no CUDA device";
  absl::StatusOr<std::unique_ptr<CudaDevice>> d =
      CudaDevice::create(0, "cuda:0", 1 << 20);
  ASSERT_TRUE(d.ok()) << d.status();
  pc::runtime::Allocator &a = (*d)->allocator();
  void *first = nullptr;
  {
    absl::StatusOr<pc::runtime::Buffer> b = a.allocate(1000);
    ASSERT_TRUE(b.ok()) << b.status();
    first = b->data();
    EXPECT_EQ(a.stats().inUse, 1000);
  }
  EXPECT_EQ(a.stats().inUse, 0);
  EXPECT_EQ(a.stats().peak, 1000);
  // The same size again: the cached block, once no stream can still use it.
  absl::StatusOr<pc::runtime::Buffer> again = a.allocate(1000);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->data(), first);
  absl::StatusOr<pc::runtime::Buffer> big = a.allocate(2 << 20);
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(big.status()));
  EXPECT_NE(big.status().message().find("cuda:0: allocating 2097152 bytes"),
            std::string::npos)
      << big.status();
}

TEST(CudaDevice, StreamsEventsAndCopiesKeepTheirOrder) {
  GPU_OR_SKIP(device);
  CudaDevice &d = **device;
  const int64_t n = 5 << 20; // 20 MiB: the pinned staging's chunks, thrice
  auto a = d.createStream("a"), b = d.createStream("b");
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<pc::runtime::Buffer> x = d.allocator().allocate(n * 4),
                                      y = d.allocator().allocate(n * 4);
  ASSERT_TRUE(x.ok() && y.ok());
  std::vector<float> host(n), back(n, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    host[i] = static_cast<float>(i % 977);
  // Stream a fills x from the (pageable) host; b waits for it, copies x to
  // y and y back to the host; the callback fires after all of it.
  d.copyAsync(x->data(), host.data(), n * 4, **a);
  std::unique_ptr<pc::runtime::Event> e = d.createEvent();
  e->record(**a);
  (*b)->waitFor(*e);
  d.copyAsync(y->data(), x->data(), n * 4, **b);
  d.copyAsync(back.data(), y->data(), n * 4, **b);
  std::promise<absl::Status> done;
  (*b)->enqueueCallback([&](const absl::Status &s) { done.set_value(s); });
  ASSERT_TRUE(done.get_future().get().ok());
  ASSERT_TRUE((*b)->synchronize().ok());
  EXPECT_TRUE(e->query());
  EXPECT_EQ(back, host);
}

TEST(CudaDevice, AFailedTaskPoisonsItsStream) {
  GPU_OR_SKIP(device);
  auto s = (*device)->createStream("s");
  ASSERT_TRUE(s.ok());
  std::atomic<bool> ran{false};
  (*s)->enqueue([] { return absl::InternalError("boom"); });
  (*s)->enqueue([&] {
    ran = true;
    return absl::OkStatus();
  });
  std::promise<absl::Status> done;
  (*s)->enqueueCallback([&](const absl::Status &st) { done.set_value(st); });
  EXPECT_EQ(done.get_future().get().message(), "boom");
  EXPECT_EQ((*s)->synchronize().message(), "boom");
  EXPECT_FALSE(ran);
}

// A one-member NCCL group: made through the world's host endpoint, an
// all-reduce and a broadcast run on the stream given.
TEST(NcclCommunicator, OneRankGroupRunsCollectives) {
  GPU_OR_SKIP(device);
  std::unique_ptr<pc::runtime::World> world = pc::runtime::makeInProcessWorld();
  ASSERT_TRUE(world->beginRun(1).ok());
  absl::StatusOr<std::unique_ptr<pc::runtime::Communicator>> host =
      world->endpoint(0);
  ASSERT_TRUE(host.ok());
  pc::cuda::NcclCommunicator comm(*std::move(host), 0, 0, 30);
  auto s = (*device)->createStream("comm");
  ASSERT_TRUE(s.ok());
  comm.setStream((*s)->nativeHandle());
  absl::StatusOr<pc::runtime::Buffer> x = (*device)->allocator().allocate(64);
  ASSERT_TRUE(x.ok());
  std::vector<float> v(16, 1.5f), back(16);
  (*device)->copyAsync(x->data(), v.data(), 64, **s);
  ASSERT_TRUE((*s)->synchronize().ok());
  int64_t group[] = {0};
  ASSERT_TRUE(comm.allReduce(x->data(), 16, pc::runtime::CommType::F32,
                             pc::ReduceKind::Sum, group)
                  .ok());
  ASSERT_TRUE(
      comm.broadcast(x->data(), 16, pc::runtime::CommType::F32, 0, group).ok());
  (*device)->copyAsync(back.data(), x->data(), 64, **s);
  ASSERT_TRUE((*s)->synchronize().ok());
  EXPECT_EQ(back, v);
  EXPECT_EQ(comm.stats().calls.at("all_reduce"), 1);
}

} // namespace

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

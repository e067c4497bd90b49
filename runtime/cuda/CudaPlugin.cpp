//===- CudaPlugin.cpp - The entry point of libpc-cuda.so ------------------===//

#include "runtime/cuda/CudaPlugin.h"
#include "runtime/cuda/CudaPluginAbi.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/NcclCommunicator.h"

#include "absl/strings/str_cat.h"

#include <cuda_runtime_api.h>

namespace pc::cuda {
namespace {

absl::StatusOr<int> deviceCount() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();
    return 0;
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return absl::FailedPreconditionError(
        absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorString(e)));
  }
  return count;
}

absl::StatusOr<std::unique_ptr<runtime::Device>> makeDevice(int ordinal,
                                                            int64_t capacity) {
  absl::StatusOr<std::unique_ptr<CudaDevice>> d =
      CudaDevice::create(ordinal, absl::StrCat("cuda:", ordinal), capacity);
  if (!d.ok())
    return d.status();
  return std::unique_ptr<runtime::Device>(*std::move(d));
}

std::unique_ptr<runtime::Communicator>
makeCommunicator(std::unique_ptr<runtime::Communicator> host, int64_t rank,
                 int ordinal, double timeoutSeconds) {
  return std::make_unique<NcclCommunicator>(std::move(host), rank, ordinal,
                                            timeoutSeconds);
}

} // namespace
} // namespace pc::cuda

/// The module's one exported symbol (cuda/plugin.map keeps the rest local).
extern "C" __attribute__((visibility("default")))
const pc::cuda::CudaPluginApi *
pc_cuda_plugin() {
  static const pc::cuda::CudaPluginApi api = {
      PC_CUDA_PLUGIN_ABI, pc::cuda::deviceCount, pc::cuda::makeDevice,
      pc::cuda::makeCommunicator, pc::cuda::makeCudaKernels};
  return &api;
}

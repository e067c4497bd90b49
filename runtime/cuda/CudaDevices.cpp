//===- CudaDevices.cpp - What the CUDA backend can see --------------------===//

#include "runtime/cuda/CudaDevices.h"

#include "absl/strings/str_cat.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

namespace pc::cuda {
namespace detail {
cudaError_t launchFill(float *data, int64_t count, float value,
                       cudaStream_t stream);
} // namespace detail

static absl::Status cudaStatus(cudaError_t error, const char *what) {
  if (error == cudaSuccess)
    return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": ", cudaGetErrorString(error)));
}

absl::StatusOr<std::vector<DeviceInfo>> listDevices() {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError(); // Clear the sticky error for later calls.
    return std::vector<DeviceInfo>{};
  }
  if (absl::Status s = cudaStatus(error, "cudaGetDeviceCount"); !s.ok())
    return s;
  std::vector<DeviceInfo> devices;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop;
    if (absl::Status s = cudaStatus(cudaGetDeviceProperties(&prop, i),
                                    "cudaGetDeviceProperties");
        !s.ok())
      return s;
    devices.push_back({i, prop.name, static_cast<int64_t>(prop.totalGlobalMem),
                       prop.major, prop.minor});
  }
  return devices;
}

absl::StatusOr<LibraryVersions> libraryVersions() {
  LibraryVersions v;
  if (absl::Status s = cudaStatus(cudaRuntimeGetVersion(&v.cudaRuntime),
                                  "cudaRuntimeGetVersion");
      !s.ok())
    return s;
  if (cublasGetProperty(MAJOR_VERSION, &v.cublasMajor) !=
          CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &v.cublasMinor) != CUBLAS_STATUS_SUCCESS)
    return absl::InternalError("cublasGetProperty failed");
  if (ncclResult_t r = ncclGetVersion(&v.nccl); r != ncclSuccess)
    return absl::InternalError(
        absl::StrCat("ncclGetVersion: ", ncclGetErrorString(r)));
  return v;
}

absl::Status fillOnDevice(float *data, int64_t count, float value) {
  if (absl::Status s =
          cudaStatus(detail::launchFill(data, count, value, nullptr),
                     "fill kernel launch");
      !s.ok())
    return s;
  return cudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

} // namespace pc::cuda

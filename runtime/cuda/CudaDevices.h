//===- CudaDevices.h - What the CUDA backend can see ------------*- C++ -*-===//
//
// The entry into the CUDA backend: which devices and library versions this
// process has. A machine without a driver or a GPU is a normal state (the
// build machines have none), reported as an empty device list, not an error.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_CUDA_CUDADEVICES_H
#define PC_RUNTIME_CUDA_CUDADEVICES_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pc::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int64_t totalMemoryBytes = 0;
  int computeMajor = 0;
  int computeMinor = 0;
};

struct LibraryVersions {
  /// CUDA runtime version, as 1000 * major + 10 * minor.
  int cudaRuntime = 0;
  /// cuBLAS major and minor version.
  int cublasMajor = 0;
  int cublasMinor = 0;
  /// NCCL version code, as NCCL_VERSION_CODE.
  int nccl = 0;
};

/// The visible CUDA devices; empty when there is no driver or no device.
absl::StatusOr<std::vector<DeviceInfo>> listDevices();

/// The versions of the linked CUDA libraries. Needs no device.
absl::StatusOr<LibraryVersions> libraryVersions();

/// Fills `count` floats at device pointer `data` with `value` on the current
/// device, synchronously. Used by the device smoke test.
absl::Status fillOnDevice(float *data, int64_t count, float value);

} // namespace pc::cuda

#endif // PC_RUNTIME_CUDA_CUDADEVICES_H

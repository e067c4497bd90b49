//===- Backend.h - What a device kind brings to the executor ----*- C++ -*-===//
//
// A backend is everything the executor needs for one kind of device, and
// nothing else: how to make a rank's Device, how to make its Communicator,
// and its kernels. The mesh's device kind (`pc.mesh ... on cuda`) chooses
// it, per rank. The actor core and the executor know no backend by name:
// the CUDA backend is an entry of this list like the CPU one, with a
// CudaDevice, the portable kernels registered under "cuda", and an NCCL
// communicator, all in a module loaded on first use
// (runtime/cuda/CudaPlugin.h).
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_BACKEND_H
#define PC_RUNTIME_EXEC_BACKEND_H

#include "runtime/comm/World.h"
#include "runtime/device/Device.h"
#include "runtime/exec/KernelRegistry.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pc::runtime {

/// What a session asks of each device it makes.
struct DeviceOptions {
  /// Threads of the device's kernels (at least 1).
  int threads = 1;
  /// Bytes of memory the device may hold (0: no limit); an allocation past
  /// it fails with ResourceExhausted naming the device.
  int64_t capacity = 0;
  /// CPU devices: run the GPU backend's kernels, built for the host
  /// (runtime/kernels/portable), instead of the CPU backend's: the GPU
  /// kernels' logic, tested without a GPU.
  bool portableKernels = false;
};

/// The kind of the CPU devices that run the portable kernels.
inline constexpr const char *kPortableCpuKind = "cpu-portable";

struct Backend {
  /// The device kind, as meshes name it.
  std::string kind;
  /// The device of global rank `rank`.
  std::function<absl::StatusOr<std::unique_ptr<Device>>(
      int64_t rank, const DeviceOptions &options)>
      makeDevice;
  /// Rank `rank`'s endpoint for collectives and send/recv.
  std::function<absl::StatusOr<std::unique_ptr<Communicator>>(World &world,
                                                              int64_t rank)>
      makeCommunicator;
  /// Adds its kernels, under `kind`. A session calls it once, before it
  /// binds the first rank of the kind (the CUDA backend loads its module
  /// then, and fails when it cannot).
  std::function<absl::Status(KernelRegistry &)> registerKernels;
};

/// The backends of this build: "cpu" always (its devices may run the
/// portable kernels, kind "cpu-portable"), "cuda" when built with it.
/// Listing them loads nothing.
std::vector<Backend> availableBackends();

/// The GPUs this process sees, through the CUDA backend's module; an error
/// when the build has none or the module cannot be loaded.
absl::StatusOr<int> visibleCudaDevices();

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_BACKEND_H

//===- Backend.cpp - The backends of this build ---------------------------===//

#include "runtime/exec/Backend.h"

#include "runtime/cpu/CpuDevice.h"
#include "runtime/exec/PortableComm.h"
#include "runtime/exec/PortableKernels.h"

#if PC_HAVE_CUDA
#include "runtime/exec/CudaPluginLoader.h"

#include "absl/strings/str_cat.h"
#endif

namespace pc::runtime {

#if PC_HAVE_CUDA
/// How long a rank waits for a group's NCCL initialisation or for a call to
/// complete before it aborts its communicators and fails the run.
constexpr double kNcclTimeoutSeconds = 300;

/// The GPU of global rank `rank`: the process's GPU `rank` modulo the GPUs
/// it sees.
static absl::StatusOr<int> gpuOf(const cuda::CudaPluginApi &cuda,
                                 int64_t rank) {
  absl::StatusOr<int> count = cuda.deviceCount();
  if (!count.ok() || *count == 0)
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", rank,
        " runs on a CUDA device, and this process sees none (no GPU, no "
        "driver, or CUDA_VISIBLE_DEVICES is empty)",
        count.ok() ? "" : absl::StrCat(": ", count.status().message())));
  return static_cast<int>(rank % *count);
}

/// GPUs: one CudaDevice per rank, the portable kernels built by nvcc, NCCL.
/// All of it lives in the CUDA backend's module (runtime/cuda/CudaPlugin.h),
/// loaded when a session first binds a rank on a GPU, so that runs on CPU
/// devices never load CUDA. Rank r runs on the process's GPU r modulo the
/// GPUs it sees, so that one process per GPU (CUDA_VISIBLE_DEVICES set per
/// process, or one GPU each) and one process with N GPUs both work.
static Backend cudaBackend() {
  auto loader = std::make_shared<CudaPluginLoader>();
  Backend gpu;
  gpu.kind = "cuda";
  gpu.makeDevice = [loader](int64_t rank, const DeviceOptions &options)
      -> absl::StatusOr<std::unique_ptr<Device>> {
    absl::StatusOr<const cuda::CudaPluginApi *> cuda = loader->get();
    if (!cuda.ok())
      return cuda.status();
    absl::StatusOr<int> gpu = gpuOf(**cuda, rank);
    if (!gpu.ok())
      return gpu.status();
    return (*cuda)->makeDevice(*gpu, options.capacity);
  };
  // NCCL between the GPUs; the world's own endpoint (shared memory, MPI)
  // only hands each group's NCCL id around.
  gpu.makeCommunicator =
      [loader](World &world,
               int64_t rank) -> absl::StatusOr<std::unique_ptr<Communicator>> {
    absl::StatusOr<const cuda::CudaPluginApi *> cuda = loader->get();
    if (!cuda.ok())
      return cuda.status();
    absl::StatusOr<std::unique_ptr<Communicator>> host = world.endpoint(rank);
    if (!host.ok())
      return host.status();
    absl::StatusOr<int> gpu = gpuOf(**cuda, rank);
    if (!gpu.ok())
      return gpu.status();
    return (*cuda)->makeCommunicator(*std::move(host), rank, *gpu,
                                     kNcclTimeoutSeconds);
  };
  gpu.registerKernels = [loader](KernelRegistry &r) -> absl::Status {
    absl::StatusOr<const cuda::CudaPluginApi *> cuda = loader->get();
    if (!cuda.ok())
      return cuda.status();
    std::shared_ptr<portable::DeviceKernels> kernels = (*cuda)->makeKernels();
    registerPortableComputeKernels(r, "cuda", kernels);
    registerCommKernels(r, "cuda", portableCommMemory(kernels));
    return absl::OkStatus();
  };
  return gpu;
}
#endif

absl::StatusOr<int> visibleCudaDevices() {
#if PC_HAVE_CUDA
  CudaPluginLoader loader;
  absl::StatusOr<const cuda::CudaPluginApi *> cuda = loader.get();
  if (!cuda.ok())
    return cuda.status();
  return (*cuda)->deviceCount();
#else
  return absl::UnimplementedError("this build has no CUDA backend");
#endif
}

std::vector<Backend> availableBackends() {
  Backend cpu;
  cpu.kind = "cpu";
  // Whether this build has the portable kernels' host build (it needs
  // CCCL's headers).
  std::shared_ptr<portable::DeviceKernels> portableKernels =
      portable::makeHostKernels();
  cpu.makeDevice = [hasPortable = portableKernels != nullptr](
                       int64_t rank, const DeviceOptions &options)
      -> absl::StatusOr<std::unique_ptr<Device>> {
    if (options.portableKernels && !hasPortable)
      return absl::UnimplementedError(
          "this build has no portable kernels (CCCL's Thrust headers were "
          "not found when it was configured)");
    return std::make_unique<CpuDevice>(
        static_cast<int>(rank), options.capacity, options.threads,
        options.portableKernels ? kPortableCpuKind : "cpu");
  };
  // The world's endpoint: shared memory between the ranks of a process, MPI
  // between processes.
  cpu.makeCommunicator = [](World &world, int64_t rank) {
    return world.endpoint(rank);
  };
  cpu.registerKernels = [portableKernels](KernelRegistry &r) -> absl::Status {
    registerCpuComputeKernels(r);
    registerCpuCommKernels(r);
    if (portableKernels) {
      registerPortableComputeKernels(r, kPortableCpuKind, portableKernels);
      // The collectives' copies as a GPU makes them (device kernels, no
      // host access), around the host collectives.
      registerCommKernels(r, kPortableCpuKind,
                          portableCommMemory(portableKernels));
    }
    return absl::OkStatus();
  };
  std::vector<Backend> all;
  all.push_back(std::move(cpu));
#if PC_HAVE_CUDA
  all.push_back(cudaBackend());
#endif
  return all;
}

} // namespace pc::runtime

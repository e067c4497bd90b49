//===- Backend.cpp - The backends of this build ---------------------------===//

#include "runtime/exec/Backend.h"

#include "runtime/cpu/CpuDevice.h"
#include "runtime/exec/PortableKernels.h"

namespace pc::runtime {

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
  cpu.registerKernels = [portableKernels](KernelRegistry &r) {
    registerCpuComputeKernels(r);
    registerCpuCommKernels(r);
    if (portableKernels) {
      registerPortableComputeKernels(r, kPortableCpuKind, portableKernels);
      // Their memory is the host's: the CPU collectives move it.
      registerCpuCommKernels(r, kPortableCpuKind);
    }
  };
  return {std::move(cpu)};
}

} // namespace pc::runtime

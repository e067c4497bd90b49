//===- Backend.cpp - The backends of this build ---------------------------===//

#include "runtime/exec/Backend.h"

#include "runtime/cpu/CpuDevice.h"

namespace pc::runtime {

std::vector<Backend> availableBackends() {
  Backend cpu;
  cpu.kind = "cpu";
  cpu.makeDevice = [](int64_t rank, const DeviceOptions &options)
      -> absl::StatusOr<std::unique_ptr<Device>> {
    return std::make_unique<CpuDevice>(static_cast<int>(rank), options.capacity,
                                       options.threads);
  };
  // The world's endpoint: shared memory between the ranks of a process, MPI
  // between processes.
  cpu.makeCommunicator = [](World &world, int64_t rank) {
    return world.endpoint(rank);
  };
  cpu.registerKernels = [](KernelRegistry &r) {
    registerCpuComputeKernels(r);
    registerCpuCommKernels(r);
  };
  return {std::move(cpu)};
}

} // namespace pc::runtime

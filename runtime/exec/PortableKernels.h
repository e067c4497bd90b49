//===- PortableKernels.h - Ops bound to a device's kernels ------*- C++ -*-===//
//
// Registers every compute op of a per-device program on a DeviceKernels
// (runtime/kernels/portable/DeviceKernels.h) for devices of one kind: the
// CUDA backend's kernels under "cuda", and their host build under the
// CPU devices' portable kind (`--kernels portable`).
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_PORTABLEKERNELS_H
#define PC_RUNTIME_EXEC_PORTABLEKERNELS_H

#include "runtime/exec/KernelRegistry.h"
#include "runtime/kernels/portable/DeviceKernels.h"

#include <memory>

namespace pc::runtime {

void registerPortableComputeKernels(
    KernelRegistry &registry, llvm::StringRef kind,
    std::shared_ptr<portable::DeviceKernels> kernels);

/// The data movement, the matrix product and the optimizers
/// (PortableMoves.cpp), which registerPortableComputeKernels includes.
void registerPortableMoves(KernelRegistry &registry, llvm::StringRef kind,
                           const std::shared_ptr<portable::DeviceKernels> &k);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_PORTABLEKERNELS_H

//===- CudaKernels.h - The device kernels on CUDA ---------------*- C++ -*-===//
//
// The portable kernels (runtime/kernels/portable/ThrustKernels.inl) built by
// nvcc for CUDA streams, with cuBLASLt's matrix product (CublasMatmul.h).
// Failures (a launch, a cuBLASLt call) throw, as Thrust's own do; the
// binding (runtime/exec/PortableBinding.h) turns them into a status naming
// the op and the device.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_CUDA_CUDAKERNELS_H
#define PC_RUNTIME_CUDA_CUDAKERNELS_H

#include "runtime/kernels/portable/DeviceKernels.h"

#include <memory>

namespace pc::cuda {

std::unique_ptr<runtime::portable::DeviceKernels> makeCudaKernels();

} // namespace pc::cuda

#endif // PC_RUNTIME_CUDA_CUDAKERNELS_H

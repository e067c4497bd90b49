//===- NoHostKernels.cpp - A build without the portable kernels -----------===//
//
// Built in place of HostKernels.cpp where CCCL's headers are missing.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/portable/DeviceKernels.h"

namespace pc::runtime::portable {

std::unique_ptr<DeviceKernels> makeHostKernels() { return nullptr; }

} // namespace pc::runtime::portable

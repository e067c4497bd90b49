//===- PortableComm.h - Collectives' copies on a device's memory -*- C++
//-*-===//
//
// The communication kernels' memory operations (runtime/comm/BoxingSteps.h)
// on memory the host may not touch: packing, unpacking and zeroing through
// the device kernels' indexed copies on the firing's stream, temporaries
// from the device's allocator. The CUDA backend's comm kernels use it with
// NCCL; CPU devices running the portable kernels use it with the host
// collectives, which is how CI runs it.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_PORTABLECOMM_H
#define PC_RUNTIME_EXEC_PORTABLECOMM_H

#include "runtime/exec/KernelRegistry.h"
#include "runtime/kernels/portable/DeviceKernels.h"

#include <memory>

namespace pc::runtime {

CommMemory portableCommMemory(std::shared_ptr<portable::DeviceKernels> kernels);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_PORTABLECOMM_H

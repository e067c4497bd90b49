//===- EmulatedCompute.h - Compute kernels replaced by timed waits -*- C++
//-*-===//
//
// Emulated compute runs a program's communication, parameters, streams and
// schedule for real but replaces each compute kernel by a wait of the time
// an op profile measured for it alone (dialect/OpProfile.h): the stream is
// held for that long, as a GPU kernel holds its GPU, without holding a
// core. It measures what the runtime makes of a schedule (a pipeline's
// bubble) on a machine with fewer cores than devices, where real kernels
// would wait for the CPU as well as for each other. The values it computes
// are meaningless: an emulated op's results are zeros made once at bind
// time, shared by every firing.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_EMULATEDCOMPUTE_H
#define PC_RUNTIME_EXEC_EMULATEDCOMPUTE_H

#include "runtime/exec/KernelRegistry.h"

namespace pc::runtime {

/// A kernel for `op` that waits `seconds` from the start of its firing and
/// gives zeros of the op's result types (made now, in `context.tensors`,
/// which must be host-addressable: a CPU device's).
absl::StatusOr<Kernel> emulatedKernel(mlir::Operation *op, double seconds,
                                      BindContext &context);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_EMULATEDCOMPUTE_H

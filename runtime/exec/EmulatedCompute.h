//===- EmulatedCompute.h - Compute kernels replaced by waits ----*- C++ -*-===//
//
// Emulated compute runs a program's communication, parameters, streams and
// schedule for real but replaces each compute kernel by a wait of the time
// an op profile measured for it (dialect/OpProfile.h): the stream is
// held for that long, as a GPU kernel holds its GPU, without holding a
// core. It measures what the runtime makes of a schedule (a pipeline's
// bubble) on a machine with fewer cores than devices, where real kernels
// would wait for the CPU as well as for each other. The values it computes
// are meaningless: an emulated op's results are zeros made at bind time.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_EMULATEDCOMPUTE_H
#define PC_RUNTIME_EXEC_EMULATEDCOMPUTE_H

#include "runtime/exec/KernelRegistry.h"

#include <map>
#include <tuple>

namespace pc::runtime {

/// One rank's zero tensors, one per (memory, shape, element type), shared
/// by every emulated op and firing that makes one: tensors are immutable,
/// and a tensor per op of an unrolled pipeline (an op per micro-batch)
/// would hold far more than the program's real peak.
class ZeroTensors {
public:
  absl::StatusOr<std::shared_ptr<const Tensor>>
  get(TensorAllocator &memory, const std::vector<int64_t> &shape,
      CommType type);

private:
  std::map<std::tuple<TensorAllocator *, std::vector<int64_t>, CommType>,
           std::shared_ptr<const Tensor>>
      made;
};

/// The longest wait: longer than any kernel. A profile's time past it is
/// a mistake that would otherwise overflow the clock's arithmetic.
inline constexpr double kMaxEmulatedWaitSeconds = 24 * 3600;

/// Whether emulation leaves `op` to its kernel: views, which move no bytes
/// and whose kernel costs less than any wait.
bool keepsKernel(mlir::Operation *op);

/// A kernel for `op` that waits `seconds` (0 to kMaxEmulatedWaitSeconds,
/// as CpuSession::setEmulatedCompute admits) from the start of its firing and
/// gives zeros of the op's result types, from `zeros` in the memory the op
/// writes (the host's for an op marked pc.host). The device must be a CPU
/// device (kind "cpu" or "cpu-portable").
absl::StatusOr<Kernel> emulatedKernel(mlir::Operation *op, double seconds,
                                      BindContext &context, ZeroTensors &zeros);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_EMULATEDCOMPUTE_H

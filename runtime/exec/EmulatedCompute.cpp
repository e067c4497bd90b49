//===- EmulatedCompute.cpp - Compute kernels replaced by waits ------------===//

#include "runtime/exec/EmulatedCompute.h"

#include "dialect/PcOps.h"
#include "dialect/ProgramAttrs.h"
#include "runtime/exec/Backend.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace pc::runtime {
namespace {

/// Linux wakes a sleeping thread up to 50 us late by default (its timer
/// slack), a large share of a kernel of a few hundred microseconds; the
/// stream's thread asks for 1 us. One cheap call per firing, beside waits
/// of milliseconds.
void tightenTimerSlack() {
#ifdef __linux__
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
}

} // namespace

absl::StatusOr<std::shared_ptr<const Tensor>>
ZeroTensors::get(TensorAllocator &memory, const std::vector<int64_t> &shape,
                 CommType type) {
  auto key = std::make_tuple(&memory, shape, type);
  if (auto it = made.find(key); it != made.end())
    return it->second;
  absl::StatusOr<std::shared_ptr<Tensor>> z = memory.allocate(shape, type);
  if (!z.ok())
    return z.status();
  std::memset((*z)->data(), 0, (*z)->byteSize());
  return made[key] = *std::move(z);
}

bool keepsKernel(mlir::Operation *op) {
  return mlir::isa<ReshapeOp, AfterOp, SelectOp>(op);
}

absl::StatusOr<Kernel> emulatedKernel(mlir::Operation *op, double seconds,
                                      BindContext &context,
                                      ZeroTensors &zeros) {
  std::string kind(context.tensors.device().kind());
  if (kind != "cpu" && kind != kPortableCpuKind)
    return absl::FailedPreconditionError(absl::StrCat(
        "emulated compute runs on CPU devices, not on '", kind, "'"));
  TensorAllocator &memory = attrs::isHost(op) && context.hostTensors
                                ? *context.hostTensors
                                : context.tensors;
  std::vector<std::shared_ptr<const Tensor>> results;
  for (mlir::Type t : op->getResultTypes()) {
    absl::StatusOr<CommType> type = resultType(t, context);
    if (!type.ok())
      return type.status();
    absl::StatusOr<std::shared_ptr<const Tensor>> z =
        zeros.get(memory, shapeOf(t), *type);
    if (!z.ok())
      return z.status();
    results.push_back(*std::move(z));
  }
  auto wait = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
  return Kernel([results = std::move(results), wait](KernelIO &io) {
    auto start = std::chrono::steady_clock::now();
    tightenTimerSlack();
    for (size_t r = 0; r < results.size(); ++r)
      io.outputs[r] = results[r];
    std::this_thread::sleep_until(start + wait);
    return absl::OkStatus();
  });
}

} // namespace pc::runtime

//===- EmulatedCompute.cpp - Compute kernels replaced by timed waits ------===//

#include "runtime/exec/EmulatedCompute.h"

#include "absl/strings/str_cat.h"

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
/// stream's thread asks for 1 us, once.
void tightenTimerSlack() {
#ifdef __linux__
  thread_local bool done = false;
  if (!done) {
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    done = true;
  }
#endif
}

} // namespace

absl::StatusOr<Kernel> emulatedKernel(mlir::Operation *op, double seconds,
                                      BindContext &context) {
  std::string kind(context.tensors.device().kind());
  if (kind != "cpu")
    return absl::FailedPreconditionError(absl::StrCat(
        "emulated compute runs on CPU devices, not on '", kind, "'"));
  std::vector<std::shared_ptr<const Tensor>> zeros;
  for (mlir::Type t : op->getResultTypes()) {
    absl::StatusOr<CommType> type = resultType(t, context);
    if (!type.ok())
      return type.status();
    absl::StatusOr<std::shared_ptr<Tensor>> z =
        context.tensors.allocate(shapeOf(t), *type);
    if (!z.ok())
      return z.status();
    std::memset((*z)->data(), 0, (*z)->byteSize());
    zeros.push_back(*std::move(z));
  }
  auto wait = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::max(0.0, seconds)));
  return Kernel([zeros = std::move(zeros), wait](KernelIO &io) {
    auto start = std::chrono::steady_clock::now();
    tightenTimerSlack();
    for (size_t r = 0; r < zeros.size(); ++r)
      io.outputs[r] = zeros[r];
    std::this_thread::sleep_until(start + wait);
    return absl::OkStatus();
  });
}

} // namespace pc::runtime

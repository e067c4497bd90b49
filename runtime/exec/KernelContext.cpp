//===- KernelContext.cpp - Where a kernel runs, and its memory ------------===//

#include "runtime/exec/KernelContext.h"

#include <cassert>

namespace pc::runtime {

TensorAllocator::~TensorAllocator() {
  assert(ledger->bytes.live == 0 && "a tensor outlives its device");
}

absl::StatusOr<std::shared_ptr<Tensor>>
TensorAllocator::allocate(std::vector<int64_t> shape, CommType type) {
  std::lock_guard<std::mutex> lock(ledger->mu);
  absl::StatusOr<Tensor> t = Tensor::allocate(dev.allocator(), shape, type);
  if (!t.ok())
    return t.status();
  int64_t bytes = static_cast<int64_t>(t->byteSize());
  TensorBytes &b = ledger->bytes;
  b.live += bytes;
  b.peak = std::max(b.peak, b.live);
  // The deleter holds the ledger, not the allocator: a tensor kept past the
  // run (a parameter, a result) still uncounts itself.
  return std::shared_ptr<Tensor>(new Tensor(*std::move(t)),
                                 [ledger = ledger, bytes](Tensor *dead) {
                                   std::lock_guard<std::mutex> lock(ledger->mu);
                                   ledger->bytes.live -= bytes;
                                   delete dead;
                                 });
}

TensorBytes TensorAllocator::count() const {
  std::lock_guard<std::mutex> lock(ledger->mu);
  return ledger->bytes;
}

void TensorAllocator::resetPeak() {
  std::lock_guard<std::mutex> lock(ledger->mu);
  ledger->bytes.peak = ledger->bytes.live;
  dev.allocator().resetPeak();
}

} // namespace pc::runtime

//===- HostMemory.h - What the machine can allocate -------------*- C++ -*-===//
//
// Checks of host allocations sized by a model or a file against the memory
// the machine has, so that a tensor larger than memory is an error naming
// it, not an abort in the allocator.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_DEVICE_HOSTMEMORY_H
#define PC_RUNTIME_DEVICE_HOSTMEMORY_H

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

#include <cstdint>

namespace pc::runtime {

/// Bytes the machine can allocate now without swapping (MemAvailable).
int64_t availableHostMemory();

/// ResourceExhausted naming `what` when `bytes` (negative: overflowed) do
/// not fit in availableHostMemory().
absl::Status checkHostMemory(int64_t bytes, absl::string_view what);

} // namespace pc::runtime

#endif // PC_RUNTIME_DEVICE_HOSTMEMORY_H

//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Reads and writes the .npy format (version 1.0 and 2.0, little endian,
// C order) for f16, f32, f64, i32 and i64 arrays: pc-run's inputs and
// outputs. NumPy has no bf16; bf16 tensors are written as f32.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_NPY_H
#define PC_RUNTIME_EXEC_NPY_H

#include "runtime/device/HostTensor.h"

#include "absl/status/statusor.h"

#include <string>

namespace pc::runtime {

absl::StatusOr<HostTensor> readNpy(const std::string &path);
/// Writes `t` to `path` through a temporary file and a rename, so that a
/// crash never leaves a partial file under the final name.
absl::Status writeNpy(const std::string &path, const HostTensor &t);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_NPY_H

//===- Safetensors.h - Reading .safetensors files ---------------*- C++ -*-===//
//
// The safetensors format: an 8-byte little-endian header length, a JSON
// header mapping tensor names to {dtype, shape, data_offsets}, then the
// data. pc-run loads parameters from it (--params).
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_SAFETENSORS_H
#define PC_RUNTIME_EXEC_SAFETENSORS_H

#include "runtime/device/HostTensor.h"

#include "absl/status/statusor.h"

#include <map>
#include <string>

namespace pc::runtime {

/// Every tensor of the file (F32, F64, I32 and I64), by name. A malformed
/// file is an error that names the file and, where it can, the tensor.
absl::StatusOr<std::map<std::string, HostTensor>>
readSafetensors(const std::string &path);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_SAFETENSORS_H

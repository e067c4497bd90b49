//===- Safetensors.h - Reading .safetensors files ---------------*- C++ -*-===//
//
// The safetensors format: an 8-byte little-endian header length, a JSON
// header mapping tensor names to {dtype, shape, data_offsets}, then the
// data. pc-run loads parameters from it (--params) and checkpoints are
// made of it (runtime/exec/Checkpoint.h).
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_SAFETENSORS_H
#define PC_RUNTIME_EXEC_SAFETENSORS_H

#include "runtime/device/HostTensor.h"
#include "runtime/exec/Input.h"

#include "absl/status/statusor.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <string>

namespace pc::runtime {

/// Every tensor of the file (F32, F16, BF16, F64, I32 and I64), by name,
/// mapped into memory: the header is checked against the file's size, and a
/// tensor's bytes are read only where a piece of it is. `metadata` (when
/// given) gets the header's __metadata__ strings. A malformed file is an
/// error that names the file and, where it can, the tensor.
absl::StatusOr<std::map<std::string, Input>>
mapSafetensors(const std::string &path,
               std::map<std::string, std::string> *metadata = nullptr);

/// The same, read whole into memory.
absl::StatusOr<std::map<std::string, HostTensor>>
readSafetensors(const std::string &path);

/// Writes `tensors` to `path` atomically: to a temporary file next to it,
/// flushed to disk, then renamed over `path`, so that a crash leaves either
/// the old file or the new one, never a part. `metadata` goes to the
/// header's __metadata__.
absl::Status
writeSafetensors(const std::string &path,
                 const std::map<std::string, HostTensor> &tensors,
                 const std::map<std::string, std::string> &metadata = {});

/// InvalidArgument naming `what` when `text` nests JSON objects or arrays
/// deeper than `maxDepth` (parsers recurse; hostile files nest deeply).
absl::Status checkJsonNesting(llvm::StringRef text, const std::string &what,
                              int maxDepth);

/// Writes `bytes` to `path` through a temporary file, fsync and rename.
absl::Status writeFileAtomically(const std::string &path,
                                 const std::string &bytes);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_SAFETENSORS_H

//===- Files.h - The file formats pc reads and writes -----------*- C++ -*-===//
//
// The files pc-run and sessions read and write, as public calls on host
// tensors: NumPy .npy arrays (inputs, outputs), .safetensors files of
// named tensors (parameters) and checkpoints (Session::save). They wrap
// the runtime's own readers and writers, so a file these calls accept is
// one pc accepts, and the other way round. Writes are atomic: a temporary
// file next to the target, flushed, then renamed over it. Every error is
// an absl::Status naming the call and the file.
//
//===----------------------------------------------------------------------===//

#ifndef PC_API_FILES_H
#define PC_API_FILES_H

#include "runtime/device/HostTensor.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <map>
#include <string>

namespace pc::api {

/// A .npy file (little endian, C order) of f16, f32, f64, i32 or i64
/// elements, read whole.
absl::StatusOr<runtime::HostTensor> readNpy(const std::string &path);
/// Writes `tensor` as .npy. NumPy has no bf16: a bf16 tensor is written as
/// the f32 values it widens to exactly (and reads back as f32).
absl::Status writeNpy(const std::string &path,
                      const runtime::HostTensor &tensor);

/// Every tensor of a .safetensors file (F32, F16, BF16, F64, I32, I64), by
/// name. Checksums that pc recorded are checked.
absl::StatusOr<std::map<std::string, runtime::HostTensor>>
readSafetensors(const std::string &path);
/// Writes `tensors` as .safetensors, with a checksum of each that readers
/// (this one, Session::loadParameters) check.
absl::Status
writeSafetensors(const std::string &path,
                 const std::map<std::string, runtime::HostTensor> &tensors);

/// A checkpoint's contents: the next training step's number, and every
/// saved parameter (model weights and optimizer state) as a whole logical
/// tensor by name.
struct Checkpoint {
  int64_t step = 0;
  std::map<std::string, runtime::HostTensor> tensors;
  /// What the save recorded beside the step (e.g. "data.position", the
  /// data loader's place).
  std::map<std::string, std::string> metadata;
};
/// Reads a checkpoint that Session::save wrote, in either format: one
/// logical .safetensors file, or a directory of shards (index.json and
/// per-rank files), whose pieces are assembled into whole tensors.
absl::StatusOr<Checkpoint> readCheckpoint(const std::string &path);

/// `weights` (model weights by name) with LoRA adapters folded in, for
/// export: each `W` that has `W.lora_a` (A, [in, r]) and `W.lora_b` (B,
/// [r, out]) becomes W + (alpha / r)·A·B, computed in f32 and rounded to
/// W's type once, and the adapters are left out. InvalidArgument, naming
/// the tensor, for an adapter without its pair or base, or shapes that do
/// not compose.
absl::StatusOr<std::map<std::string, runtime::HostTensor>>
mergeLora(const std::map<std::string, runtime::HostTensor> &weights,
          double alpha);

} // namespace pc::api

#endif // PC_API_FILES_H

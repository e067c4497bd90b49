//===- Checkpoint.h - Saving and loading parameters -------------*- C++ -*-===//
//
// A checkpoint holds every parameter of a session, weights and optimizer
// state, in one of two formats:
//  - logical: one .safetensors file of whole (logical) tensors;
//  - sharded: a directory of per-rank .safetensors files, each with the
//    pieces its rank holds (a replicated piece once), and `index.json`,
//    which says which box of which tensor each piece is.
// Either loads on any mesh and with any layout. Loading maps the files and
// checks the index and headers; the session then reads, for each of its
// ranks, only the box of each tensor the rank holds (runtime/exec/Input.h),
// so a process of a large run never reads the whole checkpoint.
//
// Saves are atomic. A logical file is written to a temporary name, flushed
// and renamed. A sharded save writes a new generation of shard files and
// then replaces index.json the same way; the index is the commit point, so
// a crash before it leaves the previous checkpoint whole, and older
// generations are deleted only after it.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_CHECKPOINT_H
#define PC_RUNTIME_EXEC_CHECKPOINT_H

#include "runtime/exec/CpuExecutor.h"
#include "runtime/exec/Input.h"

namespace pc::runtime {

enum class CheckpointFormat { Logical, Sharded };

/// Saves `session`'s parameters to `path` (a file for Logical, a directory
/// for Sharded), recording `step` and `metadata` (strings by key, e.g. the
/// data loader's position) beside them.
absl::Status
saveCheckpoint(CpuSession &session, const std::string &path,
               CheckpointFormat format, int64_t step,
               const std::map<std::string, std::string> &metadata = {});

/// A checkpoint's logical tensors by name, readable by box, and the step it
/// was saved at.
struct LoadedCheckpoint {
  std::map<std::string, Input> tensors;
  int64_t step = 0;
  /// What the save recorded beside the step.
  std::map<std::string, std::string> metadata;
};

/// Reads either format (a directory is sharded). Errors name the file and
/// the tensor: a corrupt file, a piece that does not fit its tensor, shards
/// that do not cover a tensor.
absl::StatusOr<LoadedCheckpoint> readCheckpoint(const std::string &path);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_CHECKPOINT_H

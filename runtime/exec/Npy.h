//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Reads and writes the .npy format (version 1.0 and 2.0, little endian,
// C order) for f16, f32, f64, i32 and i64 arrays: pc-run's inputs and
// outputs. NumPy has no bf16; bf16 tensors are written as f32. A file read
// as a run's input is mapped into memory, so that a process reads only the
// pages of its ranks' pieces (runtime/exec/Input.h).
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_NPY_H
#define PC_RUNTIME_EXEC_NPY_H

#include "runtime/device/HostTensor.h"

#include "absl/status/statusor.h"

#include <memory>
#include <string>

namespace llvm {
class MemoryBuffer;
class StringRef;
} // namespace llvm

namespace pc::runtime {

/// A .npy file's header: its dtype as NumPy spells it ("<f4", "<u2", ...),
/// its shape (C order), and where its data starts.
struct NpyHeader {
  std::string descr;
  std::vector<int64_t> shape;
  size_t dataOffset = 0;
};

/// Parses and checks the header at the start of `bytes` (versions 1 to 3;
/// a hostile header is an error naming `path`, never a crash). It does not
/// check the data's size, which depends on the dtype.
absl::StatusOr<NpyHeader> parseNpyHeader(const std::string &path,
                                         llvm::StringRef bytes);

/// A .npy file mapped into memory: the header parsed and checked against the
/// file's size, the data paged in only where it is read.
class MappedNpy {
public:
  static absl::StatusOr<std::shared_ptr<const MappedNpy>>
  open(const std::string &path);
  ~MappedNpy();

  const std::string &path() const { return filePath; }
  const std::vector<int64_t> &shape() const { return dims; }
  CommType type() const { return elementType; }
  /// The row-major elements, in the mapping.
  const char *data() const { return elements; }
  /// FailedPrecondition when the file's size or modification time is not
  /// what it was when mapped: reading a mapping whose file shrank faults.
  absl::Status unchanged() const;

private:
  MappedNpy() = default;
  std::string filePath;
  uint64_t size = 0;
  int64_t modified = 0;
  std::vector<int64_t> dims;
  CommType elementType = CommType::F32;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  const char *elements = nullptr;
};

/// The whole file, in memory.
absl::StatusOr<HostTensor> readNpy(const std::string &path);
/// Writes `t` to `path` through a temporary file and a rename, so that a
/// crash never leaves a partial file under the final name.
absl::Status writeNpy(const std::string &path, const HostTensor &t);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_NPY_H

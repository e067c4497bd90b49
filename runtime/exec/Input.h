//===- Input.h - A logical tensor read by pieces ----------------*- C++ -*-===//
//
// The session feeds each hosted rank its piece of every logical input, and
// starts each rank's piece of a parameter from a file. An Input is where
// those pieces come from, and it reads only what a piece needs:
//  - a tensor in host memory;
//  - a .npy file mapped into memory (a run's input);
//  - tensors of .safetensors files mapped into memory: one whole tensor (a
//    logical checkpoint, --params), or the pieces of a sharded checkpoint,
//    boxes that tile the tensor.
// Under mpirun no process reads the parts of a file its ranks do not need:
// the pages of a mapping are read when touched. That is page by page: a box
// split along inner dims touches every row, so a process then reads every
// page of short rows.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_INPUT_H
#define PC_RUNTIME_EXEC_INPUT_H

#include "runtime/device/HostTensor.h"
#include "runtime/exec/Npy.h"

#include "absl/status/statusor.h"

#include <memory>
#include <optional>
#include <span>
#include <string>

namespace pc::runtime {

class Input {
public:
  /// A box of the tensor held somewhere the host can read.
  struct Piece {
    std::vector<int64_t> offsets, shape;
    const char *data = nullptr;
    /// The xxh3 of the piece's bytes, when its file recorded one: checked
    /// the first time the piece is read (a corrupt file is an error, not
    /// wrong numbers). `origin` names the file and tensor in that error.
    std::optional<uint64_t> checksum;
    std::string origin;
    /// For token ids (Input::ids): the index in its file of the piece's
    /// first id, so that an error names where a bad id is.
    int64_t position = 0;
  };

  /// How token ids are stored (Input::ids): unsigned 8, 16 or 32 bits (text
  /// bytes, GPT-style token files), or signed 32 or 64 bits (.npy arrays).
  enum class IdFormat : uint8_t { U8, U16, U32, I32, I64 };
  static int64_t bytesOf(IdFormat format);

  /// `t`, borrowed: it must outlive the runs that read it.
  static Input borrow(const HostTensor &t);
  static Input own(HostTensor t);
  /// The elements of `file`, converted to `type` as they are read.
  static Input file(std::shared_ptr<const MappedNpy> file, CommType type);
  /// A tensor of `shape` and `type` made of `pieces` (boxes that tile it,
  /// which the caller checked) in memory that `keepAlive` holds.
  static Input tiled(std::vector<int64_t> shape, CommType type,
                     std::vector<Piece> pieces,
                     std::shared_ptr<const void> keepAlive);
  /// Token ids of `format`, read as `type` (i32 or i64): a batch of a
  /// dataset, whose pieces (typically one per row) point into mapped files.
  /// Reading a box checks every id it reads: below `limit` (the model's
  /// vocabulary) and not negative, or an OutOfRange error naming the
  /// piece's origin (its file) and the id's position in it.
  static Input ids(std::vector<int64_t> shape, CommType type, IdFormat format,
                   int64_t limit, std::vector<Piece> pieces,
                   std::shared_ptr<const void> keepAlive);

  const std::vector<int64_t> &shape() const { return dims; }
  /// The type pieces are read in.
  CommType type() const { return want; }
  /// The box at `offsets` of `sizes`, in type(). A conversion is exact or
  /// an error naming the value (an i64 beyond i32's range fed to an i32
  /// input); f32 read as bf16 rounds to nearest even, the one way to feed
  /// bf16 from NumPy, which has no bf16.
  absl::StatusOr<HostTensor> box(std::span<const int64_t> offsets,
                                 std::span<const int64_t> sizes) const;
  /// All of it.
  absl::StatusOr<HostTensor> whole() const;
  /// For token ids (Input::ids): where the box's ids come from, one
  /// "origin@position" per piece it overlaps (the file and the index of the
  /// piece's first id there; a dataset's sample), space-separated; empty
  /// for other inputs. Traces name what each rank read with it.
  std::string sources(std::span<const int64_t> offsets,
                      std::span<const int64_t> sizes) const;
  /// Its pieces, in their stored type, and what keeps their memory alive:
  /// for assembling an Input of many files' pieces.
  const std::vector<Piece> &parts() const { return pieces; }
  CommType storedType() const { return stored; }
  const std::shared_ptr<const void> &holder() const { return keepAlive; }

private:
  Input() = default;
  std::vector<int64_t> dims;
  CommType stored = CommType::F32, want = CommType::F32;
  /// Set for Input::ids.
  std::optional<IdFormat> idFormat;
  int64_t idLimit = 0;
  absl::StatusOr<HostTensor> idBox(std::span<const int64_t> offsets,
                                   std::span<const int64_t> sizes) const;
  std::vector<Piece> pieces;
  std::shared_ptr<const void> keepAlive;
  /// Per piece, whether its checksum was verified; shared by copies.
  struct Verified;
  std::shared_ptr<Verified> verified;
  absl::Status verify(size_t piece) const;
};

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_INPUT_H

//===- Input.h - A logical input that runs slice pieces from ----*- C++ -*-===//
//
// The session feeds each hosted rank its piece of every logical input. An
// Input is where the pieces come from: a tensor in host memory, or a .npy
// file mapped into memory, in which case a process reads only the pages of
// its own ranks' pieces (under mpirun, no process reads the whole file
// unless its ranks need all of it).
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_INPUT_H
#define PC_RUNTIME_EXEC_INPUT_H

#include "runtime/device/HostTensor.h"
#include "runtime/exec/Npy.h"

#include <memory>
#include <span>

namespace pc::runtime {

class Input {
public:
  /// `t`, borrowed: it must outlive the runs that read it.
  static Input borrow(const HostTensor &t);
  static Input own(HostTensor t);
  /// The elements of `file`, converted to `type` as they are read.
  static Input file(std::shared_ptr<const MappedNpy> file, CommType type);

  const std::vector<int64_t> &shape() const;
  CommType type() const { return want; }
  /// The box at `offsets` of `sizes`, in type().
  HostTensor box(std::span<const int64_t> offsets,
                 std::span<const int64_t> sizes) const;

private:
  Input() = default;
  std::shared_ptr<const HostTensor> owned;
  const HostTensor *host = nullptr;
  std::shared_ptr<const MappedNpy> npy;
  CommType want = CommType::F32;
};

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_INPUT_H

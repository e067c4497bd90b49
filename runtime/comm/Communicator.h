//===- Communicator.h - Collectives between devices -------------*- C++ -*-===//
//
// The one interface through which the runtime moves data between devices:
// shared memory between CPU virtual devices now, NCCL and MPI later. An
// endpoint belongs to one global rank. A group is the list of the global
// ranks that take part, in group order; every member calls the same
// collective with the same group, in the same order as the others
// (the compiler emits one program order for all ranks, so mismatched orders
// cannot arise from compiled programs; the implementation checks what it
// can and reports the rest as errors, never a hang).
//
// Buffers are flat arrays of `count` elements of one type. Per-member
// counts (`counts[i]` for member i) allow uneven pieces.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_COMM_COMMUNICATOR_H
#define PC_RUNTIME_COMM_COMMUNICATOR_H

#include "dialect/Sharding.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace pc::runtime {

/// Element types of tensors and collectives. F16 and BF16 are stored as
/// their 16 bits; reductions on them accumulate each step in f32 and round
/// back (runtime/device/HalfFloat.h).
/// U8 holds codes (8-bit optimizer states): stored, copied and moved, never
/// reduced.
enum class CommType : uint8_t { F32, F64, I32, I64, F16, BF16, U8 };

/// "f32", "bf16", ... as the IR spells them.
const char *nameOf(CommType type);

int64_t sizeOf(CommType type);

/// What one endpoint did.
struct CommStats {
  int64_t bytesSent = 0;
  int64_t bytesReceived = 0;
  /// Calls per collective kind ("all_reduce", ..., "send", "recv").
  std::map<std::string, int64_t> calls;
  /// Bytes per collective kind: {sent, received}.
  std::map<std::string, std::pair<int64_t, int64_t>> bytes;
};

/// The error a member gets when a collective it waits in, or enters, is
/// released by another member's abort: the cause's code and message, plus a
/// payload that marks it as a consequence, so that a runner reports the
/// cause rather than the ranks it released. Wrappers must keep payloads.
absl::Status releasedByAbort(const absl::Status &cause, absl::string_view what);
bool isReleasedByAbort(const absl::Status &status);

/// `rank`'s position in `group`, the members of a collective `kind` in a
/// world of `worldSize` ranks: InvalidArgument when `rank` is not in the
/// group exactly once or a member is outside the world. Every communicator
/// checks its calls' groups with it.
absl::StatusOr<int64_t> memberIndex(const char *kind,
                                    std::span<const int64_t> group,
                                    int64_t rank, int64_t worldSize);

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int64_t rank() const = 0;

  /// Every member ends with the reduction of all members' `count` elements.
  virtual absl::Status allReduce(void *data, int64_t count, CommType type,
                                 ReduceKind reduce,
                                 std::span<const int64_t> group) = 0;
  /// `out` gets every member's piece in group order; this member's piece is
  /// `in`, of `counts[index]` elements.
  virtual absl::Status allGather(const void *in, void *out,
                                 std::span<const int64_t> counts, CommType type,
                                 std::span<const int64_t> group) = 0;
  /// `in` holds sum(counts) elements on every member; member i ends with
  /// piece i of their reduction in `out`.
  virtual absl::Status reduceScatter(const void *in, void *out,
                                     std::span<const int64_t> counts,
                                     CommType type, ReduceKind reduce,
                                     std::span<const int64_t> group) = 0;
  /// Member i sends `sendCounts[j]` elements (consecutive in `in`, in member
  /// order) to member j, and receives `recvCounts[j]` from member j into
  /// `out`, in member order.
  virtual absl::Status allToAll(const void *in,
                                std::span<const int64_t> sendCounts, void *out,
                                std::span<const int64_t> recvCounts,
                                CommType type,
                                std::span<const int64_t> group) = 0;
  /// Every member ends with member `root`'s `count` elements.
  virtual absl::Status broadcast(void *data, int64_t count, CommType type,
                                 int64_t root,
                                 std::span<const int64_t> group) = 0;
  /// Point to point; a send does not wait for its receive.
  virtual absl::Status send(const void *data, int64_t count, CommType type,
                            int64_t peer, int64_t tag) = 0;
  virtual absl::Status recv(void *data, int64_t count, CommType type,
                            int64_t peer, int64_t tag) = 0;

  virtual CommStats stats() const = 0;

  /// Where the next calls are queued: the stream of the firing that makes
  /// them (a cudaStream_t for NCCL). Host communicators run each call to
  /// its end before returning and ignore it.
  virtual void setStream(void *nativeStream) { (void)nativeStream; }

  /// What the next calls are for (the op, where the user wrote it, the
  /// step), for errors that name a waiting or mismatched call.
  virtual void setCallSite(std::string what) { (void)what; }
};

} // namespace pc::runtime

#endif // PC_RUNTIME_COMM_COMMUNICATOR_H

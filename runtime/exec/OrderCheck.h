//===- OrderCheck.h - Ranks' communication orders, checked together -*- C++
//-*-===//
//
// Each rank fires its communication ops in its own order (the actor core's
// RunOptions::order). One rank's order can be checked alone for deadlocks
// against its own data dependencies (actor::verifyOrder); this file checks
// the ranks' orders against each other, before anything runs:
//  - the collectives over one group come in the same sequence on every
//    member (the k-th collective over a group has one signature, kind,
//    reduction, element type and shape, at the same iteration everywhere,
//    and is one op where the members run one program),
//  - every send has its receive, of the same piece, and
//  - no cycle of waits exists across ranks: a collective completes once all
//    its members reached it, a receive once its send was issued, and each
//    rank issues its ops one after another in its order. A cycle (two
//    stages each receiving before sending to the other; crossed
//    collectives over two groups) would hang; it is an error that names the
//    ranks and ops on it.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_ORDERCHECK_H
#define PC_RUNTIME_EXEC_ORDERCHECK_H

#include "absl/status/status.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pc::runtime {

/// One communication op's firing, in a rank's order.
struct CommEvent {
  int64_t iteration = 0;
  /// For messages: the op and where the user wrote it.
  std::string what;
  /// The op's identity: its program and its index among the program's
  /// communication ops. Members that run one program must issue the same
  /// op as a group's k-th collective.
  std::string program;
  int64_t op = 0;
  /// What every member of a collective must agree on: the kind, the
  /// reduction, the mesh and axes, the element type and the group's shape
  /// (e.g. "all_reduce(sum) f32 [6, 2] on @mesh axes [0]").
  std::string signature;
  /// A collective's members (global ranks); empty when it moves nothing.
  std::vector<int64_t> group;
  /// A point-to-point message: its peer, its tag and its piece (element
  /// type and shape), on which its send and its receive must agree.
  struct Message {
    int64_t peer = 0, tag = 0;
    std::string piece;
  };
  std::vector<Message> sends, recvs;
};

/// Ranks' events as bytes, for gathering them from every process, and
/// back (added to `into`; Internal when `bytes` is garbled).
std::string
encodeOrders(const std::map<int64_t, std::vector<CommEvent>> &byRank);
absl::Status decodeOrders(std::string_view bytes,
                          std::map<int64_t, std::vector<CommEvent>> &into);

/// InvalidArgument naming the ranks and ops when the orders of `byRank`
/// (each rank's events in firing order) do not match or would deadlock:
/// a collective's members disagree on which op it is or on its signature,
/// a rank is missing from a group, a message has no matching send or
/// receive (or they disagree on its piece), or the waits form a cycle.
absl::Status
checkOrders(const std::map<int64_t, std::vector<CommEvent>> &byRank);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_ORDERCHECK_H

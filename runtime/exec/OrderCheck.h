//===- OrderCheck.h - Ranks' communication orders, checked together -*- C++
//-*-===//
//
// Each rank fires its communication ops in its own order (the actor core's
// RunOptions::order). One rank's order can be checked alone for deadlocks
// against its own data dependencies (actor::verifyOrder); this file checks
// the ranks' orders against each other, before anything runs:
//  - the collectives over one group come in the same sequence on every
//    member (the k-th collective over a group is the same op, at the same
//    iteration, everywhere), and
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
  /// A collective's members (global ranks); empty when it moves nothing.
  std::vector<int64_t> group;
  /// Point-to-point messages: (peer, tag).
  std::vector<std::pair<int64_t, int64_t>> sends, recvs;
};

/// Ranks' events as bytes, for gathering them from every process, and
/// back (added to `into`; Internal when `bytes` is garbled).
std::string
encodeOrders(const std::map<int64_t, std::vector<CommEvent>> &byRank);
absl::Status decodeOrders(std::string_view bytes,
                          std::map<int64_t, std::vector<CommEvent>> &into);

/// InvalidArgument naming the ranks and ops when the orders of `byRank`
/// (each rank's events in firing order) do not match or would deadlock.
absl::Status
checkOrders(const std::map<int64_t, std::vector<CommEvent>> &byRank);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_ORDERCHECK_H

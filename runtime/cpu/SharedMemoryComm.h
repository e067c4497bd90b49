//===- SharedMemoryComm.h - Collectives between CPU devices -----*- C++ -*-===//
//
// Collectives between the virtual devices of one process, over shared
// memory. Every member can read every other's buffers, so a collective
// reads what it needs directly instead of passing pieces around a ring in
// n-1 steps with a barrier after each: all-gather and reduce-scatter take
// two barriers (all posted, all done), all-reduce (a reduce-scatter then an
// all-gather over even chunks of the buffer) three, whatever the group's
// size; all-to-all exchanges pairwise; broadcast copies from the root.
// A reduction keeps the ring's order, to the bit: chunk k is folded from
// member k+1's term, then k+2's, around to k's own last, as NCCL's ring
// would. Each endpoint counts the bytes that the ring would send and
// receive for the call (what it moves on MPI or NCCL), which equal the
// cost model's exact bytes (boxing/CostModel.h).
//
// A member that fails outside a collective calls abort(); every member
// waiting for the others to arrive at, or later entering, a collective then
// returns that error. Once all have arrived, the members read each other's
// buffers, so they finish together whatever happens.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_CPU_SHAREDMEMORYCOMM_H
#define PC_RUNTIME_CPU_SHAREDMEMORYCOMM_H

#include "runtime/comm/Communicator.h"

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace pc::runtime {

class SharedMemoryWorld {
public:
  explicit SharedMemoryWorld(int64_t size) : worldSize(size) {}

  int64_t size() const { return worldSize; }
  /// The endpoint of `rank`; one per rank, used by one thread at a time.
  std::unique_ptr<Communicator> endpoint(int64_t rank);
  /// Fails every waiting and later collective with `why`.
  void abort(absl::Status why);

private:
  friend class SharedMemoryComm;

  /// One collective call of one group.
  struct Meeting {
    int64_t size = 0;
    std::string signature; // what the first member called
    bool mismatch = false;
    std::vector<const void *> in;
    std::vector<void *> out;
    std::vector<std::vector<int64_t>> counts;
    int64_t arrived = 0, generation = 0, left = 0;
    // A member was released by an abort before everyone arrived; whether
    // the last barrier completed with everyone.
    bool broken = false, complete = false;
    // Only this meeting's members wait on it (under the world's mutex).
    std::condition_variable cv;
  };

  std::shared_ptr<Meeting> join(const std::string &key, int64_t size);
  /// Waits until every member of `m` arrived here: OK then, on every
  /// member alike. An abort releases the waiters of an `abortable` barrier
  /// (a meeting's first) with its error; past that, members read each
  /// other's buffers, so they wait for each other regardless.
  absl::Status barrier(Meeting &m, bool abortable);
  void leave(const std::string &key, Meeting &m);

  struct Message {
    std::vector<char> bytes;
  };
  /// The messages of one (sender, receiver, tag), and its receiver's wait.
  struct Mailbox {
    std::deque<Message> messages;
    std::condition_variable cv;
  };

  int64_t worldSize;
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Meeting>> meetings;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Mailbox> mail;
  absl::Status aborted;
};

} // namespace pc::runtime

#endif // PC_RUNTIME_CPU_SHAREDMEMORYCOMM_H

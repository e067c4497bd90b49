//===- SharedMemoryComm.h - Collectives between CPU devices -----*- C++ -*-===//
//
// Collectives between the virtual devices of one process, over shared
// memory, with the algorithms NCCL uses on a ring: all-gather and
// reduce-scatter pass pieces around the group in n-1 steps; all-reduce is a
// reduce-scatter then an all-gather over even chunks of the buffer; all-to-all
// exchanges pairwise; broadcast copies from the root. Each endpoint counts
// the bytes it sent and received, which equal the cost model's exact bytes
// (boxing/CostModel.h).
//
// A member that fails outside a collective calls abort(); every member
// waiting in, or later entering, a collective then returns that error.
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
  };

  std::shared_ptr<Meeting> join(const std::string &key, int64_t size);
  /// Waits until every member of `m` arrived here.
  absl::Status barrier(Meeting &m);
  void leave(const std::string &key, Meeting &m);

  struct Message {
    std::vector<char> bytes;
  };

  int64_t worldSize;
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::shared_ptr<Meeting>> meetings;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<Message>> mail;
  absl::Status aborted;
};

} // namespace pc::runtime

#endif // PC_RUNTIME_CPU_SHAREDMEMORYCOMM_H

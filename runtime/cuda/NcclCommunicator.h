//===- NcclCommunicator.h - Collectives between GPUs through NCCL -*- C++
//-*-===//
//
// One rank's endpoint (runtime/comm/Communicator.h) over NCCL: buffers are
// device memory, and every call is queued on the stream of the firing that
// makes it (setStream), in the program's order, which is the same on every
// member. Uneven pieces become grouped broadcasts (all-gather), reduces
// (reduce-scatter) and send/receive pairs (all-to-all).
//
// Communicators are made once per group, at the group's first call, which
// every member reaches in the same order: the group's first member makes
// NCCL's unique id and the rank's host endpoint (the world's: shared memory
// in a process, MPI between processes) broadcasts it to the group. Point-
// to-point messages use the pair's communicator. Initialisation is
// non-blocking and bounded by the timeout.
//
// Failures: a watchdog thread polls every communicator's asynchronous
// error and the completion of every call against the timeout. A failed or
// overdue call (a peer that died or stalls) aborts the rank's NCCL
// communicators, so that no kernel waits forever, and every later call
// returns the error, naming the rank, the call and its site.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_CUDA_NCCLCOMMUNICATOR_H
#define PC_RUNTIME_CUDA_NCCLCOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace pc::cuda {

using runtime::CommStats;
using runtime::CommType;

class NcclCommunicator final : public runtime::Communicator {
public:
  /// Rank `rank` on CUDA device `ordinal`; `host` bootstraps (see above).
  NcclCommunicator(std::unique_ptr<runtime::Communicator> host, int64_t rank,
                   int ordinal, double timeoutSeconds);
  ~NcclCommunicator() override;

  int64_t rank() const override { return me; }
  absl::Status allReduce(void *data, int64_t count, CommType type,
                         ReduceKind reduce,
                         std::span<const int64_t> group) override;
  absl::Status allGather(const void *in, void *out,
                         std::span<const int64_t> counts, CommType type,
                         std::span<const int64_t> group) override;
  absl::Status reduceScatter(const void *in, void *out,
                             std::span<const int64_t> counts, CommType type,
                             ReduceKind reduce,
                             std::span<const int64_t> group) override;
  absl::Status allToAll(const void *in, std::span<const int64_t> sendCounts,
                        void *out, std::span<const int64_t> recvCounts,
                        CommType type, std::span<const int64_t> group) override;
  absl::Status broadcast(void *data, int64_t count, CommType type, int64_t root,
                         std::span<const int64_t> group) override;
  absl::Status send(const void *data, int64_t count, CommType type,
                    int64_t peer, int64_t tag) override;
  absl::Status recv(void *data, int64_t count, CommType type, int64_t peer,
                    int64_t tag) override;
  CommStats stats() const override;
  void setCallSite(std::string what) override { site = std::move(what); }
  void setStream(void *nativeStream) override { stream = nativeStream; }

private:
  struct Comm;
  /// The communicator of `group` (in group order), made at its first use.
  absl::StatusOr<Comm *> commOf(std::span<const int64_t> group,
                                const char *kind);
  /// Runs `enqueue` (NCCL calls on `c`) and arms the watchdog for it.
  absl::Status issue(Comm &c, const char *kind,
                     const std::function<int()> &enqueue);
  /// Waits while `c`'s last call is in progress (a non-blocking
  /// communicator), up to the timeout.
  absl::Status settle(Comm &c, const char *kind);
  absl::Status failed() const;
  void fail(absl::Status why);
  void watch();
  void tally(const char *kind, int64_t sent, int64_t received);

  std::unique_ptr<runtime::Communicator> host;
  int64_t me;
  int gpu;
  std::chrono::duration<double> timeout;
  void *stream = nullptr;
  std::string site;

  mutable std::mutex mu;
  std::map<std::vector<int64_t>, std::unique_ptr<Comm>> comms;
  /// Calls in flight: an event after each, with its deadline.
  struct Pending {
    void *event; // cudaEvent_t
    std::chrono::steady_clock::time_point deadline;
    std::string what;
    Comm *comm;
  };
  std::deque<Pending> pending;
  absl::Status failure;
  CommStats counters;
  bool stopping = false;
  std::condition_variable wake;
  std::thread watchdog;
};

} // namespace pc::cuda

#endif // PC_RUNTIME_CUDA_NCCLCOMMUNICATOR_H

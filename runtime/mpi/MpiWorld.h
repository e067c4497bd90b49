//===- MpiWorld.h - Ranks in many processes, through MPI --------*- C++ -*-===//
//
// The world of an `mpirun -np N` (or `srun --mpi=pmix`) launch: process p
// hosts global ranks [p*K, p*K + K) for K = devicesPerProcess, so that the
// innermost mesh axes (tensor parallel) stay inside a process and the outer
// ones (data parallel) cross processes.
//
// Collectives run as MPI collectives on one communicator per group, created
// at the group's first collective and kept (never per call), when every
// process hosts one rank (K = 1); with several ranks per process they run
// the in-process ring algorithms over MPI point-to-point messages instead. Each
// call is bounded by the timeout: a blocking MPI collective runs on the
// endpoint's caller thread while the rank waits for it with a deadline, and
// point-to-point requests are polled. A rank that does not come within the
// timeout is named: every process answers status queries from a service thread,
// so a waiting rank tells a dead process (no answer) from a late one (alive,
// elsewhere).
//
// Failures travel: abort() sends the cause to every process, whose waiting
// ranks return it at once. A process whose MPI call could not finish
// (a timeout, an abort) does not call MPI_Finalize, which would hang; it
// exits with the error. A SIGTERM from the launcher (mpirun ends a run when
// one process dies) prints what each rank was waiting in before the process
// ends.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_MPI_MPIWORLD_H
#define PC_RUNTIME_MPI_MPIWORLD_H

#include "runtime/comm/World.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <mpi.h>

namespace pc::runtime {

class MpiWorld final : public World {
public:
  /// Initializes MPI (MPI_THREAD_MULTIPLE) unless the caller did, and
  /// starts the service thread.
  static absl::StatusOr<std::unique_ptr<MpiWorld>>
  create(const WorldOptions &options);
  ~MpiWorld() override;

  int64_t size() const override { return processes * perProcess; }
  int64_t process() const override { return me; }
  int64_t processCount() const override { return processes; }
  int64_t processOf(int64_t rank) const override { return rank / perProcess; }
  absl::Status beginRun(int64_t ranks) override;
  absl::StatusOr<std::unique_ptr<Communicator>> endpoint(int64_t rank) override;
  void abort(const absl::Status &why) override;
  absl::StatusOr<std::vector<std::string>> gather(std::string mine) override;
  absl::StatusOr<std::string> broadcast(std::string data) override;

private:
  friend class MpiComm;
  using Clock = std::chrono::steady_clock;

  MpiWorld(const WorldOptions &options) : options(options) {}
  absl::Status init();
  void serve();

  /// The abort cause, once there is one.
  absl::Status abortStatus();
  bool isAborted() const { return aborted.load(std::memory_order_acquire); }
  /// Marks that an MPI call may never return: no MPI_Finalize then.
  void markBroken() { broken = true; }
  /// The communicator of `group` (every process holds at most one
  /// member), created on first use.
  absl::StatusOr<MPI_Comm> groupComm(std::span<const int64_t> group);
  /// What hosted rank `rank` is doing, for status replies and signals.
  void setActivity(int64_t rank, const std::string &what);
  /// Asks the processes of `ranks` what they are doing; the answer per
  /// rank, or "did not answer" for the dead and hung.
  std::map<int64_t, std::string> query(std::span<const int64_t> ranks);
  /// Polls `requests` until all completed, the deadline passes or the world
  /// aborts; `what` names the wait in errors.
  absl::Status waitAll(std::vector<MPI_Request> &requests,
                       Clock::time_point deadline, const std::string &what);
  /// Point-to-point for the process-level exchanges.
  absl::Status sendBytes(const std::string &data, int peer, int tag);
  absl::StatusOr<std::string> recvBytes(int peer, int tag);

  static void onSignal(int sig);

  WorldOptions options;
  int64_t me = 0, processes = 1, perProcess = 1;
  bool initializedHere = false;
  /// Dups of MPI_COMM_WORLD: group communicators are made from `base`;
  /// `p2p` carries ring steps and send/recv, `host` the process-level
  /// exchanges, `control` status queries and abort notices.
  MPI_Comm base = MPI_COMM_NULL, p2p = MPI_COMM_NULL, host = MPI_COMM_NULL,
           control = MPI_COMM_NULL;
  std::mutex groupsMu;
  std::map<std::vector<int64_t>, MPI_Comm> groups;

  std::atomic<bool> aborted{false}, broken{false}, stop{false};
  std::mutex mu;
  absl::Status cause;
  std::condition_variable repliesCv;
  std::map<int64_t, std::string> replies; // by process
  std::mutex queryMu;
  std::vector<std::pair<MPI_Request, std::shared_ptr<std::string>>> outgoing;
  std::map<int64_t, std::string> activity; // by hosted rank
  /// Activity in fixed buffers, for the signal handler.
  std::vector<std::array<char, 512>> signalText;
  std::thread service;
};

} // namespace pc::runtime

#endif // PC_RUNTIME_MPI_MPIWORLD_H

//===- World.h - Where a run's ranks live and how they meet ------*- C++
//-*-===//
//
// A world is the set of global ranks of a run, spread over one or more
// processes: every process runs the same programs for the ranks it hosts
// (a contiguous block of `devicesPerProcess` ranks), and the world gives
//  - a communicator endpoint per hosted rank (runtime/comm/Communicator.h),
//  - abort(): the first failure of any rank releases every rank of every
//    process that waits for it, instead of leaving them to their timeout,
//  - process-level exchanges for the runner (results and checkpoints
//    assembled on process 0, agreement on failures), called by every
//    process in the same order, from one thread.
//
// The in-process world (InProcessWorld) hosts every rank in one process
// over shared memory; the MPI world (runtime/mpi/MpiWorld.h) spans the
// processes of an `mpirun` or `srun` launch.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_COMM_WORLD_H
#define PC_RUNTIME_COMM_WORLD_H

#include "runtime/comm/Communicator.h"

#include "absl/status/statusor.h"

#include <memory>
#include <string>
#include <vector>

namespace pc::runtime {

class World {
public:
  virtual ~World() = default;

  /// Global ranks in all; 0 for an in-process world that grows to what
  /// each run's programs need.
  virtual int64_t size() const = 0;
  /// This process's index, of processCount().
  virtual int64_t process() const = 0;
  virtual int64_t processCount() const = 0;
  /// The process that hosts global rank `rank`.
  virtual int64_t processOf(int64_t rank) const = 0;
  bool hosts(int64_t rank) const { return processOf(rank) == process(); }

  /// Starts a run whose programs use ranks [0, ranks): InvalidArgument when
  /// the world cannot host them; forgets an earlier in-process run's abort.
  virtual absl::Status beginRun(int64_t ranks) = 0;
  /// Changes when the endpoints of earlier runs stop being valid (an
  /// in-process world made afresh for another size or after an abort):
  /// a session that keeps endpoints between runs makes new ones then.
  virtual uint64_t generation() const { return 0; }
  /// The endpoint of hosted rank `rank` for the current run; one per rank,
  /// used by one thread at a time.
  virtual absl::StatusOr<std::unique_ptr<Communicator>>
  endpoint(int64_t rank) = 0;
  /// Fails every waiting and later collective of every process with `why`.
  virtual void abort(const absl::Status &why) = 0;

  /// On process 0, every process's `mine`, by process; empty elsewhere.
  virtual absl::StatusOr<std::vector<std::string>> gather(std::string mine) = 0;
  /// Process 0's `data`, on every process.
  virtual absl::StatusOr<std::string> broadcast(std::string data) = 0;
  /// The failure of the lowest process that had one (OK when none), on
  /// every process: lets the processes fail together, or go on together.
  absl::Status agree(const absl::Status &mine);
};

/// Every rank in this process, over shared memory (SharedMemoryWorld).
std::unique_ptr<World> makeInProcessWorld();

/// How a session finds its world.
struct WorldOptions {
  enum class Kind {
    /// MPI when the process was started by mpirun or srun (their
    /// environment says so), else in-process.
    Auto,
    InProcess,
    Mpi,
  };
  Kind kind = Kind::Auto;
  /// Ranks each process hosts under MPI (--devices cpu:K).
  int64_t devicesPerProcess = 1;
  /// How long a rank waits in a collective or receive before it reports
  /// the rank that did not come (seconds).
  double timeoutSeconds = 300;
  /// Compare a hash of each collective's signature across its members
  /// before it runs; a mismatch names both ranks and the op.
  bool checkDesync = true;
};

/// True when this process was started by an MPI launcher (mpirun, or srun
/// with PMI/PMIx).
bool launchedByMpi();

/// The world `options` asks for.
absl::StatusOr<std::unique_ptr<World>> makeWorld(const WorldOptions &options);

} // namespace pc::runtime

#endif // PC_RUNTIME_COMM_WORLD_H

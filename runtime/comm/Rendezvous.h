//===- Rendezvous.h - One value from rank 0 to every process, over TCP ---*- C++
//-*-===//
//
// The bootstrap NCCL needs where processes were started without MPI
// (torchrun, srun): rank 0 makes a value (the NCCL unique id, 128 bytes),
// and every other rank must get it before any GPU communicator exists.
// Rank 0 listens on MASTER_ADDR:MASTER_PORT; every other rank connects
// (retrying while rank 0 starts), says who it is, and receives the value
// once all WORLD_SIZE - 1 have arrived. Nothing else goes over it.
//
// A rank that is missing at the deadline, a rank number given twice or out
// of range, or a world size that differs between ranks is an error on rank
// 0 that names the ranks, and, on the others, an error or a closed
// connection: never a hang past the deadline.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_COMM_RENDEZVOUS_H
#define PC_RUNTIME_COMM_RENDEZVOUS_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <map>
#include <string>

namespace pc::runtime {

/// Where a process is in a launch, from its environment.
struct LaunchEnv {
  int64_t rank = 0, worldSize = 1;
  /// The process's index on its node (which GPU it takes).
  int64_t localRank = 0;
  /// Rank 0's address and port.
  std::string masterAddr;
  int port = 0;
  /// "torchrun", "slurm", "mpi", or "none" (one process).
  std::string launcher = "none";
};

/// The launch `env` describes: torchrun's RANK, WORLD_SIZE, LOCAL_RANK,
/// MASTER_ADDR, MASTER_PORT; Slurm's SLURM_PROCID, SLURM_NTASKS,
/// SLURM_LOCALID (with MASTER_ADDR and MASTER_PORT, or
/// SLURM_LAUNCH_NODE_IPADDR and port 29500); Open MPI's OMPI_COMM_WORLD_*.
/// InvalidArgument naming the variable when one is malformed or a rank is
/// outside the world.
absl::StatusOr<LaunchEnv>
launchEnvFrom(const std::map<std::string, std::string> &env);
/// The same, from this process's environment.
absl::StatusOr<LaunchEnv> launchEnvFromEnvironment();

/// Rank 0 sends `value` (only its own is read) to every rank of
/// `env.worldSize`; each returns it. `timeoutSeconds` bounds the whole
/// exchange.
absl::StatusOr<std::string> rendezvous(const LaunchEnv &env,
                                       const std::string &value,
                                       double timeoutSeconds);

} // namespace pc::runtime

#endif // PC_RUNTIME_COMM_RENDEZVOUS_H

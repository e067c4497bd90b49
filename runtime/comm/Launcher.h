//===- Launcher.h - Running a body on every hosted rank ---------*- C++ -*-===//
//
// The SPMD launcher: every process of a world calls launch() with the same
// body, which runs once per rank the process hosts, each on its own thread
// (all ranks in one process by default; one or a few per process under
// mpirun). It owns the failure rule of a run: the first rank that fails
// aborts the world, which releases the ranks of every process waiting for
// it in a collective or receive, and the error a caller sees is the root
// cause (the lowest rank's own failure), not the aborts it caused.
//
// The executor runs through it. The reference interpreter keeps its own
// threads: it is the oracle the executor is checked against, and sharing
// the launcher there could hide a launcher bug from the check.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_COMM_LAUNCHER_H
#define PC_RUNTIME_COMM_LAUNCHER_H

#include "runtime/comm/World.h"

#include "absl/status/status.h"

#include <functional>
#include <span>

namespace pc::runtime {

/// Runs `body(rank)` for each of `ranks` (ranks this process hosts in
/// `world`), concurrently; returns once every one returned: OK, or the root
/// cause of the failure.
absl::Status launch(World &world, std::span<const int64_t> ranks,
                    const std::function<absl::Status(int64_t rank)> &body);

} // namespace pc::runtime

#endif // PC_RUNTIME_COMM_LAUNCHER_H

//===- MpiWorldTest.cpp - The MPI world inside one process ----------------===//
//
// An MPI world as a singleton (no mpirun): ranks of this process talk
// through MPI, as under `mpirun -np 1 ... --devices cpu:K`.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Launcher.h"

#include <gtest/gtest.h>

using namespace pc::runtime;

// Open MPI's components allocate at MPI_Init and are unloaded at
// MPI_Finalize, so LeakSanitizer cannot name what they keep: this binary
// runs without leak detection in sanitizer builds (ASan's other checks
// stay on). The rest of pc's tests keep it.
extern "C" const char *__asan_default_options() { return "detect_leaks=0"; }

namespace {

// The executor checks the ranks' programs against each other before they
// run; the communicator's own desync check is the backstop under MPI. Two
// ranks in this one MPI process (a singleton, no mpirun) issue different
// collectives as their first call: both fail naming both, no hang.
TEST(LauncherTest, DesyncedCollectivesOverMpiFailNamingBothRanks) {
  WorldOptions options;
  options.kind = WorldOptions::Kind::Mpi;
  options.devicesPerProcess = 2;
  options.timeoutSeconds = 30;
  absl::StatusOr<std::unique_ptr<World>> world = makeWorld(options);
  ASSERT_TRUE(world.ok()) << world.status();
  ASSERT_TRUE((*world)->beginRun(2).ok());
  std::vector<int64_t> ranks = {0, 1};
  absl::Status s = launch(**world, ranks, [&](int64_t rank) -> absl::Status {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        (*world)->endpoint(rank);
    if (!comm.ok())
      return comm.status();
    std::vector<float> in(4, 1.0f), out(8);
    if (rank == 0)
      return (*comm)->allReduce(in.data(), 4, CommType::F32,
                                pc::ReduceKind::Sum, ranks);
    std::vector<int64_t> counts = {4, 4};
    return (*comm)->allGather(in.data(), out.data(), counts, CommType::F32,
                              ranks);
  });
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("collectives out of step (desync)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.message().find("rank 0 issued all_reduce"), std::string::npos)
      << s;
  EXPECT_NE(s.message().find("rank 1 issued all_gather"), std::string::npos)
      << s;
}

} // namespace

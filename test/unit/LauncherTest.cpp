//===- LauncherTest.cpp - The SPMD launcher's failure rule ----------------===//
//
// launch() runs a body per hosted rank; a rank that fails aborts the world,
// which releases the ranks waiting for it in a collective, and the caller
// sees the failing rank's own error, not the aborts.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Launcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#ifdef __linux__
#include <pthread.h>
#endif

using namespace pc::runtime;

namespace {

TEST(LauncherTest, EveryRankRunsOnce) {
  std::unique_ptr<World> world = makeInProcessWorld();
  ASSERT_TRUE(world->beginRun(4).ok());
  std::atomic<int> sum{0};
  std::vector<int64_t> ranks = {0, 1, 2, 3};
  absl::Status s = launch(*world, ranks, [&](int64_t rank) {
    sum += 1 << rank;
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(sum.load(), 15);
}

#ifdef __linux__
TEST(LauncherTest, EachRanksThreadIsNamedAfterIt) {
  std::unique_ptr<World> world = makeInProcessWorld();
  ASSERT_TRUE(world->beginRun(2).ok());
  std::vector<std::string> names(2);
  std::vector<int64_t> ranks = {0, 1};
  absl::Status s = launch(*world, ranks, [&](int64_t rank) {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    names[rank] = name;
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(names[0], "rank 0");
  EXPECT_EQ(names[1], "rank 1");
}
#endif

TEST(LauncherTest, AFailureReleasesTheWaitersAndIsTheError) {
  std::unique_ptr<World> world = makeInProcessWorld();
  ASSERT_TRUE(world->beginRun(3).ok());
  std::vector<int64_t> ranks = {0, 1, 2};
  absl::Status s = launch(*world, ranks, [&](int64_t rank) -> absl::Status {
    if (rank == 1)
      return absl::InternalError("rank 1 broke");
    // Ranks 0 and 2 wait for rank 1 in an all-reduce it never joins.
    absl::StatusOr<std::unique_ptr<Communicator>> comm = world->endpoint(rank);
    if (!comm.ok())
      return comm.status();
    float x = 1;
    std::vector<int64_t> group = {0, 1, 2};
    return (*comm)->allReduce(&x, 1, CommType::F32, pc::ReduceKind::Sum, group);
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "rank 1 broke");
}

} // namespace

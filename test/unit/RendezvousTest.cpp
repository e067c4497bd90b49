//===- RendezvousTest.cpp - The TCP bootstrap of processes without MPI ----===//
//
// The launch environments pc reads (torchrun, Slurm, Open MPI) and the
// rendezvous that hands rank 0's value (NCCL's unique id) to every process:
// run here as real processes on localhost, and with the failures a launch
// has (a rank that never starts, one that disagrees on the world's size,
// one started twice), each an error naming the ranks before the deadline.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Rendezvous.h"

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

using pc::runtime::LaunchEnv;
using pc::runtime::launchEnvFrom;
using pc::runtime::rendezvous;

namespace {

TEST(LaunchEnv, ReadsTorchrunSlurmAndOpenMpi) {
  absl::StatusOr<LaunchEnv> t = launchEnvFrom({{"RANK", "3"},
                                               {"WORLD_SIZE", "8"},
                                               {"LOCAL_RANK", "1"},
                                               {"MASTER_ADDR", "node0"},
                                               {"MASTER_PORT", "1234"}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->launcher, "torchrun");
  EXPECT_EQ(t->rank, 3);
  EXPECT_EQ(t->worldSize, 8);
  EXPECT_EQ(t->localRank, 1);
  EXPECT_EQ(t->masterAddr, "node0");
  EXPECT_EQ(t->port, 1234);

  absl::StatusOr<LaunchEnv> s =
      launchEnvFrom({{"SLURM_PROCID", "5"},
                     {"SLURM_NTASKS", "6"},
                     {"SLURM_LOCALID", "2"},
                     {"SLURM_LAUNCH_NODE_IPADDR", "10.0.0.7"}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->launcher, "slurm");
  EXPECT_EQ(s->rank, 5);
  EXPECT_EQ(s->localRank, 2);
  EXPECT_EQ(s->masterAddr, "10.0.0.7");
  EXPECT_EQ(s->port, 29500);

  absl::StatusOr<LaunchEnv> m =
      launchEnvFrom({{"OMPI_COMM_WORLD_RANK", "1"},
                     {"OMPI_COMM_WORLD_SIZE", "2"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->launcher, "mpi");
  EXPECT_EQ(m->localRank, 1);

  absl::StatusOr<LaunchEnv> none = launchEnvFrom({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->launcher, "none");
  EXPECT_EQ(none->worldSize, 1);
}

TEST(LaunchEnv, BadVariablesAreErrorsNamingThem) {
  EXPECT_EQ(
      launchEnvFrom({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).status().message(),
      "RANK must be a number >= 0, not 'x'");
  EXPECT_EQ(
      launchEnvFrom({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}})
          .status()
          .message(),
      "RANK=2 is outside WORLD_SIZE=2");
  EXPECT_EQ(
      launchEnvFrom({{"RANK", "1"}, {"WORLD_SIZE", "2"}}).status().message(),
      "MASTER_ADDR is not set (rank 0's host, for the rendezvous)");
  EXPECT_EQ(launchEnvFrom({{"RANK", "1"},
                           {"WORLD_SIZE", "2"},
                           {"MASTER_ADDR", "h"},
                           {"MASTER_PORT", "70000"}})
                .status()
                .message(),
            "MASTER_PORT must be a port number, not '70000'");
}

/// A port free now on localhost.
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// Runs `body(rank)` in one child process per rank of `ranks`; the exit
/// codes, by rank's position.
template <typename Body>
std::vector<int> inProcesses(const std::vector<int64_t> &ranks, Body body) {
  std::vector<pid_t> pids;
  for (int64_t r : ranks) {
    pid_t pid = ::fork();
    if (pid == 0)
      ::_exit(body(r));
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 100);
  }
  return codes;
}

LaunchEnv local(int64_t rank, int64_t size, int port) {
  LaunchEnv e;
  e.rank = rank;
  e.worldSize = size;
  e.masterAddr = "localhost";
  e.port = port;
  e.launcher = "torchrun";
  return e;
}

// Five processes, rank 0 started last: every one gets rank 0's 128 bytes
// (the size of an NCCL unique id), whatever their order.
TEST(Rendezvous, EveryProcessGetsRankZerosValue) {
  int port = freePort();
  std::string id(128, '\0');
  for (int i = 0; i < 128; ++i)
    id[i] = static_cast<char>(i * 7 + 3);
  std::vector<int> codes = inProcesses({4, 3, 2, 1, 0}, [&](int64_t rank) {
    if (rank == 0)
      ::usleep(200000);
    absl::StatusOr<std::string> v =
        rendezvous(local(rank, 5, port), rank == 0 ? id : "", 20);
    if (!v.ok()) {
      fprintf(stderr, "rank %ld: %s\n", static_cast<long>(rank),
              std::string(v.status().message()).c_str());
      return 1;
    }
    return *v == id ? 0 : 2;
  });
  EXPECT_EQ(codes, std::vector<int>(5, 0));
}

// Rank 2 of 3 never starts: rank 0 stops at the deadline naming it, and
// rank 1, waiting for the value, stops at its own.
TEST(Rendezvous, AMissingRankIsNamedAtTheDeadline) {
  int port = freePort();
  std::vector<int> codes = inProcesses({0, 1}, [&](int64_t rank) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::string> v = rendezvous(local(rank, 3, port), "id", 1.0);
    double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (v.ok() || took > 5)
      return 1;
    if (rank == 0)
      return v.status().message() ==
                     "rendezvous: rank 2 of 3 did not connect to port " +
                         std::to_string(port) + " in time"
                 ? 0
                 : 3;
    return absl::IsDeadlineExceeded(v.status()) ||
                   absl::IsUnavailable(v.status())
               ? 0
               : 4;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));
}

// A rank that counts another world size, or a rank number given twice, is
// refused by rank 0 with both numbers.
TEST(Rendezvous, DisagreementsAreRefused) {
  int port = freePort();
  std::vector<int> codes = inProcesses({0, 1}, [&](int64_t rank) {
    absl::StatusOr<std::string> v =
        rendezvous(local(rank, rank == 0 ? 2 : 3, port), "id", 5);
    if (rank == 0)
      return v.status().message() ==
                     "rendezvous: rank 1 says the world has 3 ranks, rank 0 "
                     "says 2"
                 ? 0
                 : 1;
    return v.ok() ? 1 : 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0}));

  port = freePort();
  codes = inProcesses({0, 1, 1}, [&](int64_t rank) {
    absl::StatusOr<std::string> v = rendezvous(local(rank, 3, port), "id", 5);
    if (rank == 0)
      return v.status().message() ==
                     "rendezvous: rank 1 connected twice (3 ranks)"
                 ? 0
                 : 1;
    return v.ok() ? 1 : 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0, 0}));
}

} // namespace

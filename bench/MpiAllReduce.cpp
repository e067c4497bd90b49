//===- MpiAllReduce.cpp - pc's MPI all-reduce against a bare MPI loop -----===//
//
//   mpirun -np 2 build/bench/pc-bench-mpi-allreduce
//
// For each size from 4 KiB to 64 MiB: the time of MPI_Allreduce on
// MPI_COMM_WORLD in a bare loop, and of pc's communicator (runtime/mpi) on
// the same bytes and the same processes (desync check on, as by default),
// measured alternately in the same run; process 0 prints the throughput
// ratio pc / bare (target: >= 0.9 from 1 MiB).
//
//===----------------------------------------------------------------------===//

#include "runtime/mpi/MpiWorld.h"

#include <chrono>
#include <cstdio>
#include <vector>

using namespace pc::runtime;

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

} // namespace

int main() {
  WorldOptions options;
  absl::StatusOr<std::unique_ptr<MpiWorld>> world = MpiWorld::create(options);
  if (!world.ok()) {
    std::fprintf(stderr, "%s\n", world.status().ToString().c_str());
    return 1;
  }
  MpiWorld &w = **world;
  std::vector<int64_t> group;
  for (int64_t r = 0; r < w.size(); ++r)
    group.push_back(r);
  if (absl::Status s = w.beginRun(w.size()); !s.ok())
    return 1;
  auto comm = w.endpoint(w.process());
  if (!comm.ok())
    return 1;
  if (w.process() == 0)
    std::printf("%10s %12s %12s %8s\n", "bytes", "bare us", "pc us", "ratio");
  for (int64_t bytes = 4096; bytes <= (int64_t(64) << 20); bytes *= 4) {
    int64_t count = bytes / 4;
    std::vector<float> data(count, 1.0f);
    int iters = bytes < (1 << 20) ? 200 : bytes < (16 << 20) ? 20 : 5;
    // Best of 3 rounds, alternating, so that noise hits both alike.
    double bare = 1e30, pc = 1e30;
    for (int round = 0; round < 3; ++round) {
      MPI_Barrier(MPI_COMM_WORLD);
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i)
        MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(count),
                      MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      bare = std::min(bare, seconds(t0) / iters);
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i)
        if (!(*comm)
                 ->allReduce(data.data(), count, CommType::F32,
                             pc::ReduceKind::Sum, group)
                 .ok())
          return 1;
      pc = std::min(pc, seconds(t0) / iters);
    }
    if (w.process() == 0)
      std::printf("%10lld %12.1f %12.1f %8.2f\n", static_cast<long long>(bytes),
                  bare * 1e6, pc * 1e6, bare / pc);
  }
  return 0;
}

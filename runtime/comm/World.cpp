//===- World.cpp - Worlds: in one process, or many through MPI ------------===//

#include "runtime/comm/World.h"

#include "runtime/comm/Wire.h"
#include "runtime/cpu/SharedMemoryComm.h"
#include "runtime/mpi/MpiWorld.h"

#include "absl/strings/str_cat.h"

#include <atomic>
#include <cstdlib>

namespace pc::runtime {
namespace {

class InProcessWorld final : public World {
public:
  int64_t size() const override { return 0; }
  int64_t process() const override { return 0; }
  int64_t processCount() const override { return 1; }
  int64_t processOf(int64_t) const override { return 0; }
  absl::Status beginRun(int64_t ranks) override {
    // The same world serves the next run of the same size, so that its
    // endpoints stay valid; an abort or another size makes a new one.
    if (!shared || shared->size() != ranks || aborted) {
      shared = std::make_unique<SharedMemoryWorld>(ranks);
      aborted = false;
      ++made;
    }
    return absl::OkStatus();
  }
  uint64_t generation() const override { return made; }
  absl::StatusOr<std::unique_ptr<Communicator>>
  endpoint(int64_t rank) override {
    if (!shared)
      return absl::FailedPreconditionError("endpoint() before beginRun()");
    return shared->endpoint(rank);
  }
  void abort(const absl::Status &why) override {
    if (shared) {
      shared->abort(why);
      aborted = true;
    }
  }
  absl::StatusOr<std::vector<std::string>> gather(std::string mine) override {
    return std::vector<std::string>{std::move(mine)};
  }
  absl::StatusOr<std::string> broadcast(std::string data) override {
    return data;
  }

private:
  std::unique_ptr<SharedMemoryWorld> shared;
  std::atomic<bool> aborted{false};
  uint64_t made = 0;
};

} // namespace

std::unique_ptr<World> makeInProcessWorld() {
  return std::make_unique<InProcessWorld>();
}

absl::Status World::agree(const absl::Status &mine) {
  WireWriter w;
  w.i64(static_cast<int64_t>(mine.code()));
  w.bytes(std::string_view(mine.message().data(), mine.message().size()));
  absl::StatusOr<std::vector<std::string>> all = gather(w.take());
  if (!all.ok())
    return all.status();
  std::string verdict;
  for (const std::string &one : *all) {
    WireReader r(one);
    if (r.i64() != 0 || !r.ok()) {
      verdict = one;
      break;
    }
  }
  if (process() == 0 && verdict.empty()) {
    WireWriter ok;
    ok.i64(0);
    ok.bytes("");
    verdict = ok.take();
  }
  absl::StatusOr<std::string> shared = broadcast(verdict);
  if (!shared.ok())
    return shared.status();
  WireReader r(*shared);
  auto code = static_cast<absl::StatusCode>(r.i64());
  std::string_view message = r.bytes();
  if (!r.ok())
    return absl::InternalError("a garbled verdict from process 0");
  return absl::Status(code, absl::string_view(message.data(), message.size()));
}

bool launchedByMpi() {
  // Open MPI's mpirun, and PMI/PMIx launchers (srun --mpi=pmix, hydra).
  for (const char *v :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v))
      return true;
  return false;
}

absl::StatusOr<std::unique_ptr<World>> makeWorld(const WorldOptions &options) {
  bool mpi = options.kind == WorldOptions::Kind::Mpi ||
             (options.kind == WorldOptions::Kind::Auto && launchedByMpi());
  if (!mpi)
    return makeInProcessWorld();
  absl::StatusOr<std::unique_ptr<MpiWorld>> w = MpiWorld::create(options);
  if (!w.ok())
    return w.status();
  return std::unique_ptr<World>(std::move(*w));
}

} // namespace pc::runtime

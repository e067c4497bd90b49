//===- Launcher.cpp - Running a body on every hosted rank -----------------===//

#include "runtime/comm/Launcher.h"
#include "runtime/device/Device.h"

#include <string>
#include <thread>
#include <vector>

namespace pc::runtime {

absl::Status launch(World &world, std::span<const int64_t> ranks,
                    const std::function<absl::Status(int64_t rank)> &body) {
  std::vector<absl::Status> statuses(ranks.size());
  std::vector<std::thread> threads;
  threads.reserve(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i)
    threads.emplace_back([&, i] {
      nameThisThread("rank " + std::to_string(ranks[i]));
      absl::Status s = body(ranks[i]);
      // Release the ranks waiting for this one, here and in other
      // processes.
      if (!s.ok())
        world.abort(s);
      statuses[i] = std::move(s);
    });
  for (std::thread &t : threads)
    t.join();
  // The cause, from the lowest rank that had one of its own; else the
  // first abort (the cause was in another process, which reports it).
  for (const absl::Status &s : statuses)
    if (!s.ok() && !isReleasedByAbort(s))
      return s;
  for (const absl::Status &s : statuses)
    if (!s.ok())
      return s;
  return absl::OkStatus();
}

} // namespace pc::runtime

//===- Schedule.h - Learning-rate schedules ---------------------*- C++ -*-===//
//
// The learning rate of each training step, computed by the training loop
// and fed to the graph's `lr` input (--pc-optimizer), so that a schedule
// changes nothing in the compiled program.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_SCHEDULE_H
#define PC_RUNTIME_EXEC_SCHEDULE_H

#include "absl/status/statusor.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace pc::runtime {

struct LrSchedule {
  enum class Kind { Constant, WarmupCosine };
  Kind kind = Kind::Constant;
  double base = 1e-3;
  /// WarmupCosine: linear from base / warmup to base over the first
  /// `warmup` steps, then a cosine from base down to `min` at step `total`.
  int64_t warmup = 0;
  int64_t total = 1;
  double min = 0;

  /// The rate of step `step` (0-based).
  double at(int64_t step) const {
    if (kind == Kind::Constant)
      return base;
    if (step < warmup)
      return base * static_cast<double>(step + 1) / static_cast<double>(warmup);
    double span = static_cast<double>(std::max<int64_t>(1, total - warmup));
    double progress = std::min(1.0, static_cast<double>(step - warmup) / span);
    return min + 0.5 * (base - min) * (1 + std::cos(M_PI * progress));
  }

  /// "constant" or "cosine" (linear warmup, then cosine decay).
  static absl::StatusOr<Kind> parse(const std::string &name) {
    if (name == "constant")
      return Kind::Constant;
    if (name == "cosine")
      return Kind::WarmupCosine;
    return absl::InvalidArgumentError("the schedule must be constant or "
                                      "cosine, not '" +
                                      name + "'");
  }
};

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_SCHEDULE_H

//===- Timing.h - Best-of-N timing for the benchmarks -----------*- C++ -*-===//

#ifndef PC_BENCH_TIMING_H
#define PC_BENCH_TIMING_H

#include <algorithm>
#include <chrono>

namespace pc::bench {

/// The fastest of `runs` calls of `fn`, in seconds: on a shared machine the
/// minimum is the least disturbed measurement.
template <typename Fn> double best(int runs, Fn fn) {
  double b = 1e30;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    b = std::min(b, std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  return b;
}

} // namespace pc::bench

#endif // PC_BENCH_TIMING_H

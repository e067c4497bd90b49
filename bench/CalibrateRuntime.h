//===- CalibrateRuntime.h - Measuring the actor runtime ---------*- C++ -*-===//
//
// pc-bench-calibrate's measurements of the actor runtime: clocks, and the
// chains of ops, all-reduces and hops it compiles and runs on N CPU
// virtual devices, in wall time and in seconds of the host's cores.
//
//===----------------------------------------------------------------------===//

#ifndef PC_BENCH_CALIBRATERUNTIME_H
#define PC_BENCH_CALIBRATERUNTIME_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace pc::calibrate {

/// The seconds of the host's cores this process has used, all its threads.
double cpuNow();

/// The median of `v`, which must not be empty.
double median(std::vector<double> v);

/// Runs `work(device)` on every device at once; the slowest device's time,
/// best of `rounds`.
double concurrently(int devices, int rounds,
                    const std::function<void(int)> &work);

/// The seconds of the host's cores one wake-up of a sleeping thread takes:
/// `pairs` pairs of threads (as many as the devices the cores run at once,
/// so that every core is busy, as in a training step) hand a turn back and
/// forth through a mutex and a condition variable, as the runtime's
/// streams and dispatchers do.
double wakeCpu(int pairs);

/// The time one op of a per-device program takes, as the devices run
/// together: a chain of 256 tiny exponentials on every device, per op.
/// With `kernel`, also the time of the exponential's kernel alone, as
/// pc-run --profile-ops times it: the rest is the firing's.
absl::StatusOr<double> opLatency(int devices, int threads,
                                 double *kernel = nullptr,
                                 double *cpu = nullptr);

/// A tiny all-reduce over all devices as the actor runtime runs it (its
/// firing on each device's communication stream, the members' meeting):
/// a chain of 128 links, each a sum over the split dim (partial), its
/// all-reduce, and an add; less the two ops' own cost (`opCost`, as every
/// device runs them at once).
absl::StatusOr<double> allReduceLatency(int devices, int threads, double opCost,
                                        double *cpu = nullptr);

/// The time one member spends per byte of an all-reduce as the actor
/// runtime runs it (seconds of the host's cores with `inCores`, else
/// wall seconds), at 128 KiB (a tiny model's
/// activation): a chain of 64 links like allReduceLatency's over a
/// payload of 32768 floats, against the same chain over 1 float, less the
/// links' other two kernels (an op profile). Direct calls of 64 MiB
/// stream at several times the rate: a collective at a model's sizes
/// also copies its operand in and out of the runtime's tensors, and its
/// members' copies meet in the caches of two shared cores.
absl::StatusOr<double> allReduceByteWork(int devices, int threads,
                                         bool inCores);

/// Megatron's MLP block, chained: on every device, a matmul by a weight
/// split by columns, GELU five times, a matmul by one split by rows, the
/// partial sum's all-reduce and the residual add, 32 times over the tiny
/// GPT's 512 tokens of width 64 (weights 64 x 256 and back). Each
/// all-reduce waits for every device's compute, as a tensor-parallel
/// step's do. The graph's source and its measured time (a run's median).
absl::StatusOr<std::pair<std::string, double>> tensorParallelChain(int devices,
                                                                   int threads);

/// Tiny all-reduces over all devices queued back to back: 128 of them,
/// each a sum of the same vector over the split dim (partial) and its
/// all-reduce, none depending on another, and a chain of adds of their
/// results. The graph's source and its measured time (a run's median).
absl::StatusOr<std::pair<std::string, double>> queuedAllReduces(int devices,
                                                                int threads);

/// The same chain with the all-reduces in pairs of devices (a 2-axis mesh
/// whose second axis has 2), every pair at once: with the full group's,
/// it parts a collective's latency into a fixed cost per call and a cost
/// per step of its ring.
absl::StatusOr<double> pairAllReduceLatency(int devices, int threads,
                                            double opCost,
                                            double *cpu = nullptr);

/// The time of a link of hopRing (a send, its receive, and the hand-offs
/// between the devices' streams), less the exponential's (`opCost`, as
/// every device runs them at once). With `ring`, also the ring's source
/// and its measured time; with `cpu`, the seconds of the host's cores a
/// link takes per token.
absl::StatusOr<double>
hopLatency(int devices, int threads, double opCost, double *cpu = nullptr,
           std::pair<std::string, double> *ring = nullptr);

} // namespace pc::calibrate

#endif // PC_BENCH_CALIBRATERUNTIME_H

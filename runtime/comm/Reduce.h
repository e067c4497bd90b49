//===- Reduce.h - Elementwise reductions of collectives ---------*- C++ -*-===//
//
// The arithmetic every communicator applies when it combines two members'
// pieces: f32/f64/i32/i64 natively, f16 and bf16 widened to f32 and rounded
// back at each step (as NCCL's reductions round per step).
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_COMM_REDUCE_H
#define PC_RUNTIME_COMM_REDUCE_H

#include "runtime/comm/Communicator.h"

namespace pc::runtime {

/// acc[i] = reduce(acc[i], x[i]) for n elements (Avg sums; see divide).
void reduceInto(void *acc, const void *x, int64_t n, CommType type,
                ReduceKind kind);
/// acc[i] = reduce(x[i], acc[i]): the operands the other way round, which
/// max and min tell apart (a NaN, zeros of both signs), so that a partial
/// result can join a fold in the order a ring makes it.
void reduceOnto(void *acc, const void *x, int64_t n, CommType type,
                ReduceKind kind);
/// x[i] /= by: the last step of an average.
void divide(void *x, int64_t n, CommType type, int64_t by);

} // namespace pc::runtime

#endif // PC_RUNTIME_COMM_REDUCE_H

//===- OneDnn.h - The CPU kernels that oneDNN runs -------------*- C++ -*-===//
//
// Matmul, elementwise math, softmax and transposes on the CPU come from
// oneDNN (Debian's libdnnl, 2.6): its JIT kernels use the machine's widest
// vectors (AVX-512 where there is one) and measure about 5x OpenBLAS on the
// matmuls of a GPT (bench/gpt_step.py). Each op instance gets a plan: its
// shapes are fixed by the IR, so the oneDNN primitive is made once, on the
// first call, on the thread that runs it. That thread is a device's stream
// worker, and oneDNN sizes a primitive's parallelism from that thread's
// OpenMP setting: the device's threads (CpuDevice), never a process-wide
// one.
//
// oneDNN is hidden behind these classes, so that its header stays out of
// the rest of the runtime. A plan whose primitive oneDNN cannot make (a
// shape it does not take) falls back to the loops of CpuKernels.h.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_KERNELS_ONEDNN_H
#define PC_RUNTIME_KERNELS_ONEDNN_H

#include "runtime/kernels/CpuKernels.h"

#include <memory>
#include <optional>

namespace pc::runtime::cpu {

/// `out` = alpha · op(a) · op(b) (+ addend), batched with NumPy-broadcast
/// batch dims. An addend (of shape `addend`, broadcast to `out`) is added
/// by oneDNN as each block of the product is written: a post-op, not a
/// second pass.
class MatmulPlan {
public:
  MatmulPlan(Shape a, Shape b, bool transposeA, bool transposeB, Shape out,
             float alpha = 1.0f, std::optional<Shape> addend = std::nullopt);
  absl::Status run(const TensorView &a, const TensorView &b,
                   const TensorView &out) const;
  absl::Status run(const TensorView &a, const TensorView &b,
                   const TensorView *addend, const TensorView &out) const;

private:
  struct Impl;
  std::shared_ptr<Impl> impl;
};

/// One elementwise function over `numel` f32 values.
class UnaryPlan {
public:
  UnaryPlan(Unary op, int64_t numel);
  absl::Status run(const TensorView &in, const TensorView &out) const;

private:
  struct Impl;
  std::shared_ptr<Impl> impl;
};

/// `dy · gelu'(x)` over `numel` f32 values, the tanh form's derivative
/// with `approximate`: oneDNN's backward GELU, one pass; loops (around
/// oneDNN's tanh) where oneDNN refuses.
class GeluGradPlan {
public:
  GeluGradPlan(int64_t numel, bool approximate);
  absl::Status run(const TensorView &dy, const TensorView &x,
                   const TensorView &out) const;

private:
  absl::Status loops(const TensorView &dy, const TensorView &x,
                     const TensorView &out) const;
  struct Impl;
  std::shared_ptr<Impl> impl;
  UnaryPlan tanh;
};

/// Softmax or log-softmax of f32 values along `axis` (non-negative). A
/// causal softmax (the last axis, not log) masks a few matrices at a time
/// into a scratch that stays in cache and normalizes them from there, so
/// the masked scores never go to memory.
class SoftmaxPlan {
public:
  SoftmaxPlan(Shape shape, int64_t axis, bool log, bool causal = false);
  absl::Status run(const TensorView &in, const TensorView &out) const;

private:
  absl::Status runCausal(const TensorView &in, const TensorView &out) const;
  struct Impl;
  std::shared_ptr<Impl> impl;
};

/// `out` = the dims of `in` permuted by `perm`, for elements of any type:
/// only bytes move.
class TransposePlan {
public:
  TransposePlan(Shape in, std::vector<int64_t> perm, int64_t elementBytes);
  absl::Status run(const TensorView &in, const TensorView &out) const;

private:
  struct Impl;
  std::shared_ptr<Impl> impl;
};

} // namespace pc::runtime::cpu

#endif // PC_RUNTIME_KERNELS_ONEDNN_H

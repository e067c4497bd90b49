//===- OpConstants.h - What kernels read from ops at bind time --*- C++ -*-===//
//
// The values that every backend's binding of an op reads the same way:
// Adam's constants, and constants' bytes. Shared by the CPU backend
// (ComputeKernels.cpp) and the portable kernels (PortableKernels.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_OPCONSTANTS_H
#define PC_RUNTIME_EXEC_OPCONSTANTS_H

#include "runtime/device/Tensor.h"
#include "runtime/kernels/portable/Math.h"

#include "mlir/IR/BuiltinAttributes.h"

namespace pc::runtime {

/// Adam's constants of pc.adam_update or pc.adam8_update, as the f32
/// values their elementwise form multiplies by.
template <typename AdamOp> portable::AdamConstants adamConstants(AdamOp a) {
  double b1 = a.getBeta1().convertToDouble(),
         b2 = a.getBeta2().convertToDouble();
  return {static_cast<float>(b1),
          static_cast<float>(1 - b1),
          static_cast<float>(b2),
          static_cast<float>(1 - b2),
          static_cast<float>(a.getEpsilon().convertToDouble()),
          static_cast<float>(a.getWeightDecay().convertToDouble())};
}

/// `out` (host-addressable) = the constant `dense`.
void fillConstant(mlir::DenseElementsAttr dense, const TensorView &out);

/// A possibly negative axis, as a dim of a tensor of `rank` dims.
inline int64_t axisIn(int64_t axis, int64_t rank) {
  return (axis + rank) % rank;
}

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_OPCONSTANTS_H

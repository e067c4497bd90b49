//===- Quant8.h - Block-wise 8-bit optimizer states -------------*- C++ -*-===//
//
// The 8-bit Adam of Dettmers et al. (2022), in pc's form: each moment is
// stored as one byte per element, a code into a fixed non-linear map of
// 256 values in [-1, 1] (signed, the first moment) or [0, 1] (unsigned,
// the second), times one f32 scale per block: the block's largest
// magnitude. A block is 256 consecutive elements of a row of the last dim
// (or the whole row when it is shorter), so that blocks never straddle a
// split of any other dim, and the layout of the state does not change its
// values.
//
// The maps are dynamic (non-linear): decade by decade, 1 to 1e-7 for the
// first moment and to 1e-8 for the second, linear within each decade and
// with fewer codes for each smaller one (48, 32, 20, ... of the first
// moment's 128 magnitudes for [0.1, 1], [0.01, 0.1], ...): precise near
// the block's largest values, which dominate the update, and still able
// to hold values orders of magnitude below them.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_KERNELS_QUANT8_H
#define PC_RUNTIME_KERNELS_QUANT8_H

#include "runtime/device/Tensor.h"
#include "runtime/kernels/CpuKernels.h"

#include "absl/status/status.h"

#include <array>
#include <cstdint>

namespace pc::runtime::cpu {

/// Elements per quantization block.
inline constexpr int64_t kQuantBlock = 256;

/// The 256 values of the signed (first moment) or unsigned (second moment)
/// map, ascending; code c means map[c] times the block's scale.
const std::array<float, 256> &quantMap(bool isSigned);
/// The code of the value of quantMap(isSigned) nearest `x` (`x` in the
/// map's range).
uint8_t quantize(float x, bool isSigned);

/// Blocks per row of `rowLength` elements.
inline int64_t blocksPerRow(int64_t rowLength) {
  return (rowLength + kQuantBlock - 1) / kQuantBlock;
}

/// One Adam/AdamW step of `w` (f32) with 8-bit moments (pc.adam8_update):
/// `mCodes`, `vCodes` (ui8, w's shape) and their scales `mScale`, `vScale`
/// (f32, w's shape with the last dim in blocks). The second moment is
/// coded by its square root (v = (map[c])^2 * scale): a gradient 1e-4 of
/// its block's largest has v 1e-8 of the scale, below the map's reach,
/// and a v rounded to zero never recovers and makes the step 1/sqrt(1 -
/// beta2) times too large; its root, 1e-4, is well inside. Each block is
/// decoded,
/// stepped in f32 exactly as pc.adam_update, and encoded again with its
/// new largest magnitude as scale.
absl::Status adam8Update(const TensorView &w, const TensorView &g,
                         const TensorView &mCodes, const TensorView &mScale,
                         const TensorView &vCodes, const TensorView &vScale,
                         float lr, float c1, float c2, const AdamConstants &k,
                         const TensorView &w2, const TensorView &mCodes2,
                         const TensorView &mScale2, const TensorView &vCodes2,
                         const TensorView &vScale2);

} // namespace pc::runtime::cpu

#endif // PC_RUNTIME_KERNELS_QUANT8_H

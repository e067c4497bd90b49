//===- OpConstants.cpp - What kernels read from ops at bind time ---------===//

#include "runtime/exec/OpConstants.h"

#include <algorithm>
#include <cstring>

using namespace mlir;

namespace pc::runtime {

/// `out` = the constant `dense`: a splat's one element converted once and
/// its bytes repeated; other values copied from the attribute's raw bytes,
/// which hold them in `out`'s layout (byte-sized or wider elements, row
/// major, little endian), element by element only where they do not.
void fillConstant(DenseElementsAttr dense, const TensorView &value) {
  int64_t n = value.numel(), e = sizeOf(value.type);
  if (n == 0)
    return;
  bool isFloat = isa<FloatType>(dense.getElementType());
  auto element = [&](int64_t j) {
    return isFloat ? dense.getValues<APFloat>()[j].convertToDouble()
                   : static_cast<double>(
                         dense.getValues<APInt>()[j].getSExtValue());
  };
  if (dense.isSplat()) {
    value.set(0, element(0));
    // Doubling copies: log2(n) memcpys.
    for (int64_t done = 1; done < n; done *= 2)
      std::memcpy(value.data() + done * e, value.data(),
                  std::min(done, n - done) * e);
    return;
  }
  ArrayRef<char> raw = dense.getRawData();
  if (dense.getElementType().getIntOrFloatBitWidth() == 8 * e &&
      static_cast<int64_t>(raw.size()) == n * e) {
    std::memcpy(value.data(), raw.data(), raw.size());
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    value.set(i, element(i));
}

} // namespace pc::runtime

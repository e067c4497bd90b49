//===- Quant8.cpp - Block-wise 8-bit optimizer states ---------------------===//

#include "runtime/kernels/Quant8.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pc::runtime::cpu {
namespace {

/// `counts[e]` values spread evenly over each decade (1e-(e+1), 1e-e], the
/// top decade first, ascending in the result. Like the dynamic map of
/// Dettmers et al., this is linear within each decade (precise near the
/// block's largest values, which dominate the update) and reaches small
/// values through the decades.
std::vector<float> decades(std::initializer_list<int> counts) {
  std::vector<float> out;
  double top = 1;
  for (int n : counts) {
    double bottom = top / 10;
    for (int j = 1; j <= n; ++j)
      out.push_back(static_cast<float>(bottom + (top - bottom) * j / n));
    top = bottom;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::array<float, 256> makeMap(bool isSigned) {
  std::array<float, 256> map{};
  if (isSigned) {
    // 0, 128 magnitudes over 7 decades, and 127 negatives (all but the
    // smallest, mirrored).
    std::vector<float> pos = decades({48, 32, 20, 12, 8, 5, 3});
    std::vector<float> all;
    for (size_t i = pos.size() - 1; i >= 1; --i)
      all.push_back(-pos[i]);
    all.push_back(0);
    all.insert(all.end(), pos.begin(), pos.end());
    std::copy(all.begin(), all.end(), map.begin());
  } else {
    // 0 and 255 values over 8 decades: the second moment is a square, and
    // spans twice the range.
    std::vector<float> pos = decades({80, 56, 40, 28, 20, 14, 10, 7});
    map[0] = 0;
    std::copy(pos.begin(), pos.end(), map.begin() + 1);
  }
  return map;
}

} // namespace

const std::array<float, 256> &quantMap(bool isSigned) {
  static const std::array<float, 256> signedMap = makeMap(true);
  static const std::array<float, 256> unsignedMap = makeMap(false);
  return isSigned ? signedMap : unsignedMap;
}

uint8_t quantize(float x, const std::array<float, 256> &map) {
  auto hi = std::lower_bound(map.begin(), map.end(), x);
  if (hi == map.begin())
    return 0;
  if (hi == map.end())
    return 255;
  auto lo = hi - 1;
  return static_cast<uint8_t>((x - *lo <= *hi - x ? lo : hi) - map.begin());
}

absl::Status adam8Update(const TensorView &w, const TensorView &g,
                         const TensorView &mCodes, const TensorView &mScale,
                         const TensorView &vCodes, const TensorView &vScale,
                         float lr, float c1, float c2, const Adam8Constants &k,
                         const TensorView &w2, const TensorView &mCodes2,
                         const TensorView &mScale2, const TensorView &vCodes2,
                         const TensorView &vScale2) {
  if (w.type != CommType::F32 || mCodes.type != CommType::U8 ||
      vCodes.type != CommType::U8 || mScale.type != CommType::F32 ||
      vScale.type != CommType::F32)
    return absl::InvalidArgumentError(
        "adam8_update: needs an f32 weight, ui8 codes and f32 scales");
  int64_t n = w.numel();
  int64_t row = w.shape.empty() ? 1 : w.shape.back();
  int64_t perRow = blocksPerRow(row);
  if (row == 0 || mScale.numel() != (n / row) * perRow ||
      vScale.numel() != mScale.numel())
    return absl::InvalidArgumentError(
        "adam8_update: scales must have one value per block of 256 of a row");
  const std::array<float, 256> &sm = quantMap(true), &um = quantMap(false);
  const float *wi = w.as<float>(), *gi = g.as<float>();
  float *wo = w2.as<float>();
  std::array<float, kQuantBlock> m, v;
  for (int64_t r = 0; r < n / row; ++r)
    for (int64_t b = 0; b < perRow; ++b) {
      int64_t begin = r * row + b * kQuantBlock;
      int64_t size = std::min(kQuantBlock, row - b * kQuantBlock);
      int64_t s = r * perRow + b;
      float ms = mScale.as<float>()[s], vs = vScale.as<float>()[s];
      float mMax = 0, vMax = 0;
      for (int64_t j = 0; j < size; ++j) {
        int64_t i = begin + j;
        float gj = gi[i];
        // As pc.adam_update (cpu::adamUpdate), on the decoded moments.
        float mj =
            (sm[mCodes.as<uint8_t>()[i]] * ms) * k.beta1 + gj * k.oneMinusBeta1;
        float vj = (um[vCodes.as<uint8_t>()[i]] * vs) * k.beta2 +
                   (gj * gj) * k.oneMinusBeta2;
        float step = (mj / c1) / (std::sqrt(vj / c2) + k.epsilon);
        if (k.weightDecay != 0.0f)
          step = step + wi[i] * k.weightDecay;
        wo[i] = wi[i] - lr * step;
        m[j] = mj;
        v[j] = vj;
        mMax = std::max(mMax, std::fabs(mj));
        vMax = std::max(vMax, vj);
      }
      mScale2.as<float>()[s] = mMax;
      vScale2.as<float>()[s] = vMax;
      for (int64_t j = 0; j < size; ++j) {
        mCodes2.as<uint8_t>()[begin + j] =
            quantize(mMax > 0 ? m[j] / mMax : 0.0f, sm);
        vCodes2.as<uint8_t>()[begin + j] =
            quantize(vMax > 0 ? v[j] / vMax : 0.0f, um);
      }
    }
  return absl::OkStatus();
}

} // namespace pc::runtime::cpu

//===- Quant8.cpp - Block-wise 8-bit optimizer states ---------------------===//

#include "runtime/kernels/Quant8.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

/// A float's bits as an unsigned key that orders like the float.
uint32_t orderedKey(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

/// A map and, per bucket of floats (the top 16 bits of their ordered key:
/// sign, exponent and 7 mantissa bits, so 0.8 % wide, narrower than any
/// gap of the maps), the last code not above the bucket's start. Encoding
/// is then a lookup and a comparison or two, not a search: the update
/// spends most of its time encoding.
struct Codebook {
  std::array<float, 256> map;
  std::vector<uint8_t> first;

  explicit Codebook(bool isSigned) : map(makeMap(isSigned)), first(1 << 16) {
    int code = 0;
    for (uint32_t b = 0; b < (1u << 16); ++b) {
      uint32_t start = b << 16;
      while (code < 255 && orderedKey(map[code + 1]) <= start)
        ++code;
      first[b] = static_cast<uint8_t>(code);
    }
  }

  uint8_t encode(float x) const {
    int lo = first[orderedKey(x) >> 16];
    while (lo < 255 && map[lo + 1] <= x)
      ++lo;
    if (lo == 255 || x <= map[lo])
      return static_cast<uint8_t>(lo);
    return static_cast<uint8_t>(x - map[lo] <= map[lo + 1] - x ? lo : lo + 1);
  }
};

const Codebook &codebook(bool isSigned) {
  static const Codebook signedBook(true), unsignedBook(false);
  return isSigned ? signedBook : unsignedBook;
}

} // namespace

const std::array<float, 256> &quantMap(bool isSigned) {
  return codebook(isSigned).map;
}

uint8_t quantize(float x, bool isSigned) {
  return codebook(isSigned).encode(x);
}

absl::Status adam8Update(const TensorView &w, const TensorView &g,
                         const TensorView &mCodes, const TensorView &mScale,
                         const TensorView &vCodes, const TensorView &vScale,
                         float lr, float c1, float c2, const AdamConstants &k,
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
  const Codebook &sb = codebook(true), &ub = codebook(false);
  const std::array<float, 256> &sm = sb.map, &um = ub.map;
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
        float root = um[vCodes.as<uint8_t>()[i]];
        float vj = (root * root * vs) * k.beta2 + (gj * gj) * k.oneMinusBeta2;
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
            sb.encode(mMax > 0 ? m[j] / mMax : 0.0f);
        vCodes2.as<uint8_t>()[begin + j] =
            ub.encode(vMax > 0 ? std::sqrt(v[j] / vMax) : 0.0f);
      }
    }
  return absl::OkStatus();
}

} // namespace pc::runtime::cpu

//===- Quant8Test.cpp - Block-wise 8-bit Adam states ----------------------===//
//
// The maps, the nearest-code rounding, and pc.adam8_update's kernel: its
// first step from zero state equals the f32 Adam step bit for bit (the
// decoded moments are exact zeros), and the moments it stores decode to
// the f32 moments within the map's rounding.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Quant8.h"
#include "runtime/device/HostTensor.h"
#include "runtime/device/Tensor.h"
#include "runtime/kernels/CpuKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace pc::runtime;

namespace {

TEST(Quant8Test, MapsAreAscendingAndCoverTheirRange) {
  for (bool isSigned : {true, false}) {
    const std::array<float, 256> &map = cpu::quantMap(isSigned);
    for (int c = 1; c < 256; ++c)
      EXPECT_LT(map[c - 1], map[c]) << "code " << c;
    EXPECT_EQ(map.back(), 1.0f);
    EXPECT_EQ(map.front(), isSigned ? -1.0f : 0.0f);
    EXPECT_EQ(cpu::quantize(0.0f, isSigned), isSigned ? 127 : 0);
    // Every code is its own value's nearest.
    for (int c = 0; c < 256; ++c)
      EXPECT_EQ(cpu::quantize(map[c], isSigned), c);
    // Between two codes, the nearer; beyond the ends, the end.
    for (int c = 0; c + 1 < 256; ++c) {
      float a = map[c], b = map[c + 1];
      EXPECT_EQ(cpu::quantize(a + (b - a) * 0.4f, isSigned), c);
      EXPECT_EQ(cpu::quantize(a + (b - a) * 0.6f, isSigned), c + 1);
    }
    EXPECT_EQ(cpu::quantize(2.0f, isSigned), 255);
    EXPECT_EQ(cpu::quantize(-2.0f, isSigned), 0);
    // Dynamic: the codes reach 1e-7 of the scale, and are finer near zero.
    int small = 0;
    for (float v : map)
      small += std::fabs(v) < 0.1f;
    EXPECT_GT(small, 70);
    EXPECT_LT(std::fabs(map[isSigned ? 128 : 1]), 1e-6f);
  }
}

/// Half the larger gap from code `c` to its neighbours in `map`.
float halfGap(const std::array<float, 256> &map, int c) {
  float below = c > 0 ? map[c] - map[c - 1] : 0;
  float above = c < 255 ? map[c + 1] - map[c] : 0;
  return 0.5f * std::max(below, above);
}

/// A weight of `rows` x `cols` with gradient, zero moments and scales.
struct Case {
  HostTensor w, g, mc, ms, vc, vs;
  Case(int64_t rows, int64_t cols, std::mt19937 &rng) {
    w = HostTensor::zeros({rows, cols}, CommType::F32);
    g = HostTensor::zeros({rows, cols}, CommType::F32);
    std::normal_distribution<float> n(0, 1);
    for (int64_t i = 0; i < w.numel(); ++i) {
      w.as<float>()[i] = n(rng);
      // Magnitudes over several decades, as gradients have.
      g.as<float>()[i] = n(rng) * std::pow(10.0f, -5.0f * (i % 7) / 7);
    }
    int64_t blocks = cpu::blocksPerRow(cols);
    mc = HostTensor::zeros({rows, cols}, CommType::U8);
    vc = HostTensor::zeros({rows, cols}, CommType::U8);
    ms = HostTensor::zeros({rows, blocks}, CommType::F32);
    vs = HostTensor::zeros({rows, blocks}, CommType::F32);
  }
};

TEST(Quant8Test, FirstStepEqualsAdamAndStatesDecodeClose) {
  std::mt19937 rng(7);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4, 512}, {16, 100}}) {
    Case c(rows, cols, rng);
    float lr = 1e-3f, c1 = 0.1f, c2 = 0.001f;
    cpu::AdamConstants k32{0.9f, 0.1f, 0.999f, 0.001f, 1e-8f, 0.01f};
    cpu::AdamConstants k8 = k32;
    HostTensor m32 = HostTensor::zeros({rows, cols}, CommType::F32);
    HostTensor v32 = m32, w32 = m32, m32b = m32, v32b = m32;
    ASSERT_TRUE(
        cpu::adamUpdate(c.w, c.g, m32, v32, lr, c1, c2, k32, w32, m32b, v32b)
            .ok());
    Case out(rows, cols, rng);
    ASSERT_TRUE(cpu::adam8Update(c.w, c.g, c.mc, c.ms, c.vc, c.vs, lr, c1, c2,
                                 k8, out.w, out.mc, out.ms, out.vc, out.vs)
                    .ok());
    int64_t blocks = cpu::blocksPerRow(cols);
    const auto &sm = cpu::quantMap(true), &um = cpu::quantMap(false);
    for (int64_t i = 0; i < c.w.numel(); ++i) {
      ASSERT_EQ(out.w.as<float>()[i], w32.as<float>()[i]) << "element " << i;
      int64_t s = (i / cols) * blocks + (i % cols) / 256;
      float m = sm[out.mc.as<uint8_t>()[i]] * out.ms.as<float>()[s];
      float root = um[out.vc.as<uint8_t>()[i]];
      float v = root * root * out.vs.as<float>()[s];
      float wantM = m32b.as<float>()[i], wantV = v32b.as<float>()[i];
      // Within half the gap between the code and its neighbours.
      EXPECT_NEAR(m, wantM,
                  halfGap(sm, out.mc.as<uint8_t>()[i]) * out.ms.as<float>()[s] +
                      1e-6f * std::fabs(wantM));
      // v by its root.
      EXPECT_NEAR(std::sqrt(v), std::sqrt(wantV),
                  halfGap(um, out.vc.as<uint8_t>()[i]) *
                          std::sqrt(out.vs.as<float>()[s]) +
                      1e-6f * std::sqrt(wantV));
      // A second moment within the map's reach (its root at least the
      // smallest code) is not lost to zero: with v coded directly, a
      // gradient 1e-4 of its block's largest was.
      if (std::sqrt(wantV / out.vs.as<float>()[s]) >= 2 * um[1])
        EXPECT_GT(v, 0.0f) << "element " << i;
    }
    // Each scale is its block's largest magnitude.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < blocks; ++b) {
        float most = 0;
        for (int64_t j = b * 256; j < std::min<int64_t>(cols, b * 256 + 256);
             ++j)
          most = std::max(most, std::fabs(m32b.as<float>()[r * cols + j]));
        EXPECT_EQ(out.ms.as<float>()[r * blocks + b], most);
      }
  }
}

} // namespace

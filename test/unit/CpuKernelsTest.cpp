//===- CpuKernelsTest.cpp - CPU kernels against the reference kernels -----===//
//
// Each f32 kernel on random data against the double-precision reference
// kernels (runtime/reference/Kernels.h), within f32 rounding.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/CpuKernels.h"
#include "runtime/device/HostTensor.h"
#include "runtime/kernels/OneDnn.h"
#include "runtime/reference/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace pc;
using namespace pc::runtime;
namespace ref = pc::reference;

namespace {

using Shape = std::vector<int64_t>;

struct Pair {
  HostTensor f32;
  ref::Array f64;
};

Pair randomTensor(const Shape &shape, std::mt19937 &rng, double lo = -1,
                  double hi = 1) {
  Pair p{HostTensor::zeros(shape, CommType::F32), ref::Array::zeros(shape)};
  for (int64_t i = 0; i < p.f32.numel(); ++i) {
    float v = std::uniform_real_distribution<float>(lo, hi)(rng);
    p.f32.as<float>()[i] = v;
    p.f64.data[i] = v;
  }
  return p;
}

Pair ids(const Shape &shape, int64_t bound, std::mt19937 &rng,
         CommType type = CommType::I64) {
  Pair p{HostTensor::zeros(shape, type), ref::Array::zeros(shape)};
  for (int64_t i = 0; i < p.f32.numel(); ++i) {
    int64_t v = std::uniform_int_distribution<int64_t>(0, bound - 1)(rng);
    if (type == CommType::I64)
      p.f32.as<int64_t>()[i] = v;
    else
      p.f32.as<int32_t>()[i] = static_cast<int32_t>(v);
    p.f64.data[i] = v;
  }
  return p;
}

void expectClose(const HostTensor &actual, const ref::Array &expected,
                 double tol = 2e-5) {
  ASSERT_EQ(actual.shape, expected.shape);
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = actual.as<float>()[i], e = expected.data[i];
    if (std::isinf(e)) {
      EXPECT_EQ(a, e) << "element " << i;
      continue;
    }
    ASSERT_NEAR(a, e, tol * (1 + std::abs(e))) << "element " << i;
  }
}

TEST(CpuKernels, MatmulBatchedBroadcastTransposed) {
  std::mt19937 rng(1);
  struct Case {
    Shape a, b, out;
    bool ta, tb;
  };
  for (const Case &c :
       std::vector<Case>{{{4, 8}, {8, 3}, {4, 3}, false, false},
                         {{8, 4}, {3, 8}, {4, 3}, true, true},
                         {{2, 1, 5, 6}, {3, 6, 2}, {2, 3, 5, 2}, false, false},
                         {{2, 6, 5}, {2, 4, 6}, {2, 5, 4}, true, true},
                         {{3, 0}, {0, 2}, {3, 2}, false, false}}) {
    Pair a = randomTensor(c.a, rng), b = randomTensor(c.b, rng);
    HostTensor out = HostTensor::zeros(c.out, CommType::F32);
    ASSERT_TRUE(cpu::matmul(a.f32, b.f32, c.ta, c.tb, out).ok());
    expectClose(out, ref::matmul(a.f64, b.f64, c.ta, c.tb, c.out));
  }
}

TEST(CpuKernels, MatmulAddsItsAddendAsItWrites) {
  // The addend of a fused residual or bias (pc-fuse): oneDNN's post-op and
  // the OpenBLAS loops, each against the reference; oneDNN's also equals
  // its own product plus a separate add, bit for bit (the fold keeps the
  // bits).
  std::mt19937 rng(7);
  struct Case {
    Shape a, b, out, addend;
    bool ta, tb;
  };
  for (const Case &c : std::vector<Case>{
           {{4, 8}, {8, 3}, {4, 3}, {4, 3}, false, false},
           // A weight against batched rows: one GEMM, a residual or a bias.
           {{2, 5, 6}, {6, 3}, {2, 5, 3}, {2, 5, 3}, false, false},
           {{2, 5, 6}, {3, 6}, {2, 5, 3}, {3}, false, true},
           // Batched, with an addend broadcast over the batch.
           {{2, 6, 5}, {2, 4, 6}, {2, 5, 4}, {1, 5, 4}, true, true},
           {{2, 6, 5}, {2, 4, 6}, {2, 5, 4}, {2, 5, 4}, true, true},
           // Large enough for oneDNN's blocked kernels.
           {{2, 64, 96}, {96, 80}, {2, 64, 80}, {2, 64, 80}, false, false},
           {{2, 64, 96}, {96, 80}, {2, 64, 80}, {80}, false, false},
           {{4, 64, 32},
            {4, 32, 64},
            {4, 64, 64},
            {4, 64, 64},
            false,
            false}}) {
    Pair a = randomTensor(c.a, rng), b = randomTensor(c.b, rng),
         d = randomTensor(c.addend, rng);
    ref::Array expected = ref::broadcastBinary(
        ref::matmul(a.f64, b.f64, c.ta, c.tb, c.out), d.f64, c.out,
        [](double p, double q) { return p + q; });
    HostTensor loops = HostTensor::zeros(c.out, CommType::F32);
    TensorView addend(d.f32);
    ASSERT_TRUE(
        cpu::matmul(a.f32, b.f32, c.ta, c.tb, loops, 0.5f, &addend).ok());
    ref::Array half = ref::broadcastBinary(
        ref::matmul(a.f64, b.f64, c.ta, c.tb, c.out), d.f64, c.out,
        [](double p, double q) { return 0.5 * p + q; });
    expectClose(loops, half);

    cpu::MatmulPlan fused(c.a, c.b, c.ta, c.tb, c.out, 1.0f, c.addend);
    cpu::MatmulPlan plain(c.a, c.b, c.ta, c.tb, c.out);
    HostTensor out = HostTensor::zeros(c.out, CommType::F32);
    HostTensor product = HostTensor::zeros(c.out, CommType::F32);
    ASSERT_TRUE(fused.run(a.f32, b.f32, &addend, out).ok());
    expectClose(out, expected);
    ASSERT_TRUE(plain.run(a.f32, b.f32, product).ok());
    ASSERT_TRUE(cpu::binary(cpu::Binary::Add, product, d.f32, product).ok());
    EXPECT_EQ(std::memcmp(out.data(), product.data(), out.byteSize()), 0);
    // A plan made for an addend refuses to run without one.
    EXPECT_FALSE(fused.run(a.f32, b.f32, out).ok());
  }
}

TEST(CpuKernels, ElementwiseWithBroadcasting) {
  std::mt19937 rng(2);
  Pair a = randomTensor({3, 4, 5}, rng), bias = randomTensor({5}, rng);
  Pair col = randomTensor({3, 1, 5}, rng, 0.5, 2);
  for (auto [op, fn] : std::vector<
           std::pair<cpu::Binary, std::function<double(double, double)>>>{
           {cpu::Binary::Add, [](double x, double y) { return x + y; }},
           {cpu::Binary::Sub, [](double x, double y) { return x - y; }},
           {cpu::Binary::Mul, [](double x, double y) { return x * y; }},
           {cpu::Binary::Div, [](double x, double y) { return x / y; }}}) {
    for (const Pair *rhs : {&bias, &col, &a}) {
      HostTensor out = HostTensor::zeros({3, 4, 5}, CommType::F32);
      if (op == cpu::Binary::Div && rhs != &col)
        continue; // Keep divisors away from zero.
      ASSERT_TRUE(cpu::binary(op, a.f32, rhs->f32, out).ok());
      expectClose(out, ref::broadcastBinary(a.f64, rhs->f64, {3, 4, 5}, fn));
    }
  }
  Pair pos = randomTensor({7, 3}, rng, 0.1, 3);
  for (auto [op, fn] :
       std::vector<std::pair<cpu::Unary, std::function<double(double)>>>{
           {cpu::Unary::Neg, [](double x) { return -x; }},
           {cpu::Unary::Exp, [](double x) { return std::exp(x); }},
           {cpu::Unary::Log, [](double x) { return std::log(x); }},
           {cpu::Unary::Tanh, [](double x) { return std::tanh(x); }},
           {cpu::Unary::Relu, [](double x) { return x > 0 ? x : 0.0; }},
           {cpu::Unary::Sigmoid,
            [](double x) { return 1 / (1 + std::exp(-x)); }},
           {cpu::Unary::Gelu,
            [](double
                   x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
           {cpu::Unary::GeluTanh, [](double x) {
              return 0.5 * x *
                     (1 + std::tanh(std::sqrt(2 / M_PI) *
                                    (x + 0.044715 * x * x * x)));
            }}}) {
    const Pair &in = op == cpu::Unary::Log ? pos : a;
    HostTensor out = HostTensor::zeros(in.f32.shape, CommType::F32);
    ASSERT_TRUE(cpu::unary(op, in.f32, out).ok());
    expectClose(out, ref::elementwise(in.f64, fn));
  }
}

TEST(CpuKernels, NormalizationsAndReductions) {
  std::mt19937 rng(3);
  Pair x = randomTensor({2, 3, 16}, rng), g = randomTensor({16}, rng);
  Pair b = randomTensor({16}, rng);
  for (int64_t axis : {0, 1, 2})
    for (bool log : {false, true}) {
      HostTensor out = HostTensor::zeros(x.f32.shape, CommType::F32);
      ASSERT_TRUE(cpu::softmax(x.f32, axis, log, out).ok());
      expectClose(out, ref::softmax(x.f64, axis, log));
    }
  for (bool rms : {false, true}) {
    HostTensor out = HostTensor::zeros(x.f32.shape, CommType::F32);
    TensorView beta(b.f32);
    ASSERT_TRUE(
        cpu::normalize(x.f32, 2, g.f32, rms ? nullptr : &beta, 1e-5f, rms, out)
            .ok());
    expectClose(
        out, ref::normalize(x.f64, 2, g.f64, rms ? nullptr : &b.f64, 1e-5, rms),
        1e-4);
  }
  for (auto [op, kind] : {std::pair{cpu::Reduction::Sum, ref::Reduce::Sum},
                          std::pair{cpu::Reduction::Mean, ref::Reduce::Mean},
                          std::pair{cpu::Reduction::Max, ref::Reduce::Max}})
    for (std::vector<int64_t> axes :
         {std::vector<int64_t>{0}, std::vector<int64_t>{-1, 0},
          std::vector<int64_t>{0, 1, 2}}) {
      ref::Array expected = ref::reduce(x.f64, axes, false, kind);
      HostTensor out = HostTensor::zeros(expected.shape, CommType::F32);
      ASSERT_TRUE(cpu::reduce(op, x.f32, axes, out).ok());
      expectClose(out, expected);
    }
}

// Math.h's reduction order, written out here as loops: a column's terms in
// chunks of kReduceChunk, a reduced row in pieces of kRowPiece, each over
// eight lanes. The data (magnitudes from 1e-3 to 1e3) makes the plain
// sequential order give other bits, so the test tells the orders apart.
TEST(CpuKernels, ReductionsFollowTheChunkedOrder) {
  constexpr int64_t kChunk = portable::kReduceChunk,
                    kPiece = portable::kRowPiece;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-3, 3);
  const int64_t rows = 2 * kChunk + 3, width = kPiece + 6;
  HostTensor x = HostTensor::zeros({rows, width}, CommType::F32);
  float *px = reinterpret_cast<float *>(x.data());
  for (int64_t i = 0; i < rows * width; ++i)
    px[i] = mantissa(rng) * std::pow(10.0f, exponent(rng));
  auto lanes = [](const float *v, int64_t n) {
    float l[8] = {}, sum = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k)
        l[k] += v[i + k];
    for (float s : l)
      sum += s;
    for (; i < n; ++i)
      sum += v[i];
    return sum;
  };

  HostTensor cols = HostTensor::zeros({width}, CommType::F32);
  ASSERT_TRUE(
      cpu::reduce(cpu::Reduction::Sum, x, std::vector<int64_t>{0}, cols).ok());
  int differs = 0;
  for (int64_t c = 0; c < width; ++c) {
    float chunked = 0, part = 0, plain = 0;
    for (int64_t r = 0; r < rows; ++r) {
      if (r % kChunk == 0 && r > 0) {
        chunked += part;
        part = 0;
      }
      part += px[r * width + c];
      plain += px[r * width + c];
    }
    chunked += part;
    ASSERT_EQ(reinterpret_cast<const float *>(cols.data())[c], chunked) << c;
    differs += chunked != plain;
  }
  EXPECT_GT(differs, 0) << "the data does not tell the orders apart";

  HostTensor sums = HostTensor::zeros({rows}, CommType::F32);
  ASSERT_TRUE(
      cpu::reduce(cpu::Reduction::Sum, x, std::vector<int64_t>{1}, sums).ok());
  differs = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = px + r * width;
    float pieces = 0 + lanes(row, kPiece);
    pieces += lanes(row + kPiece, width - kPiece);
    ASSERT_EQ(reinterpret_cast<const float *>(sums.data())[r], pieces) << r;
    differs += pieces != lanes(row, width);
  }
  EXPECT_GT(differs, 0) << "the data does not tell the orders apart";
}

TEST(CpuKernels, LayoutAndLookups) {
  std::mt19937 rng(4);
  Pair x = randomTensor({2, 3, 4}, rng);
  std::vector<int64_t> perm = {2, 0, 1};
  HostTensor t = HostTensor::zeros({4, 2, 3}, CommType::F32);
  ASSERT_TRUE(cpu::transpose(x.f32, perm, t).ok());
  expectClose(t, ref::transpose(x.f64, perm), 0);

  Pair table = randomTensor({10, 4}, rng);
  for (CommType type : {CommType::I64, CommType::I32}) {
    Pair i = ids({3, 2}, 10, rng, type);
    HostTensor e = HostTensor::zeros({3, 2, 4}, CommType::F32);
    ASSERT_TRUE(cpu::embedding(i.f32, table.f32, false, e).ok());
    expectClose(e, *ref::embedding(i.f64, table.f64, false), 0);
  }
  HostTensor bad = HostTensor::zeros({2}, CommType::I64);
  bad.as<int64_t>()[1] = 12;
  HostTensor e = HostTensor::zeros({2, 4}, CommType::F32);
  absl::Status s = cpu::embedding(bad, table.f32, false, e);
  EXPECT_EQ(s.message(),
            "pc.embedding: id 12 at position 1 is outside [0, 10)");
  EXPECT_TRUE(cpu::embedding(bad, table.f32, true, e).ok());
  EXPECT_EQ(e.as<float>()[4], 0.0f);

  Pair scores = randomTensor({2, 3, 3}, rng);
  HostTensor m = HostTensor::zeros({2, 3, 3}, CommType::F32);
  ASSERT_TRUE(cpu::causalMask(scores.f32, m).ok());
  expectClose(m, ref::causalMask(scores.f64), 0);

  Pair logits = randomTensor({5, 7}, rng, -3, 3);
  Pair labels = ids({5}, 7, rng);
  HostTensor ce = HostTensor::zeros({5}, CommType::F32);
  ASSERT_TRUE(cpu::crossEntropy(logits.f32, labels.f32, ce).ok());
  expectClose(ce, *ref::crossEntropy(logits.f64, labels.f64));
  HostTensor pick = HostTensor::zeros({5}, CommType::F32);
  ASSERT_TRUE(cpu::pickLabels(logits.f32, labels.f32, pick).ok());
  expectClose(pick, ref::pickLabels(logits.f64, labels.f64), 0);

  HostTensor asInt = HostTensor::zeros({2, 3, 4}, CommType::I32);
  ASSERT_TRUE(cpu::cast(x.f32, asInt).ok());
  for (int64_t i = 0; i < asInt.numel(); ++i)
    EXPECT_EQ(asInt.as<int32_t>()[i],
              static_cast<int32_t>(std::trunc(x.f32.as<float>()[i])));
}

TEST(CpuKernels, OtherTypesAreAClearError) {
  HostTensor i = HostTensor::zeros({2, 2}, CommType::I32);
  HostTensor out = HostTensor::zeros({2, 2}, CommType::I32);
  absl::Status s = cpu::matmul(i, i, false, false, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "matmul: the CPU kernel takes f32 values");
}

} // namespace

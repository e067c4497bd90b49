//===- PortableKernelsTest.cpp - The GPU kernels' logic, on the CPU -------===//
//
// The CUDA backend's kernels (runtime/kernels/portable), built for the host
// through Thrust's CPP system, run the same per-device programs as the CPU
// backend, in a session whose CPU devices use them (--kernels portable).
// Each result must equal the CPU backend's: bit for bit where both compute
// the same function in the same order (data movement, integer ops, sums
// and norms, whose lane order the portable kernels keep), and within a few
// f32 roundings where a library's kernel differs (oneDNN's exp, tanh, GELU
// and softmax; OpenBLAS's product is the same on both). In f16 and bf16
// every op rounds once, as the CPU's widening does.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/HalfFloat.h"
#include "runtime/exec/CpuExecutor.h"
#include "runtime/kernels/Quant8.h"
#include "runtime/kernels/portable/DeviceKernels.h"
#include "runtime/reference/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "test/unit/PcContextTest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

using namespace mlir;
using pc::runtime::CommType;
using pc::runtime::HostTensor;
namespace portable = pc::runtime::portable;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string inType(std::string text, const std::string &type) {
  for (size_t at; (at = text.find("f32")) != std::string::npos;)
    text.replace(at, 3, type);
  return text;
}

class PortableKernelsTest : public pc::test::PcContextTest {
protected:
  void SetUp() override {
    if (!portable::makeHostKernels())
      GTEST_SKIP() << "this build has no portable kernels (no CCCL headers)";
  }

  /// `text` after `pipeline` and pc-distribute, with random inputs (seed 3).
  void compile(const std::string &text, StringRef graph,
               const std::string &pipeline, OwningOpRef<ModuleOp> &m,
               std::vector<HostTensor> &inputs) {
    m = parseSourceString<ModuleOp>(text, &context);
    ASSERT_TRUE(m);
    if (!pipeline.empty()) {
      PassManager pm = PassManager::on<ModuleOp>(&context);
      ASSERT_TRUE(succeeded(parsePassPipeline(pipeline, pm)));
      ASSERT_TRUE(succeeded(pm.run(*m)));
    }
    absl::StatusOr<std::vector<pc::reference::Array>> values =
        pc::reference::randomInputs(*m, graph, 3);
    ASSERT_TRUE(values.ok()) << values.status();
    auto f = m->lookupSymbol<func::FuncOp>(graph);
    for (auto [arg, a] : llvm::zip(f.getArguments(), *values)) {
      absl::StatusOr<CommType> type = pc::runtime::commTypeOf(arg.getType());
      ASSERT_TRUE(type.ok()) << type.status();
      HostTensor t = HostTensor::zeros(a.shape, *type);
      for (int64_t i = 0; i < a.size(); ++i)
        t.set(i, a.data[i]);
      inputs.push_back(std::move(t));
    }
    PassManager distribute = PassManager::on<ModuleOp>(&context);
    ASSERT_TRUE(succeeded(parsePassPipeline("pc-distribute", distribute)));
    ASSERT_TRUE(succeeded(distribute.run(*m)));
  }

  /// One run of `graph` on CPU devices with `portableKernels` or not: its
  /// results, then every parameter piece after it (what a training step
  /// stored), by rank and name.
  using Named = std::vector<std::pair<std::string, HostTensor>>;
  absl::StatusOr<Named> run(ModuleOp m, StringRef graph,
                            const std::vector<HostTensor> &inputs,
                            bool portableKernels, int64_t iterations = 1) {
    pc::runtime::CpuSession session(m, 9);
    session.setPortableKernels(portableKernels);
    pc::runtime::CpuRunOptions options;
    options.iterations = iterations;
    absl::StatusOr<pc::runtime::CpuRun> run =
        session.run(graph, inputs, options);
    if (!run.ok())
      return run.status();
    Named out;
    for (size_t r = 0; r < run->results.size(); ++r)
      out.push_back({"result " + std::to_string(r), run->results[r]});
    auto pieces = session.pieces();
    if (!pieces.ok())
      return pieces.status();
    for (auto &[key, piece] : *pieces)
      out.push_back({"rank " + std::to_string(key.first) + "'s " + key.second,
                     std::move(piece)});
    return out;
  }

  /// Runs `text` both ways and compares every result: within `tolerance`
  /// relative to the magnitude (0: the same bits).
  void expectSame(const std::string &text, StringRef graph, double tolerance,
                  const std::string &pipeline = "", int64_t iterations = 1) {
    OwningOpRef<ModuleOp> m;
    std::vector<HostTensor> inputs;
    ASSERT_NO_FATAL_FAILURE(compile(text, graph, pipeline, m, inputs));
    absl::StatusOr<Named> native = run(*m, graph, inputs, false, iterations);
    ASSERT_TRUE(native.ok()) << native.status();
    absl::StatusOr<Named> ported = run(*m, graph, inputs, true, iterations);
    ASSERT_TRUE(ported.ok()) << ported.status();
    ASSERT_EQ(native->size(), ported->size());
    for (size_t r = 0; r < native->size(); ++r) {
      const HostTensor &want = (*native)[r].second, &got = (*ported)[r].second;
      const std::string &what = (*native)[r].first;
      ASSERT_EQ(got.shape, want.shape) << what;
      ASSERT_EQ(got.type, want.type) << what;
      if (tolerance == 0) {
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.byteSize()))
            << what << " of " << graph.str() << " differs";
        continue;
      }
      for (int64_t i = 0; i < want.numel(); ++i) {
        double w = want.get(i), g = got.get(i);
        if (std::isnan(w) || std::isinf(w)) {
          ASSERT_TRUE(std::isnan(w) ? std::isnan(g) : g == w)
              << what << " element " << i;
          continue;
        }
        ASSERT_NEAR(g, w, tolerance * (1 + std::abs(w)))
            << what << " element " << i << " of " << graph.str();
      }
    }
  }
};

// The 16-bit conversions of the device math (bit manipulation, for both
// compilers) against the CPU's (the compiler's _Float16 and HalfFloat.h):
// every f16 and bf16 value widens the same, and narrowing agrees on the
// subnormals, the rounding boundaries, the overflow to infinity, NaNs and
// a million random floats.
TEST(PortableMath, HalfConversionsEqualTheCpus) {
  using namespace pc::runtime;
  for (uint32_t b = 0; b < 65536; ++b) {
    uint16_t bits = static_cast<uint16_t>(b);
    float want = f16ToFloat(bits), got = portable::toFloat(portable::F16{bits});
    if (std::isnan(want))
      ASSERT_TRUE(std::isnan(got)) << b;
    else
      ASSERT_EQ(portable::bitsOf(got), portable::bitsOf(want)) << b;
    ASSERT_EQ(portable::bitsOf(portable::toFloat(portable::BF16{bits})),
              portable::bitsOf(bf16ToFloat(bits)))
        << b;
  }
  std::mt19937 rng(7);
  std::vector<float> values = {
      0.0f,      -0.0f,  65504.0f,      65519.99f,     65520.0f,
      1e-8f,     -3e-8f, 6.1e-5f,       1e30f,         INFINITY,
      -INFINITY, NAN,    5.9604645e-8f, 2.9802322e-8f, 8.940697e-8f};
  for (int i = 0; i < 1000000; ++i)
    values.push_back(portable::floatOf(rng()));
  // Every midpoint between neighbouring halves (ties go to even).
  for (uint32_t b = 0; b < 0x7c00; ++b)
    values.push_back((f16ToFloat(b) + f16ToFloat(b + 1)) / 2);
  for (float v : values) {
    uint16_t want = floatToF16(v), got = portable::toF16(v).bits;
    if (std::isnan(v))
      ASSERT_EQ(got & 0x7c00, 0x7c00) << v;
    else
      ASSERT_EQ(got, want) << v;
    ASSERT_EQ(portable::toBF16(v).bits, floatToBf16(v)) << v;
  }
}

// The 8-bit codes' search equals the CPU's bucketed lookup.
TEST(PortableMath, EightBitCodesEqualTheCpus) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.2f, 1.2f);
  for (bool isSigned : {true, false}) {
    const std::array<float, 256> &map = pc::runtime::cpu::quantMap(isSigned);
    std::vector<float> xs(map.begin(), map.end());
    for (int i = 0; i + 1 < 256; ++i)
      xs.push_back((map[i] + map[i + 1]) / 2);
    for (int i = 0; i < 200000; ++i)
      xs.push_back(isSigned ? u(rng) : std::abs(u(rng)));
    for (float x : xs)
      ASSERT_EQ(portable::encode8(map.data(), x),
                pc::runtime::cpu::quantize(x, isSigned))
          << x;
  }
}

// A GPT training step with Adam on DP2 x TP2 (the forward, every gradient
// kernel, the collectives, the optimizer): every updated parameter, moment
// and the loss within f32 roundings of the CPU backend's.
TEST_F(PortableKernelsTest, GptTrainingStepEqualsTheCpuBackend) {
  expectSame(readFile(PC_SOURCE_DIR "/examples/gpt_tiny_2x2.mlir"), "gpt", 2e-5,
             "pc-autodiff{graph=gpt},pc-optimizer{kind=adam}");
}

TEST_F(PortableKernelsTest, ModelsInEveryFloatType) {
  std::string mlp = readFile(PC_SOURCE_DIR "/examples/mlp_2x2.mlir");
  std::string block = readFile(PC_SOURCE_DIR "/examples/gpt_block_2x2.mlir");
  expectSame(mlp, "mlp", 1e-5);
  expectSame(block, "block", 1e-5);
  // One rounding of the 16-bit type where the f32 values straddle it.
  expectSame(inType(mlp, "bf16"), "mlp", 1e-2);
  expectSame(inType(block, "bf16"), "block", 1e-2);
  expectSame(inType(mlp, "f16"), "mlp", 2e-3);
  expectSame(inType(block, "f16"), "block", 2e-3);
}

} // namespace

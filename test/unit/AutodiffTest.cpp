//===- AutodiffTest.cpp - Gradients against finite differences ------------===//
//
// For every logical op: a graph whose trainable parameters are the op's
// float operands and whose loss is sum(op(...) * R), with R a fixed random
// (frozen) tensor, is differentiated by --pc-autodiff and run by the
// reference interpreter in double precision; every gradient element must
// equal the central difference (loss(p + h) - loss(p - h)) / 2h of the same
// interpreter within 1e-6 (relative to 1 + |g|). The differentiated graphs
// must also distribute: on a 2-device mesh their per-device programs give
// the same gradients. Frozen parameters get no gradient and cost no
// backward work.
//
//===----------------------------------------------------------------------===//

#include "passes/InitAll.h"
#include "runtime/reference/Interpreter.h"

#include "dialect/PcOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "test/unit/PcContextTest.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using pc::reference::Array;

namespace {

/// An op to differentiate: the float operands (trainable parameters, with
/// their initializer), integer inputs (function arguments), the result
/// type, and the op's text given %pN for parameters and %iN for inputs.
struct GradCase {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params; // type, init
  std::vector<std::string> inputs;                         // integer types
  std::string result;
  std::string op; // "pc.matmul %p0, %p1"
};

const char *kNormal = "normal(std = 1.0)";
const char *kPositive = "uniform(low = 0.5, high = 2.0)";

std::vector<GradCase> cases() {
  auto p = [](std::string t, const char *init = kNormal) {
    return std::make_pair(t, std::string(init));
  };
  return {
      {"matmul",
       {p("5x4xf32"), p("4x3xf32")},
       {},
       "5x3xf32",
       "pc.matmul %p0, %p1"},
      {"matmul lhs^T",
       {p("4x5xf32"), p("4x3xf32")},
       {},
       "5x3xf32",
       "pc.matmul %p0, %p1 {transpose_lhs}"},
      {"matmul rhs^T",
       {p("5x4xf32"), p("3x4xf32")},
       {},
       "5x3xf32",
       "pc.matmul %p0, %p1 {transpose_rhs}"},
      {"matmul both^T",
       {p("4x5xf32"), p("3x4xf32")},
       {},
       "5x3xf32",
       "pc.matmul %p0, %p1 {transpose_lhs, transpose_rhs}"},
      {"batched matmul with a weight",
       {p("2x5x4xf32"), p("4x3xf32")},
       {},
       "2x5x3xf32",
       "pc.matmul %p0, %p1"},
      {"batched matmul with a weight^T",
       {p("2x5x4xf32"), p("3x4xf32")},
       {},
       "2x5x3xf32",
       "pc.matmul %p0, %p1 {transpose_rhs}"},
      {"broadcast batch matmul",
       {p("3x4xf32"), p("2x4x2xf32")},
       {},
       "2x3x2xf32",
       "pc.matmul %p0, %p1"},
      {"add bias",
       {p("5x4xf32"), p("4xf32")},
       {},
       "5x4xf32",
       "pc.add %p0, %p1"},
      {"sub column",
       {p("5x4xf32"), p("5x1xf32")},
       {},
       "5x4xf32",
       "pc.sub %p0, %p1"},
      {"mul", {p("5x4xf32"), p("5x4xf32")}, {}, "5x4xf32", "pc.mul %p0, %p1"},
      {"div",
       {p("5x4xf32"), p("4xf32", kPositive)},
       {},
       "5x4xf32",
       "pc.div %p0, %p1"},
      {"neg", {p("5x4xf32")}, {}, "5x4xf32", "pc.neg %p0"},
      {"exp", {p("5x4xf32")}, {}, "5x4xf32", "pc.exp %p0"},
      {"log", {p("5x4xf32", kPositive)}, {}, "5x4xf32", "pc.log %p0"},
      {"tanh", {p("5x4xf32")}, {}, "5x4xf32", "pc.tanh %p0"},
      {"relu", {p("5x4xf32")}, {}, "5x4xf32", "pc.relu %p0"},
      {"sigmoid", {p("5x4xf32")}, {}, "5x4xf32", "pc.sigmoid %p0"},
      {"sqrt", {p("5x4xf32", kPositive)}, {}, "5x4xf32", "pc.sqrt %p0"},
      {"erf", {p("5x4xf32")}, {}, "5x4xf32", "pc.erf %p0"},
      {"gelu", {p("5x4xf32")}, {}, "5x4xf32", "pc.gelu %p0"},
      {"gelu tanh", {p("5x4xf32")}, {}, "5x4xf32", "pc.gelu %p0 {approximate}"},
      {"softmax",
       {p("5x4xf32")},
       {},
       "5x4xf32",
       "pc.softmax %p0 {axis = 1 : i64}"},
      {"softmax axis 0",
       {p("5x4xf32")},
       {},
       "5x4xf32",
       "pc.softmax %p0 {axis = 0 : i64}"},
      {"log_softmax",
       {p("5x4xf32")},
       {},
       "5x4xf32",
       "pc.log_softmax %p0 {axis = -1 : i64}"},
      {"layer_norm",
       {p("5x4xf32"), p("4xf32"), p("4xf32")},
       {},
       "5x4xf32",
       "pc.layer_norm %p0, %p1, %p2"},
      {"layer_norm two dims",
       {p("2x3x4xf32"), p("3x4xf32"), p("3x4xf32")},
       {},
       "2x3x4xf32",
       "pc.layer_norm %p0, %p1, %p2 {axis = 1 : i64}"},
      {"rms_norm",
       {p("5x4xf32"), p("4xf32")},
       {},
       "5x4xf32",
       "pc.rms_norm %p0, %p1"},
      {"reduce_sum",
       {p("5x4x3xf32")},
       {},
       "4xf32",
       "pc.reduce_sum %p0 {axes = array<i64: 0, 2>}"},
      {"reduce_sum keepdim",
       {p("5x4xf32")},
       {},
       "5x1xf32",
       "pc.reduce_sum %p0 {axes = array<i64: 1>, keepdim}"},
      {"reduce_mean",
       {p("5x4xf32")},
       {},
       "5xf32",
       "pc.reduce_mean %p0 {axes = array<i64: -1>}"},
      {"reduce_max",
       {p("5x4xf32")},
       {},
       "4xf32",
       "pc.reduce_max %p0 {axes = array<i64: 0>}"},
      {"reshape", {p("4x6xf32")}, {}, "2x3x4xf32", "pc.reshape %p0"},
      {"transpose",
       {p("2x3x4xf32")},
       {},
       "4x2x3xf32",
       "pc.transpose %p0 {perm = array<i64: 2, 0, 1>}"},
      {"broadcast_to", {p("3x1xf32")}, {}, "2x3x4xf32", "pc.broadcast_to %p0"},
      {"slice",
       {p("5x6xf32")},
       {},
       "3x2xf32",
       "pc.slice %p0 {start = array<i64: 1, 3>, limit = array<i64: 4, 5>}"},
      {"concat",
       {p("5x2xf32"), p("5x3xf32")},
       {},
       "5x5xf32",
       "pc.concat %p0, %p1 {axis = 1 : i64}"},
      {"embedding",
       {p("7x4xf32")},
       {"3x2xi64"},
       "3x2x4xf32",
       "pc.embedding %i0, %p0"},
      {"causal_mask then softmax",
       {p("2x4x4xf32")},
       {},
       "2x4x4xf32",
       "pc.softmax %m {axis = -1 : i64}"},
      {"cross_entropy",
       {p("5x7xf32")},
       {"5xi64"},
       "5xf32",
       "pc.cross_entropy %p0, %i0"},
      {"cast to bf16 and back", {p("5x4xf32")}, {}, "5x4xf32", "pc.cast %c"},
  };
}

std::string tensor(const std::string &t) { return "tensor<" + t + ">"; }

/// Parameter `i`'s type: the first is stored split over the two devices
/// along its first dim, so that forward and backward distribute.
std::string paramType(const GradCase &c, size_t i) {
  const std::string &t = c.params[i].first;
  if (i == 0 && std::stoi(t) >= 2 && t.find('x') != std::string::npos)
    return "tensor<" + t + ", #pc.sbp<@m, [S(0)]>>";
  return tensor(t);
}

/// The graph of `c`: its op between the parameter reads and the loss.
std::string graphOf(const GradCase &c) {
  std::string text = "pc.mesh @m <[\"x\"=2]>\n";
  for (size_t i = 0; i < c.params.size(); ++i)
    text += "pc.param @p" + std::to_string(i) + " : " + paramType(c, i) +
            " = #pc.init<" + c.params[i].second + ">\n";
  text += "pc.param @r : " + tensor(c.result) +
          " = #pc.init<normal(std = 1.0)> {trainable = false}\n";
  text += "func.func @f(";
  for (size_t i = 0; i < c.inputs.size(); ++i)
    text += (i ? ", " : "") + std::string("%i") + std::to_string(i) + ": " +
            tensor(c.inputs[i]);
  text += ") -> (tensor<f32> {pc.loss}) {\n";
  std::string types;
  for (size_t i = 0; i < c.params.size(); ++i) {
    text += "  %p" + std::to_string(i) + " = pc.get_param @p" +
            std::to_string(i) + " : " + paramType(c, i) + "\n";
  }
  // Operand types in the order the op's text names them.
  std::vector<std::string> operandTypes;
  bool inputsFirst = c.op.find("%i0") != std::string::npos &&
                     c.op.find("%i0") < c.op.find("%p0");
  if (inputsFirst)
    for (auto &t : c.inputs)
      operandTypes.push_back(tensor(t));
  for (size_t i = 0; i < c.params.size(); ++i)
    operandTypes.push_back(paramType(c, i));
  if (!inputsFirst)
    for (auto &t : c.inputs)
      operandTypes.push_back(tensor(t));
  if (c.op.find("%m") != std::string::npos) {
    // A mask before the op.
    text += "  %m = pc.causal_mask %p0 : (" + paramType(c, 0) + ") -> " +
            tensor(c.params[0].first) + "\n";
  }
  if (c.op.find("%c") != std::string::npos) {
    std::string half = c.params[0].first;
    half.replace(half.find("f32"), 3, "bf16");
    text += "  %c = pc.cast %p0 : (" + paramType(c, 0) + ") -> " +
            tensor(half) + "\n";
    operandTypes = {tensor(half)};
  }
  for (size_t i = 0; i < operandTypes.size(); ++i)
    types += (i ? ", " : "") + operandTypes[i];
  if (c.op.find("%m") != std::string::npos)
    types = tensor(c.params[0].first);
  text += "  %y = " + c.op + " : (" + types + ") -> " + tensor(c.result) + "\n";
  text += "  %r = pc.get_param @r : " + tensor(c.result) + "\n";
  text += "  %yr = pc.mul %y, %r : (" + tensor(c.result) + ", " +
          tensor(c.result) + ") -> " + tensor(c.result) + "\n";
  std::string axes;
  size_t rank = std::count(c.result.begin(), c.result.end(), 'x');
  for (size_t d = 0; d < rank; ++d)
    axes += (d ? ", " : "") + std::to_string(d);
  text += "  %l = pc.reduce_sum %yr {axes = array<i64: " + axes + ">} : (" +
          tensor(c.result) + ") -> tensor<f32>\n";
  text += "  return %l : tensor<f32>\n}\n";
  return text;
}

class AutodiffTest : public pc::test::PcContextTest {
protected:
  OwningOpRef<ModuleOp> parse(const std::string &text) {
    return parseSourceString<ModuleOp>(text, &context);
  }
  bool run(ModuleOp m, const std::string &pipeline) {
    PassManager pm = PassManager::on<ModuleOp>(&context);
    return succeeded(parsePassPipeline(pipeline, pm)) && succeeded(pm.run(m));
  }
};

TEST_F(AutodiffTest, EveryOpMatchesFiniteDifferences) {
  const uint64_t seed = 11;
  int64_t checked = 0;
  for (const GradCase &c : cases()) {
    SCOPED_TRACE(c.name);
    std::string text = graphOf(c);
    OwningOpRef<ModuleOp> m = parse(text);
    ASSERT_TRUE(m) << text;
    absl::StatusOr<std::vector<Array>> inputs =
        pc::reference::randomInputs(*m, "f", seed);
    ASSERT_TRUE(inputs.ok()) << inputs.status();
    ASSERT_TRUE(run(*m, "pc-autodiff")) << text;
    auto f = m->lookupSymbol<func::FuncOp>("f");
    ASSERT_EQ(f.getNumResults(), 1 + c.params.size());

    std::map<std::string, Array> params;
    for (size_t i = 0; i < c.params.size(); ++i) {
      std::string name = "p" + std::to_string(i);
      absl::StatusOr<Array> v = pc::reference::initialParam(*m, name, seed);
      ASSERT_TRUE(v.ok()) << v.status();
      params[name] = *v;
    }
    absl::StatusOr<std::vector<Array>> out =
        pc::reference::runLogical(*m, "f", *inputs, seed, &params);
    ASSERT_TRUE(out.ok()) << out.status();
    for (size_t i = 0; i < c.params.size(); ++i) {
      std::string name = "p" + std::to_string(i);
      EXPECT_EQ(
          f.getResultAttrOfType<FlatSymbolRefAttr>(i + 1, "pc.grad").getValue(),
          name);
      const Array &grad = (*out)[i + 1];
      ASSERT_EQ(grad.shape, params[name].shape);
      const double h = 1e-5;
      for (int64_t k = 0; k < grad.size(); ++k) {
        std::map<std::string, Array> plus = params, minus = params;
        plus[name].data[k] += h;
        minus[name].data[k] -= h;
        auto lp = pc::reference::runLogical(*m, "f", *inputs, seed, &plus);
        auto lm = pc::reference::runLogical(*m, "f", *inputs, seed, &minus);
        ASSERT_TRUE(lp.ok() && lm.ok());
        double fd = ((*lp)[0].data[0] - (*lm)[0].data[0]) / (2 * h);
        ASSERT_NEAR(grad.data[k], fd, 1e-6 * (1 + std::abs(fd)))
            << "d loss / d " << name << "[" << k << "]";
        ++checked;
      }
    }

    // The training graph distributes: the same gradients from the
    // per-device programs on two devices.
    ASSERT_TRUE(run(*m, "pc-distribute")) << c.name;
    absl::StatusOr<std::vector<Array>> distributed =
        pc::reference::runDistributed(*m, "f", *inputs, seed);
    ASSERT_TRUE(distributed.ok()) << distributed.status();
    // Parameters from their initializers in both runs.
    OwningOpRef<ModuleOp> again = parse(text);
    ASSERT_TRUE(run(*again, "pc-autodiff"));
    absl::StatusOr<std::vector<Array>> logical =
        pc::reference::runLogical(*again, "f", *inputs, seed);
    ASSERT_TRUE(logical.ok());
    absl::StatusOr<double> err =
        pc::reference::maxRelativeError(*distributed, *logical);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, 1e-6);
  }
  // Every case's every parameter element was checked.
  EXPECT_GT(checked, 1000);
  std::printf("checked %lld gradient elements\n", (long long)checked);
}

TEST_F(AutodiffTest, FrozenParametersGetNoGradientAndNoWork) {
  OwningOpRef<ModuleOp> m = parse(R"mlir(
    pc.param @w : tensor<4x3xf32> = #pc.init<normal(std = 1.0)>
    pc.param @frozen : tensor<4x4xf32> = #pc.init<normal(std = 1.0)> {trainable = false}
    func.func @f(%x: tensor<5x4xf32>) -> tensor<f32> {
      %fz = pc.get_param @frozen : tensor<4x4xf32>
      %w = pc.get_param @w : tensor<4x3xf32>
      %h = pc.matmul %x, %fz : (tensor<5x4xf32>, tensor<4x4xf32>) -> tensor<5x4xf32>
      %t = pc.tanh %h : (tensor<5x4xf32>) -> tensor<5x4xf32>
      %y = pc.matmul %t, %w : (tensor<5x4xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>
      %l = pc.reduce_sum %y {axes = array<i64: 0, 1>} : (tensor<5x3xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
  )mlir");
  ASSERT_TRUE(m);
  ASSERT_TRUE(run(*m, "pc-autodiff"));
  auto f = m->lookupSymbol<func::FuncOp>("f");
  ASSERT_EQ(f.getNumResults(), 2u);
  EXPECT_EQ(f.getResultAttrOfType<FlatSymbolRefAttr>(1, "pc.grad").getValue(),
            "w");
  // Backward: only dW = t^T dY and its sum/broadcast of the seed; nothing
  // flows into the frozen branch (no tanh gradient, no third matmul).
  int matmuls = 0, tanhUses = 0;
  f.walk([&](pc::MatmulOp) { ++matmuls; });
  f.walk([&](pc::TanhOp t) {
    tanhUses = std::distance(t->use_begin(), t->use_end());
  });
  EXPECT_EQ(matmuls, 3);  // two forward, one backward
  EXPECT_EQ(tanhUses, 2); // the forward matmul and dW
}

TEST_F(AutodiffTest, GradientsOfSharedParametersAdd) {
  OwningOpRef<ModuleOp> m = parse(R"mlir(
    pc.param @w : tensor<3xf32> = #pc.init<normal(std = 1.0)>
    func.func @f() -> tensor<f32> {
      %a = pc.get_param @w : tensor<3xf32>
      %b = pc.get_param @w : tensor<3xf32>
      %p = pc.mul %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      %l = pc.reduce_sum %p {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
  )mlir");
  ASSERT_TRUE(m);
  ASSERT_TRUE(run(*m, "pc-autodiff"));
  auto out = pc::reference::runLogical(*m, "f", {}, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  auto w = pc::reference::initialParam(*m, "w", 3);
  ASSERT_TRUE(w.ok());
  ASSERT_EQ((*out).size(), 2u);
  for (int k = 0; k < 3; ++k)
    EXPECT_DOUBLE_EQ((*out)[1].data[k], 2 * w->data[k]);
}

} // namespace

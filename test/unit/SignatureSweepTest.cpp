//===- SignatureSweepTest.cpp - Every op under its signatures, executed ---===//
//
// For every logical op, on meshes [1], [2], [4], [2, 2] and [2, 2, 2], with
// shapes that split unevenly: for each nd signature the op offers, the op
// runs with its operands and result annotated in that signature's layouts,
// compiled by --pc-distribute (the annotated result is a constraint; the
// operands are free to be boxed), on CPU virtual devices (f32 kernels, ring
// collectives). The assembled result must equal the
// logical op run by the reference interpreter, within f32 rounding.
//
//===----------------------------------------------------------------------===//

#include "passes/InitAll.h"
#include "runtime/exec/CpuExecutor.h"
#include "runtime/reference/Interpreter.h"

#include "dialect/PcOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "test/unit/PcContextTest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace mlir;
using pc::SbpEntry;
using pc::reference::Array;
using pc::runtime::CommType;
using pc::runtime::HostTensor;

namespace {

using Shape = std::vector<int64_t>;

/// An op to sweep: its operand types (logical, no layout) and the IR of the
/// op given the operand and result type strings.
struct OpCase {
  std::string name;
  std::vector<std::string> operands; // e.g. "10x6xf32"
  std::string result;
  std::function<std::string(const std::vector<std::string> &,
                            const std::string &)>
      body;
};

std::string tensorType(const std::string &t, const std::string &sbp) {
  return sbp.empty() ? "tensor<" + t + ">" : "tensor<" + t + ", " + sbp + ">";
}

std::string unaryOp(const std::string &op, const std::string &attrs = "") {
  return op + " %a0" + attrs;
}

std::vector<OpCase> cases() {
  auto simple = [](std::string name, std::vector<std::string> operands,
                   std::string result, std::string text) {
    return OpCase{
        name, operands, result,
        [text](const std::vector<std::string> &ops, const std::string &res) {
          std::string types;
          for (size_t i = 0; i < ops.size(); ++i)
            types += (i ? ", " : "") + ops[i];
          return text + " : (" + types + ") -> " + res;
        }};
  };
  return {
      simple("matmul", {"6x5xf32", "5x4xf32"}, "6x4xf32", "pc.matmul %a0, %a1"),
      simple("batched matmul", {"3x4x5xf32", "5x2xf32"}, "3x4x2xf32",
             "pc.matmul %a0, %a1"),
      simple("matmul transposed", {"5x6xf32", "4x5xf32"}, "6x4xf32",
             "pc.matmul %a0, %a1 {transpose_lhs, transpose_rhs}"),
      simple("matmul scaled", {"3x4x5xf32", "3x4x5xf32"}, "3x4x4xf32",
             "pc.matmul %a0, %a1 {alpha = -0.375 : f64, transpose_rhs}"),
      simple("matmul with a residual", {"6x5xf32", "5x4xf32", "6x4xf32"},
             "6x4xf32", "pc.matmul %a0, %a1, %a2 {alpha = 0.5 : f64}"),
      simple("batched matmul with a bias", {"3x4x5xf32", "2x5xf32", "2xf32"},
             "3x4x2xf32", "pc.matmul %a0, %a1, %a2 {transpose_rhs}"),
      simple("add bias", {"6x5xf32", "5xf32"}, "6x5xf32", "pc.add %a0, %a1"),
      simple("sub", {"6x5xf32", "6x5xf32"}, "6x5xf32", "pc.sub %a0, %a1"),
      simple("mul", {"6x5xf32", "6x1xf32"}, "6x5xf32", "pc.mul %a0, %a1"),
      simple("neg", {"6x5xf32"}, "6x5xf32", unaryOp("pc.neg")),
      simple("exp", {"6x5xf32"}, "6x5xf32", unaryOp("pc.exp")),
      simple("tanh", {"6x5xf32"}, "6x5xf32", unaryOp("pc.tanh")),
      simple("relu", {"6x5xf32"}, "6x5xf32", unaryOp("pc.relu")),
      simple("sigmoid", {"6x5xf32"}, "6x5xf32", unaryOp("pc.sigmoid")),
      simple("gelu", {"6x5xf32"}, "6x5xf32",
             unaryOp("pc.gelu", " {approximate}")),
      simple("softmax", {"6x5xf32"}, "6x5xf32",
             unaryOp("pc.softmax", " {axis = 1 : i64}")),
      simple("log_softmax", {"5x6xf32"}, "5x6xf32",
             unaryOp("pc.log_softmax", " {axis = 0 : i64}")),
      simple("layer_norm", {"6x5xf32", "5xf32", "5xf32"}, "6x5xf32",
             "pc.layer_norm %a0, %a1, %a2"),
      simple("rms_norm", {"6x5xf32", "5xf32"}, "6x5xf32",
             "pc.rms_norm %a0, %a1"),
      simple("reduce_sum", {"6x5xf32"}, "5xf32",
             unaryOp("pc.reduce_sum", " {axes = array<i64: 0>}")),
      simple("reduce_mean", {"6x5x3xf32"}, "6x1x3xf32",
             unaryOp("pc.reduce_mean", " {axes = array<i64: 1>, keepdim}")),
      simple("reduce_max", {"6x5xf32"}, "6xf32",
             unaryOp("pc.reduce_max", " {axes = array<i64: 1>}")),
      simple("transpose", {"6x5x2xf32"}, "2x6x5xf32",
             unaryOp("pc.transpose", " {perm = array<i64: 2, 0, 1>}")),
      simple("reshape", {"4x6xf32"}, "4x2x3xf32", unaryOp("pc.reshape")),
      simple("slice", {"6x5xf32"}, "6x3xf32",
             unaryOp("pc.slice",
                     " {start = array<i64: 0, 1>, limit = array<i64: 6, 4>}")),
      simple("concat", {"6x2xf32", "6x3xf32"}, "6x5xf32",
             "pc.concat %a0, %a1 {axis = 1 : i64}"),
      simple("broadcast_to", {"5xf32"}, "6x5xf32", unaryOp("pc.broadcast_to")),
      simple("embedding", {"6xi64", "9x4xf32"}, "6x4xf32",
             "pc.embedding %a0, %a1"),
      simple("causal_mask", {"3x4x4xf32"}, "3x4x4xf32",
             unaryOp("pc.causal_mask")),
      simple("causal_mask zero", {"3x4x4xf32"}, "3x4x4xf32",
             unaryOp("pc.causal_mask", " {zero}")),
      simple("gelu_grad", {"6x5xf32", "6x5xf32"}, "6x5xf32",
             "pc.gelu_grad %a0, %a1 {approximate}"),
      simple("gelu_grad erf", {"6x5xf32", "6x5xf32"}, "6x5xf32",
             "pc.gelu_grad %a0, %a1"),
      simple("layer_norm_grad", {"6x5xf32", "6x5xf32", "5xf32"}, "6x5xf32",
             "pc.layer_norm_grad %a0, %a1, %a2 {axis = -1 : i64}"),
      simple("layer_norm_grad 2 dims", {"3x4x5xf32", "3x4x5xf32", "4x5xf32"},
             "3x4x5xf32", "pc.layer_norm_grad %a0, %a1, %a2 {axis = 1 : i64}"),
      simple("layer_norm_scale_grad", {"6x5xf32", "6x5xf32"}, "5xf32",
             "pc.layer_norm_scale_grad %a0, %a1 {axis = -1 : i64}"),
      simple("layer_norm_scale_grad 2 dims", {"3x4x5xf32", "3x4x5xf32"},
             "4x5xf32", "pc.layer_norm_scale_grad %a0, %a1 {axis = 1 : i64}"),
      simple("softmax causal", {"3x5x5xf32"}, "3x5x5xf32",
             unaryOp("pc.softmax", " {axis = -1 : i64, causal}")),
      simple("softmax_grad causal", {"3x5x5xf32", "3x5x5xf32"}, "3x5x5xf32",
             "pc.softmax_grad %a0, %a1 {axis = -1 : i64, causal}"),
      simple("softmax causal wide", {"3x6x20xf32"}, "3x6x20xf32",
             unaryOp("pc.softmax", " {axis = -1 : i64, causal}")),
      simple("softmax causal tall", {"3x20x6xf32"}, "3x20x6xf32",
             unaryOp("pc.softmax", " {axis = -1 : i64, causal}")),
      simple("softmax_grad causal wide", {"3x6x20xf32", "3x6x20xf32"},
             "3x6x20xf32",
             "pc.softmax_grad %a0, %a1 {axis = -1 : i64, causal}"),
      simple("softmax_grad", {"6x5xf32", "6x5xf32"}, "6x5xf32",
             "pc.softmax_grad %a0, %a1 {axis = -1 : i64}"),
      simple("softmax_grad axis 0", {"5x6xf32", "5x6xf32"}, "5x6xf32",
             "pc.softmax_grad %a0, %a1 {axis = 0 : i64}"),
      simple("cross_entropy", {"6x7xf32", "6xi64"}, "6xf32",
             "pc.cross_entropy %a0, %a1"),
      simple("cast", {"6x5xf32"}, "6x5xi32", unaryOp("pc.cast")),
      simple("erf", {"6x5xf32"}, "6x5xf32", unaryOp("pc.erf")),
      simple("compare", {"6x5xf32", "5xf32"}, "6x5xf32",
             "pc.compare %a0, %a1 {predicate = #pc.comparison<gt>}"),
      simple("one_hot", {"6x2xi64"}, "6x2x7xf32", unaryOp("pc.one_hot")),
      simple("embedding_grad", {"6xi64", "6x4xf32"}, "9x4xf32",
             "pc.embedding_grad %a0, %a1"),
  };
}

class SignatureSweepTest : public pc::test::PcContextTest {
protected:
  /// The IR of `c` on `mesh`, with the given layouts ("" for none).
  std::string module(const OpCase &c, const Shape &mesh,
                     const std::vector<std::string> &layouts,
                     const std::string &resultLayout) {
    std::string axes;
    for (size_t a = 0; a < mesh.size(); ++a)
      axes += (a ? ", " : "") + std::string("\"a") + std::to_string(a) +
              "\"=" + std::to_string(mesh[a]);
    std::string text = "pc.mesh @m <[" + axes + "]>\nfunc.func @f(";
    std::vector<std::string> types;
    for (size_t i = 0; i < c.operands.size(); ++i) {
      types.push_back(tensorType(c.operands[i], layouts[i]));
      text += (i ? ", " : "") + std::string("%a") + std::to_string(i) + ": " +
              types.back();
    }
    std::string res = tensorType(c.result, resultLayout);
    text += ") -> " + res + " {\n  %r = " + c.body(types, res) +
            "\n  return %r : " + res + "\n}\n";
    return text;
  }

  /// The nd signatures of the op of `logical` on `mesh`, as layouts.
  std::vector<std::pair<std::vector<std::string>, std::string>>
  signatures(ModuleOp logical, const Shape &mesh) {
    auto f = logical.lookupSymbol<func::FuncOp>("f");
    auto op = cast<pc::SbpOpInterface>(&f.getBody().front().front());
    std::vector<std::pair<std::vector<std::string>, std::string>> out;
    std::vector<std::vector<SbpEntry>> operands(op->getNumOperands());
    std::vector<SbpEntry> result;
    using Shapes = llvm::SmallVector<llvm::SmallVector<int64_t, 4>>;
    std::function<void(size_t, Shapes, Shapes)> recurse = [&](size_t axis,
                                                              Shapes ins,
                                                              Shapes outs) {
      if (axis == mesh.size()) {
        std::vector<std::string> layouts;
        for (auto &nd : operands)
          layouts.push_back("#pc.sbp<@m, " + pc::formatNdSbp(nd) + ">");
        out.push_back(
            {layouts, "#pc.sbp<@m, " + pc::formatNdSbp(result) + ">"});
        return;
      }
      llvm::SmallVector<pc::SbpSignature> sigs;
      if (mesh[axis] == 1)
        pc::addReplicated(sigs, ins.size(), outs.size());
      else
        op.getSbpSignatures(ins, outs, mesh[axis], sigs);
      for (const pc::SbpSignature &sig : sigs) {
        auto shrink = [&](Shapes s, llvm::ArrayRef<SbpEntry> es) {
          for (auto [x, e] : llvm::zip(s, es))
            if (e.isSplit())
              x[e.dim] = pc::splitRange(x[e.dim], mesh[axis], 0).size;
          return s;
        };
        for (auto [nd, e] : llvm::zip(operands, sig.operands))
          nd.push_back(e);
        result.push_back(sig.results[0]);
        recurse(axis + 1, shrink(ins, sig.operands), shrink(outs, sig.results));
        for (auto &nd : operands)
          nd.pop_back();
        result.pop_back();
      }
    };
    Shapes ins, outs;
    for (Type t : op->getOperandTypes())
      ins.emplace_back(cast<RankedTensorType>(t).getShape());
    outs.emplace_back(
        cast<RankedTensorType>(op->getResult(0).getType()).getShape());
    recurse(0, ins, outs);
    return out;
  }
};

TEST_F(SignatureSweepTest, EveryOpUnderEverySignature) {
  int64_t checked = 0;
  for (const OpCase &c : cases())
    for (const Shape &mesh :
         {Shape{1}, Shape{2}, Shape{4}, Shape{2, 2}, Shape{2, 2, 2}}) {
      std::vector<std::string> none(c.operands.size());
      OwningOpRef<ModuleOp> logical =
          parseSourceString<ModuleOp>(module(c, mesh, none, ""), &context);
      ASSERT_TRUE(logical) << c.name;
      absl::StatusOr<std::vector<Array>> inputs =
          pc::reference::randomInputs(*logical, "f", 5);
      ASSERT_TRUE(inputs.ok());
      std::vector<HostTensor> host;
      auto f = logical->lookupSymbol<func::FuncOp>("f");
      for (auto [arg, a] : llvm::zip(f.getArguments(), *inputs)) {
        bool isFloat = isa<FloatType>(
            cast<RankedTensorType>(arg.getType()).getElementType());
        HostTensor t =
            HostTensor::zeros(a.shape, isFloat ? CommType::F32 : CommType::I64);
        for (int64_t i = 0; i < a.size(); ++i) {
          if (isFloat)
            a.data[i] = t.as<float>()[i] = static_cast<float>(a.data[i]);
          else
            t.as<int64_t>()[i] = static_cast<int64_t>(a.data[i]);
        }
        host.push_back(std::move(t));
      }
      absl::StatusOr<std::vector<Array>> expected =
          pc::reference::runLogical(*logical, "f", *inputs, 0);
      ASSERT_TRUE(expected.ok()) << expected.status();

      for (auto &[layouts, resultLayout] : signatures(*logical, mesh)) {
        std::string text = module(c, mesh, layouts, resultLayout);
        SCOPED_TRACE(c.name + " on " + std::to_string(mesh.size()) +
                     "-D mesh:\n" + text);
        OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(text, &context);
        ASSERT_TRUE(m);
        PassManager pm = PassManager::on<ModuleOp>(&context);
        ASSERT_TRUE(succeeded(parsePassPipeline("pc-distribute", pm)));
        ASSERT_TRUE(succeeded(pm.run(*m)));
        absl::StatusOr<pc::runtime::CpuRun> run =
            pc::runtime::runOnCpu(*m, "f", host, 0);
        ASSERT_TRUE(run.ok()) << run.status();
        const HostTensor &got = run->results[0];
        const Array &want = (*expected)[0];
        ASSERT_EQ(got.shape, want.shape);
        for (int64_t i = 0; i < want.size(); ++i) {
          double g = got.type == CommType::F32 ? got.as<float>()[i]
                                               : double(got.as<int32_t>()[i]);
          if (std::isinf(want.data[i])) {
            ASSERT_EQ(g, want.data[i]) << "element " << i;
            continue;
          }
          ASSERT_NEAR(g, want.data[i], 1e-4 * (1 + std::abs(want.data[i])))
              << "element " << i;
        }
        ++checked;
      }
    }
  // Every op on every mesh, under each of its signatures.
  EXPECT_GT(checked, 1000);
  std::printf("checked %lld (op, mesh, signature) cases\n",
              static_cast<long long>(checked));
}

} // namespace

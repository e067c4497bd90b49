//===- ExecutionTest.cpp - Distributed programs equal the logical graph ---===//
//
// Runs each model as a logical graph on one simulated device, then compiles
// it with --pc-distribute and runs the per-device programs on their
// simulated devices with real data movement, and checks that the assembled
// results are the logical ones. Both runs use the reference interpreter in
// double precision, so the differences are reassociations of sums (split
// contractions, partial sums, around 1e-15) and the f32 constants that
// partitioning introduces (a mean over a split dim multiplies by 1/N rounded
// to f32, about 3e-8 relative): the tolerance is 1e-6 relative. A wrong
// program is off by far more.
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

#include <fstream>
#include <sstream>

using namespace mlir;
using pc::reference::Array;

namespace {

class ExecutionTest : public pc::test::PcContextTest {
protected:
  OwningOpRef<ModuleOp> parse(const std::string &text) {
    return parseSourceString<ModuleOp>(text, &context);
  }

  std::string readFile(const std::string &path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  /// Runs `graph` logically and distributed and compares the results.
  void expectEquivalent(const std::string &text, StringRef graph,
                        int64_t *collectives = nullptr) {
    absl::StatusOr<pc::reference::CheckResult> r =
        pc::reference::checkCompiled(context, text, graph, "pc-distribute", 42);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_LE(r->maxRelativeError, 1e-6);
    if (collectives) {
      *collectives = 0;
      for (auto &[kind, n] : r->traffic.collectives)
        *collectives += n;
    }
  }
};

TEST_F(ExecutionTest, ExampleMlpOnTwoByTwo) {
  int64_t collectives = 0;
  expectEquivalent(readFile(PC_SOURCE_DIR "/examples/mlp_2x2.mlir"), "mlp",
                   &collectives);
  EXPECT_GT(collectives, 0);
}

TEST_F(ExecutionTest, GptBlockDataAndTensorParallel) {
  int64_t collectives = 0;
  expectEquivalent(readFile(PC_SOURCE_DIR "/examples/gpt_block_2x2.mlir"),
                   "block", &collectives);
  // One all-reduce per attention and per MLP block, on each of 4 ranks.
  EXPECT_EQ(collectives, 8);
}

TEST_F(ExecutionTest, TwoLayerGptWithLoss) {
  // Embedding, positions, two blocks, final norm, head and loss, with only
  // the ids, labels and weight matrices annotated.
  int64_t collectives = 0;
  expectEquivalent(readFile(PC_SOURCE_DIR "/examples/gpt_tiny_2x2.mlir"), "gpt",
                   &collectives);
  EXPECT_GT(collectives, 0);
}

TEST_F(ExecutionTest, UnevenSplitsAndEveryTransition) {
  // 10 rows over 4 devices, and boxings between all kinds of layouts.
  expectEquivalent(R"mlir(
    pc.mesh @m <["x"=4]>
    pc.mesh @q <["a"=2, "b"=2]>
    func.func @f(%x: tensor<10x6xf32, #pc.sbp<@m, [S(0)]>>,
                 %y: tensor<7x5xf32, #pc.sbp<@q, [S(0), S(1)]>>)
        -> (tensor<10x6xf32>, tensor<7x5xf32>, tensor<7x5xf32>, tensor<6xf32>) {
      %e = pc.exp %x : (tensor<10x6xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<10x6xf32>
      %b = pc.to_sbp %e : (tensor<10x6xf32>) -> tensor<10x6xf32, #pc.sbp<@m, [S(1)]>>
      %t = pc.tanh %b : (tensor<10x6xf32, #pc.sbp<@m, [S(1)]>>) -> tensor<10x6xf32>
      %s = pc.to_sbp %y : (tensor<7x5xf32, #pc.sbp<@q, [S(0), S(1)]>>) -> tensor<7x5xf32, #pc.sbp<@q, [S(1), S(0)]>>
      %n = pc.neg %s : (tensor<7x5xf32, #pc.sbp<@q, [S(1), S(0)]>>) -> tensor<7x5xf32>
      %g = pc.to_sbp %y : (tensor<7x5xf32, #pc.sbp<@q, [S(0), S(1)]>>) -> tensor<7x5xf32, #pc.sbp<@q, [B, B]>>
      %r = pc.relu %g : (tensor<7x5xf32, #pc.sbp<@q, [B, B]>>) -> tensor<7x5xf32>
      %m = pc.reduce_mean %t {axes = array<i64: 0>} : (tensor<10x6xf32>) -> tensor<6xf32>
      return %t, %n, %r, %m : tensor<10x6xf32>, tensor<7x5xf32>, tensor<7x5xf32>, tensor<6xf32>
    }
  )mlir",
                   "f");
}

TEST_F(ExecutionTest, VocabParallelEmbeddingAndLoss) {
  expectEquivalent(R"mlir(
    pc.mesh @m <["dp"=2, "tp"=2]>
    pc.param @wte : tensor<50x16xf32, #pc.sbp<@m, [B, S(0)]>> = #pc.init<normal(std = 1.0)>
    pc.param @head : tensor<16x50xf32, #pc.sbp<@m, [B, S(1)]>> = #pc.init<normal(std = 1.0)>
    func.func @lm(%ids: tensor<6x3xi64, #pc.sbp<@m, [S(0), B]>>,
                  %labels: tensor<6x3xi64, #pc.sbp<@m, [S(0), B]>>) -> tensor<f32> {
      %wte = pc.get_param @wte : tensor<50x16xf32, #pc.sbp<@m, [B, S(0)]>>
      %w = pc.get_param @head : tensor<16x50xf32, #pc.sbp<@m, [B, S(1)]>>
      %h = pc.embedding %ids, %wte : (tensor<6x3xi64, #pc.sbp<@m, [S(0), B]>>, tensor<50x16xf32, #pc.sbp<@m, [B, S(0)]>>) -> tensor<6x3x16xf32>
      %l = pc.matmul %h, %w : (tensor<6x3x16xf32>, tensor<16x50xf32, #pc.sbp<@m, [B, S(1)]>>) -> tensor<6x3x50xf32>
      %c = pc.cross_entropy %l, %labels : (tensor<6x3x50xf32>, tensor<6x3xi64, #pc.sbp<@m, [S(0), B]>>) -> tensor<6x3xf32>
      %loss = pc.reduce_mean %c {axes = array<i64: 0, 1>} : (tensor<6x3xf32>) -> tensor<f32>
      return %loss : tensor<f32>
    }
  )mlir",
                   "lm");
}

TEST_F(ExecutionTest, ThreeAxisMeshWithPartials) {
  expectEquivalent(R"mlir(
    pc.mesh @m <["a"=2, "b"=2, "c"=2]>
    func.func @f(%x: tensor<8x6xf32, #pc.sbp<@m, [S(0), B, S(1)]>>,
                 %w: tensor<6x4xf32, #pc.sbp<@m, [B, S(1), S(0)]>>) -> tensor<8x4xf32> {
      %y = pc.matmul %x, %w : (tensor<8x6xf32, #pc.sbp<@m, [S(0), B, S(1)]>>, tensor<6x4xf32, #pc.sbp<@m, [B, S(1), S(0)]>>) -> tensor<8x4xf32>
      %z = pc.softmax %y {axis = 1 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32>
      return %z : tensor<8x4xf32>
    }
  )mlir",
                   "f");
}

TEST_F(ExecutionTest, PipelineStagesOnDifferentRanks) {
  // Two stages on disjoint ranks with different layouts: stage 0 computes
  // with the batch split, stage 1 with the hidden dim split; the transfer
  // sends each destination only its boxes.
  int64_t collectives = 0;
  expectEquivalent(R"mlir(
    pc.mesh @s0 <["dp"=2]>
    pc.mesh @s1 <["a"=2, "b"=2]> ranks [2, 3, 4, 5]
    pc.param @w0 : tensor<6x8xf32, #pc.sbp<@s0, [B]>> = #pc.init<normal(std = 1.0)>
    pc.param @w1 : tensor<8x4xf32, #pc.sbp<@s1, [B, S(0)]>> = #pc.init<normal(std = 1.0)>
    func.func @f(%x: tensor<10x6xf32, #pc.sbp<@s0, [S(0)]>>) -> tensor<10x4xf32> {
      %w0 = pc.get_param @w0 : tensor<6x8xf32, #pc.sbp<@s0, [B]>>
      %w1 = pc.get_param @w1 : tensor<8x4xf32, #pc.sbp<@s1, [B, S(0)]>>
      %h = pc.matmul %x, %w0 : (tensor<10x6xf32, #pc.sbp<@s0, [S(0)]>>, tensor<6x8xf32, #pc.sbp<@s0, [B]>>) -> tensor<10x8xf32>
      %a = pc.tanh %h : (tensor<10x8xf32>) -> tensor<10x8xf32>
      %b = pc.to_sbp %a : (tensor<10x8xf32>) -> tensor<10x8xf32, #pc.sbp<@s1, [S(0), S(1)]>>
      %y = pc.matmul %b, %w1 : (tensor<10x8xf32, #pc.sbp<@s1, [S(0), S(1)]>>, tensor<8x4xf32, #pc.sbp<@s1, [B, S(0)]>>) -> tensor<10x4xf32>
      return %y : tensor<10x4xf32>
    }
  )mlir",
                   "f", &collectives);
  EXPECT_GT(collectives, 0);
}

TEST_F(ExecutionTest, FailuresAreStatusesNotHangs) {
  // An id out of range fails on one device; the others must not wait for
  // it forever.
  OwningOpRef<ModuleOp> m = parse(R"mlir(
    pc.mesh @m <["x"=2]>
    func.func @f(%ids: tensor<4xi64, #pc.sbp<@m, [S(0)]>>, %t: tensor<3x2xf32, #pc.sbp<@m, [B]>>) -> tensor<4x2xf32, #pc.sbp<@m, [B]>> {
      %e = pc.embedding %ids, %t : (tensor<4xi64, #pc.sbp<@m, [S(0)]>>, tensor<3x2xf32, #pc.sbp<@m, [B]>>) -> tensor<4x2xf32, #pc.sbp<@m, [S(0)]>>
      %g = pc.all_gather %e {mesh = @m, axes = array<i64: 0>, dim = 0 : i64} : (tensor<4x2xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<4x2xf32, #pc.sbp<@m, [B]>>
      return %g : tensor<4x2xf32, #pc.sbp<@m, [B]>>
    }
  )mlir");
  ASSERT_TRUE(m);
  PassManager pm = PassManager::on<ModuleOp>(&context);
  ASSERT_TRUE(succeeded(parsePassPipeline("pc-partition", pm)));
  ASSERT_TRUE(succeeded(pm.run(*m)));
  Array ids{{4}, {0, 1, 2, 9}}, table = Array::zeros({3, 2});
  absl::StatusOr<std::vector<Array>> r =
      pc::reference::runDistributed(*m, "f", {ids, table}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("id 9"), std::string::npos) << r.status();
}

} // namespace

//===- CpuExecutorTest.cpp - Per-device programs on CPU virtual devices ---===//
//
// Models compiled with --pc-distribute run on CPU virtual devices with the
// actor runtime, the CPU kernels and the ring collectives; their results
// must equal the logical graph run by the reference interpreter (double
// precision) within f32 rounding (1e-4 relative; bf16 and f16 models within
// 3e-2 and 5e-3), and the bytes each rank received must equal what the
// reference interpreter counts for the same programs. Running several
// overlapped iterations, with one register per actor or several, gives
// bit-identical results and exactly that many times the traffic.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/CpuExecutor.h"
#include "passes/InitAll.h"
#include "runtime/exec/Checkpoint.h"
#include "runtime/exec/Input.h"
#include "runtime/exec/KernelRegistry.h"
#include "runtime/exec/Npy.h"
#include "runtime/exec/OpProfiler.h"
#include "runtime/exec/OrderCheck.h"
#include "runtime/exec/Safetensors.h"
#include "runtime/reference/Interpreter.h"

#include "dialect/PcOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "test/unit/PcContextTest.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/resource.h>

using namespace mlir;
using pc::reference::Array;
using pc::runtime::CommType;
using pc::runtime::HostTensor;

namespace {

/// `text` parsed and distributed (pc-distribute); null where either fails.
OwningOpRef<ModuleOp> distributed(MLIRContext &context, StringRef text) {
  OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(text, &context);
  PassManager pm = PassManager::on<ModuleOp>(&context);
  if (!m || failed(parsePassPipeline("pc-distribute", pm)) ||
      failed(pm.run(*m)))
    return nullptr;
  return m;
}

class CpuExecutorTest : public pc::test::PcContextTest {
protected:
  std::string readFile(const std::string &path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  /// examples/gpt_tiny_2x2.mlir as an Adam training step, distributed, and
  /// random inputs for it (seed 3; the rate is the last).
  void gptTrainingStep(OwningOpRef<ModuleOp> &m,
                       std::vector<HostTensor> &hostInputs) {
    m = parseSourceString<ModuleOp>(
        readFile(PC_SOURCE_DIR "/examples/gpt_tiny_2x2.mlir"), &context);
    ASSERT_TRUE(m);
    PassManager train = PassManager::on<ModuleOp>(&context);
    ASSERT_TRUE(succeeded(parsePassPipeline(
        "pc-autodiff{graph=gpt},pc-optimizer{kind=adam}", train)));
    ASSERT_TRUE(succeeded(train.run(*m)));
    absl::StatusOr<std::vector<Array>> inputs =
        pc::reference::randomInputs(*m, "gpt", 3);
    ASSERT_TRUE(inputs.ok()) << inputs.status();
    auto f = m->lookupSymbol<func::FuncOp>("gpt");
    for (auto [arg, a] : llvm::zip(f.getArguments(), *inputs)) {
      absl::StatusOr<CommType> type = pc::runtime::commTypeOf(arg.getType());
      ASSERT_TRUE(type.ok()) << type.status();
      HostTensor t = HostTensor::zeros(a.shape, *type);
      for (int64_t i = 0; i < a.size(); ++i)
        t.set(i, a.data[i]);
      hostInputs.push_back(std::move(t));
    }
    PassManager distribute = PassManager::on<ModuleOp>(&context);
    ASSERT_TRUE(succeeded(parsePassPipeline("pc-distribute", distribute)));
    ASSERT_TRUE(succeeded(distribute.run(*m)));
  }

  void expectRuns(const std::string &text, StringRef graph,
                  double tolerance = 1e-4) {
    OwningOpRef<ModuleOp> logical = parseSourceString<ModuleOp>(text, &context);
    ASSERT_TRUE(logical);
    absl::StatusOr<std::vector<Array>> inputs =
        pc::reference::randomInputs(*logical, graph, 3);
    ASSERT_TRUE(inputs.ok()) << inputs.status();
    // The reference sees the inputs as the CPU run will: rounded to f32.
    auto f = logical->lookupSymbol<func::FuncOp>(graph);
    std::vector<HostTensor> hostInputs;
    for (auto [arg, a] : llvm::zip(f.getArguments(), *inputs)) {
      absl::StatusOr<CommType> type = pc::runtime::commTypeOf(arg.getType());
      ASSERT_TRUE(type.ok()) << type.status();
      HostTensor t = HostTensor::zeros(a.shape, *type);
      for (int64_t i = 0; i < a.size(); ++i) {
        t.set(i, a.data[i]);
        a.data[i] = t.get(i);
      }
      hostInputs.push_back(std::move(t));
    }
    absl::StatusOr<std::vector<Array>> expected =
        pc::reference::runLogical(*logical, graph, *inputs, 9);
    ASSERT_TRUE(expected.ok()) << expected.status();

    OwningOpRef<ModuleOp> compiled =
        parseSourceString<ModuleOp>(text, &context);
    PassManager pm = PassManager::on<ModuleOp>(&context);
    ASSERT_TRUE(succeeded(parsePassPipeline("pc-distribute", pm)));
    ASSERT_TRUE(succeeded(pm.run(*compiled)));
    absl::StatusOr<pc::runtime::CpuRun> run =
        pc::runtime::runOnCpu(*compiled, graph, hostInputs, 9);
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->results.size(), expected->size());
    for (size_t r = 0; r < expected->size(); ++r) {
      const HostTensor &got = run->results[r];
      const Array &want = (*expected)[r];
      ASSERT_EQ(got.shape, want.shape);
      for (int64_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got.get(i), want.data[i],
                    tolerance * (1 + std::abs(want.data[i])))
            << "result " << r << " element " << i;
    }
    // Overlapped iterations, under one register per actor or three, are
    // the same computation: bit-identical results, k times the traffic.
    for (auto [iterations, registers] :
         {std::pair<int64_t, int32_t>{3, 1}, {4, 3}}) {
      pc::runtime::CpuSession session(*compiled, 9);
      absl::StatusOr<pc::runtime::CpuRun> again =
          session.run(graph, hostInputs, {iterations, registers, true});
      ASSERT_TRUE(again.ok()) << again.status();
      ASSERT_EQ(again->results.size(), run->results.size());
      for (size_t r = 0; r < run->results.size(); ++r)
        EXPECT_EQ(again->results[r].bytes, run->results[r].bytes)
            << "result " << r << " after " << iterations << " iterations";
      for (auto &[rank, stats] : run->comm) {
        EXPECT_EQ(again->comm[rank].bytesReceived,
                  iterations * stats.bytesReceived);
        EXPECT_EQ(again->comm[rank].bytesSent, iterations * stats.bytesSent);
      }
      EXPECT_EQ(again->iterationDoneUs.size(), size_t(iterations));
    }
    // The same programs on the reference interpreter move the same bytes.
    pc::reference::Traffic traffic;
    ASSERT_TRUE(
        pc::reference::runDistributed(*compiled, graph, *inputs, 9, &traffic)
            .ok());
    for (auto &[rank, stats] : run->comm)
      EXPECT_EQ(stats.bytesReceived, traffic.bytesReceived[rank])
          << "rank " << rank;
  }
};

TEST_F(CpuExecutorTest, Mlp) {
  expectRuns(readFile(PC_SOURCE_DIR "/examples/mlp_2x2.mlir"), "mlp");
}

TEST_F(CpuExecutorTest, GptBlock) {
  expectRuns(readFile(PC_SOURCE_DIR "/examples/gpt_block_2x2.mlir"), "block");
}

TEST_F(CpuExecutorTest, TwoLayerGptWithVocabParallelParts) {
  expectRuns(readFile(PC_SOURCE_DIR "/examples/gpt_tiny_2x2.mlir"), "gpt");
}

// The same models in 16-bit floats: kernels widen to f32 and round once per
// op, and the collectives reduce in f32 per step, so the error is a few
// roundings of the 16-bit type per op.
std::string inType(std::string text, const std::string &type) {
  for (size_t at; (at = text.find("f32")) != std::string::npos;)
    text.replace(at, 3, type);
  return text;
}

TEST_F(CpuExecutorTest, MlpAndGptBlockInBf16AndF16) {
  std::string mlp = readFile(PC_SOURCE_DIR "/examples/mlp_2x2.mlir");
  std::string block = readFile(PC_SOURCE_DIR "/examples/gpt_block_2x2.mlir");
  expectRuns(inType(mlp, "bf16"), "mlp", 3e-2);
  expectRuns(inType(mlp, "f16"), "mlp", 5e-3);
  expectRuns(inType(block, "bf16"), "block", 3e-2);
  expectRuns(inType(block, "f16"), "block", 5e-3);
}

TEST_F(CpuExecutorTest, IntegerOpsAreExact) {
  // Sums and maxima of i64 over split dims reduce across devices in i64;
  // the values stay below 2^40, where the double reference is exact.
  expectRuns(R"mlir(
    pc.mesh @m <["x"=2, "y"=2]>
    func.func @ints(%a: tensor<6x4xi64, #pc.sbp<@m, [S(0), S(1)]>>,
                    %b: tensor<6x4xi32, #pc.sbp<@m, [B, S(0)]>>)
        -> (tensor<4xi64>, tensor<6xi64>, tensor<6x4xi32>, tensor<6x4xi64>) {
      %s = pc.reduce_sum %a {axes = array<i64: 0>} : (tensor<6x4xi64, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<4xi64>
      %m = pc.reduce_max %a {axes = array<i64: 1>} : (tensor<6x4xi64, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<6xi64>
      %n = pc.neg %b : (tensor<6x4xi32, #pc.sbp<@m, [B, S(0)]>>) -> tensor<6x4xi32>
      %r = pc.relu %n : (tensor<6x4xi32>) -> tensor<6x4xi32>
      %p = pc.add %b, %b : (tensor<6x4xi32, #pc.sbp<@m, [B, S(0)]>>, tensor<6x4xi32, #pc.sbp<@m, [B, S(0)]>>) -> tensor<6x4xi32>
      %q = pc.sub %p, %r : (tensor<6x4xi32>, tensor<6x4xi32>) -> tensor<6x4xi32>
      %sq = pc.mul %a, %a : (tensor<6x4xi64, #pc.sbp<@m, [S(0), S(1)]>>, tensor<6x4xi64, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<6x4xi64>
      %d = pc.div %sq, %a : (tensor<6x4xi64>, tensor<6x4xi64, #pc.sbp<@m, [S(0), S(1)]>>) -> tensor<6x4xi64>
      return %s, %m, %q, %d : tensor<4xi64>, tensor<6xi64>, tensor<6x4xi32>, tensor<6x4xi64>
    }
  )mlir",
             "ints", 0);
}

TEST_F(CpuExecutorTest, UnevenAndThreeAxes) {
  expectRuns(R"mlir(
    pc.mesh @m <["x"=4]>
    pc.mesh @q <["a"=2, "b"=2, "c"=2]>
    func.func @f(%x: tensor<10x6xf32, #pc.sbp<@m, [S(0)]>>,
                 %y: tensor<8x6xf32, #pc.sbp<@q, [S(0), B, S(1)]>>,
                 %w: tensor<6x4xf32, #pc.sbp<@q, [B, S(1), S(0)]>>)
        -> (tensor<10x6xf32>, tensor<8x4xf32>) {
      %e = pc.exp %x : (tensor<10x6xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<10x6xf32>
      %b = pc.to_sbp %e : (tensor<10x6xf32>) -> tensor<10x6xf32, #pc.sbp<@m, [S(1)]>>
      %t = pc.tanh %b : (tensor<10x6xf32, #pc.sbp<@m, [S(1)]>>) -> tensor<10x6xf32>
      %z = pc.matmul %y, %w : (tensor<8x6xf32, #pc.sbp<@q, [S(0), B, S(1)]>>, tensor<6x4xf32, #pc.sbp<@q, [B, S(1), S(0)]>>) -> tensor<8x4xf32>
      %s = pc.softmax %z {axis = 1 : i64} : (tensor<8x4xf32>) -> tensor<8x4xf32>
      return %t, %s : tensor<10x6xf32>, tensor<8x4xf32>
    }
  )mlir",
             "f");
}

TEST_F(CpuExecutorTest, PipelineStagesOnDifferentRanks) {
  expectRuns(R"mlir(
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
             "f");
}

// The report's peak memory comes from each device's allocator; the executor
// keeps its own count of the bytes of the tensors it made and dropped. They
// are equal, per rank and per step, on a GPT training step (parameters,
// Adam state, activations, gradients, collectives' results): nothing takes
// device memory behind the executor's back, and no buffer outlives its
// tensor. The parameters and optimizer state that a rank holds after a step
// are a lower bound of its peak.
TEST_F(CpuExecutorTest, DevicePeakEqualsTheExecutorsCountOnGptTraining) {
  OwningOpRef<ModuleOp> m;
  std::vector<HostTensor> hostInputs;
  ASSERT_NO_FATAL_FAILURE(gptTrainingStep(m, hostInputs));

  pc::runtime::CpuSession session(*m, 9);
  for (int64_t step = 0; step < 3; ++step) {
    pc::runtime::CpuRunOptions options;
    options.step = step;
    absl::StatusOr<pc::runtime::CpuRun> run =
        session.run("gpt", hostInputs, options);
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ(run->peakBytes.size(), 4u);
    auto pieces = session.pieces();
    ASSERT_TRUE(pieces.ok()) << pieces.status();
    for (auto [rank, peak] : run->peakBytes) {
      EXPECT_EQ(peak, run->tensorPeakBytes[rank])
          << "rank " << rank << ", step " << step;
      int64_t held = 0;
      for (auto &[key, piece] : *pieces)
        if (key.first == rank)
          held += piece.byteSize();
      EXPECT_GT(held, 0);
      EXPECT_GT(peak, held) << "rank " << rank << ", step " << step;
    }
  }
}

// Three training steps as iterations of one run (loop-carried parameters,
// a rate per iteration, every iteration's results) equal three runs of one
// step, bit for bit, on 2x2 with Adam: results and parameters. Under TSan
// this is the test of the overlapped steps' synchronization.
TEST_F(CpuExecutorTest, TrainingStepsAsIterationsEqualStepsAsRuns) {
  OwningOpRef<ModuleOp> m;
  std::vector<HostTensor> hostInputs;
  ASSERT_NO_FATAL_FAILURE(gptTrainingStep(m, hostInputs));
  int64_t lrIndex = static_cast<int64_t>(hostInputs.size()) - 1;
  auto rate = [](int64_t step) {
    HostTensor lr = HostTensor::zeros({}, CommType::F32);
    lr.set(0, 0.01 * (step + 1));
    return lr;
  };

  pc::runtime::CpuSession one(*m, 9), many(*m, 9);
  std::vector<std::vector<HostTensor>> expected;
  for (int64_t step = 0; step < 3; ++step) {
    hostInputs[lrIndex] = rate(step);
    pc::runtime::CpuRunOptions options;
    options.step = step;
    absl::StatusOr<pc::runtime::CpuRun> run =
        one.run("gpt", hostInputs, options);
    ASSERT_TRUE(run.ok()) << run.status();
    expected.push_back(run->results);
  }
  pc::runtime::CpuRunOptions options;
  options.iterations = 3;
  options.everyIteration = true;
  for (int64_t step = 0; step < 3; ++step)
    options.varying[lrIndex].push_back(pc::runtime::Input::own(rate(step)));
  absl::StatusOr<pc::runtime::CpuRun> run =
      many.run("gpt", hostInputs, options);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->iterationResults.size(), 3u);
  for (int64_t step = 0; step < 3; ++step) {
    ASSERT_EQ(run->iterationResults[step].size(), expected[step].size());
    for (size_t r = 0; r < expected[step].size(); ++r)
      EXPECT_EQ(run->iterationResults[step][r].bytes, expected[step][r].bytes)
          << "step " << step << ", result " << r;
  }
  absl::StatusOr<std::map<std::string, HostTensor>> a = one.snapshot();
  absl::StatusOr<std::map<std::string, HostTensor>> b = many.snapshot();
  ASSERT_TRUE(a.ok() && b.ok());
  for (auto &[name, t] : *a)
    EXPECT_EQ(t.bytes, b->at(name).bytes) << name;

  // In place (the session lets each old piece go once its reads are done,
  // CpuSession::setInPlaceUpdates), steps as one run and as runs of one
  // equal the transaction's, results and parameters: under TSan, the test
  // of the count of reads that the ranks' streams report.
  pc::runtime::CpuSession inPlaceMany(*m, 9), inPlaceOne(*m, 9);
  inPlaceMany.setInPlaceUpdates(true);
  inPlaceOne.setInPlaceUpdates(true);
  absl::StatusOr<pc::runtime::CpuRun> inPlaceRun =
      inPlaceMany.run("gpt", hostInputs, options);
  ASSERT_TRUE(inPlaceRun.ok()) << inPlaceRun.status();
  for (int64_t step = 0; step < 3; ++step) {
    hostInputs[lrIndex] = rate(step);
    pc::runtime::CpuRunOptions single;
    single.step = step;
    absl::StatusOr<pc::runtime::CpuRun> r =
        inPlaceOne.run("gpt", hostInputs, single);
    ASSERT_TRUE(r.ok()) << r.status();
    for (size_t k = 0; k < expected[step].size(); ++k) {
      EXPECT_EQ(inPlaceRun->iterationResults[step][k].bytes,
                expected[step][k].bytes)
          << "step " << step << ", result " << k;
      EXPECT_EQ(r->results[k].bytes, expected[step][k].bytes)
          << "step " << step << ", result " << k;
    }
  }
  for (pc::runtime::CpuSession *s : {&inPlaceMany, &inPlaceOne}) {
    absl::StatusOr<std::map<std::string, HostTensor>> c = s->snapshot();
    ASSERT_TRUE(c.ok()) << c.status();
    for (auto &[name, t] : *a)
      EXPECT_EQ(t.bytes, c->at(name).bytes) << name;
  }

  // A varying input needs one value per iteration.
  options.varying[lrIndex].pop_back();
  EXPECT_EQ(many.run("gpt", hostInputs, options).status().message(),
            absl::StrCat("input #", lrIndex,
                         " varies over 2 values; the run has 3 iterations"));
}

} // namespace

namespace {

// A run's input from a .npy file is mapped, and a piece reads only its own
// rows: after mapping, the file is cut to its first half, so a read of the
// rest would fault (SIGBUS) and end the test.
TEST(InputTest, APieceOfAMappedNpyReadsOnlyItsPages) {
  std::string path = ::testing::TempDir() + "/pc_input_test.npy";
  HostTensor whole = HostTensor::zeros({4096, 256}, CommType::F32);
  for (int64_t i = 0; i < whole.numel(); ++i)
    whole.as<float>()[i] = static_cast<float>(i % 100003);
  ASSERT_TRUE(pc::runtime::writeNpy(path, whole).ok());
  absl::StatusOr<std::shared_ptr<const pc::runtime::MappedNpy>> npy =
      pc::runtime::MappedNpy::open(path);
  ASSERT_TRUE(npy.ok()) << npy.status();
  std::filesystem::resize_file(path, 2048 * 256 * 4);
  pc::runtime::Input input = pc::runtime::Input::file(*npy, CommType::F32);
  std::vector<int64_t> offsets = {1024, 0}, sizes = {512, 256};
  HostTensor piece = *input.box(offsets, sizes);
  for (int64_t i = 0; i < piece.numel(); i += 97)
    ASSERT_EQ(piece.as<float>()[i], whole.as<float>()[1024 * 256 + i]);
  // Read as another type, converted on the way.
  HostTensor wide =
      *pc::runtime::Input::file(*npy, CommType::F64).box(offsets, sizes);
  EXPECT_EQ(wide.type, CommType::F64);
  EXPECT_EQ(wide.get(12345), piece.get(12345));
  std::remove(path.c_str());
}

} // namespace

namespace {

// Loading a sharded checkpoint maps its files and reads a piece only from
// the shards it overlaps. After loading, the other shards' files are cut
// short: a read of their data would fault (SIGBUS) and end the test, so
// reading shard 0's rows proves nothing else is read. A box across two
// shards reads both, correctly.
TEST(InputTest, ACheckpointPieceReadsOnlyItsShards) {
  std::string dir = ::testing::TempDir() + "/pc_sharded_input_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string index = R"({"format": "pc-sharded", "version": 1,
    "generation": 1, "step": 7, "tensors": {"w": {"shape": [2048, 256],
    "pieces": [)";
  for (int s = 0; s < 4; ++s) {
    HostTensor piece = HostTensor::zeros({512, 256}, CommType::F32);
    for (int64_t i = 0; i < piece.numel(); ++i)
      piece.as<float>()[i] = static_cast<float>(s * 1000000 + i);
    std::string file = "s" + std::to_string(s) + ".safetensors";
    ASSERT_TRUE(
        pc::runtime::writeSafetensors(dir + "/" + file, {{"w", piece}}).ok());
    index += (s ? ", " : "") + std::string("{\"file\": \"") + file +
             "\", \"offsets\": [" + std::to_string(512 * s) + ", 0]}";
  }
  index += "]}}}";
  std::ofstream(dir + "/index.json") << index;

  absl::StatusOr<pc::runtime::LoadedCheckpoint> ck =
      pc::runtime::readCheckpoint(dir);
  ASSERT_TRUE(ck.ok()) << ck.status();
  EXPECT_EQ(ck->step, 7);
  const pc::runtime::Input &w = ck->tensors.at("w");
  ASSERT_EQ(w.parts().size(), 4u);
  for (int s = 2; s < 4; ++s)
    std::filesystem::resize_file(
        dir + "/s" + std::to_string(s) + ".safetensors", 64);
  std::vector<int64_t> offsets = {0, 0}, sizes = {512, 256};
  HostTensor rows = *w.box(offsets, sizes);
  EXPECT_EQ(rows.get(5), 5);
  EXPECT_EQ(rows.get(512 * 256 - 1), 512 * 256 - 1);
  // Rows 500..523 straddle shards 0 and 1.
  offsets = {500, 0};
  sizes = {24, 256};
  HostTensor straddle = *w.box(offsets, sizes);
  EXPECT_EQ(straddle.get(0), 500 * 256);
  EXPECT_EQ(straddle.get(12 * 256), 1000000);
  std::filesystem::remove_all(dir);
}

} // namespace

namespace {

// Each rank's order of communication ops is data (CpuRunOptions::order).
// Different valid orders give bit-identical results; orders that do not
// match across the members of a group, or whose waits form a cycle across
// ranks, are errors before anything runs, never a hang.
class OrderTest : public pc::test::PcContextTest {};

TEST_F(OrderTest, RanksOrdersAreCheckedTogether) {
  // Per rank: op 0 and op 1 all-reduce over axis x (groups {0,2}, {1,3}),
  // op 2 over axis y (groups {0,1}, {2,3}).
  OwningOpRef<ModuleOp> m = distributed(context, R"mlir(
    pc.mesh @m <["x"=2, "y"=2]>
    func.func @f(%a: tensor<4xf32, #pc.sbp<@m, [P, B]>>,
                 %c: tensor<4xf32, #pc.sbp<@m, [P, B]>>,
                 %b: tensor<4xf32, #pc.sbp<@m, [B, P]>>)
        -> (tensor<4xf32, #pc.sbp<@m, [B, B]>>, tensor<4xf32, #pc.sbp<@m, [B, B]>>,
            tensor<4xf32, #pc.sbp<@m, [B, B]>>) {
      %x = pc.to_sbp %a : (tensor<4xf32, #pc.sbp<@m, [P, B]>>) -> tensor<4xf32, #pc.sbp<@m, [B, B]>>
      %z = pc.to_sbp %c : (tensor<4xf32, #pc.sbp<@m, [P, B]>>) -> tensor<4xf32, #pc.sbp<@m, [B, B]>>
      %y = pc.to_sbp %b : (tensor<4xf32, #pc.sbp<@m, [B, P]>>) -> tensor<4xf32, #pc.sbp<@m, [B, B]>>
      return %x, %z, %y : tensor<4xf32, #pc.sbp<@m, [B, B]>>, tensor<4xf32, #pc.sbp<@m, [B, B]>>, tensor<4xf32, #pc.sbp<@m, [B, B]>>
    }
  )mlir");
  ASSERT_TRUE(m);
  std::vector<HostTensor> inputs;
  for (int k = 0; k < 3; ++k) {
    HostTensor t = HostTensor::zeros({4}, CommType::F32);
    for (int i = 0; i < 4; ++i)
      t.as<float>()[i] = 0.1f * (k + 1) * (i + 1);
    inputs.push_back(std::move(t));
  }
  using Order = std::vector<std::pair<int64_t, int64_t>>;
  auto runWith = [&](std::map<int64_t, Order> order, int64_t iterations) {
    pc::runtime::CpuSession session(*m, 1);
    pc::runtime::CpuRunOptions options;
    options.iterations = iterations;
    options.order = std::move(order);
    return session.run("f", inputs, options);
  };
  absl::StatusOr<pc::runtime::CpuRun> plain = runWith({}, 2);
  ASSERT_TRUE(plain.ok()) << plain.status();

  // Axis y first, then axis x backwards, on every rank; and the default
  // order spelled out: both valid, the same results.
  Order yFirst = {{0, 2}, {0, 1}, {0, 0}, {1, 2}, {1, 1}, {1, 0}};
  Order spelled = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
  for (const Order &o : {yFirst, spelled}) {
    absl::StatusOr<pc::runtime::CpuRun> run =
        runWith({{0, o}, {1, o}, {2, o}, {3, o}}, 2);
    ASSERT_TRUE(run.ok()) << run.status();
    for (size_t r = 0; r < plain->results.size(); ++r)
      EXPECT_EQ(run->results[r].bytes, plain->results[r].bytes);
  }
  // Ranks 0 and 2 run their two collectives over {0, 2} in crossed orders.
  Order crossed = {{0, 1}, {0, 0}, {0, 2}};
  absl::StatusOr<pc::runtime::CpuRun> mismatch = runWith({{2, crossed}}, 1);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find(
                "the orders do not match: collective #1 over ranks [0, 2]"),
            std::string::npos)
      << mismatch.status();
  // Every group's sequence matches, but the waits form a cycle: rank 0
  // waits on x for rank 2, which waits on y for rank 3, which waits on x for
  // rank 1, which waits on y for rank 0.
  Order xy = {{0, 0}, {0, 1}, {0, 2}}, yx = {{0, 2}, {0, 0}, {0, 1}};
  absl::StatusOr<pc::runtime::CpuRun> cycle =
      runWith({{0, xy}, {1, yx}, {2, yx}, {3, xy}}, 1);
  ASSERT_FALSE(cycle.ok());
  EXPECT_NE(cycle.status().message().find("the ranks' orders would deadlock"),
            std::string::npos)
      << cycle.status();
  // An order that names a missing op, or would deadlock on its own rank.
  absl::StatusOr<pc::runtime::CpuRun> missing = runWith({{0, {{0, 7}}}}, 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("communication op #7"),
            std::string::npos)
      << missing.status();
}

// The check of the ranks' programs against each other, which runs before
// every first run of a graph: what each member of a collective would run,
// and both ends of every message.
using pc::runtime::CommEvent;
using Events = std::map<int64_t, std::vector<CommEvent>>;

CommEvent collective(std::string program, int64_t op, std::string signature,
                     std::vector<int64_t> group) {
  CommEvent e;
  e.what = "'pc.all_reduce' at " + program + "#" + std::to_string(op);
  e.program = std::move(program);
  e.op = op;
  e.signature = std::move(signature);
  e.group = std::move(group);
  return e;
}

CommEvent message(bool send, int64_t peer, std::string piece) {
  CommEvent e;
  e.what = send ? "'pc.send'" : "'pc.recv'";
  e.program = send ? "f.stage0" : "f.stage1";
  (send ? e.sends : e.recvs).push_back({peer, 7, std::move(piece)});
  return e;
}

std::string verdict(const Events &events) {
  absl::Status s = pc::runtime::checkOrders(events);
  // What is checked on process 0 arrives there as bytes.
  Events decoded;
  EXPECT_TRUE(
      pc::runtime::decodeOrders(pc::runtime::encodeOrders(events), decoded)
          .ok());
  EXPECT_EQ(pc::runtime::checkOrders(decoded).ToString(), s.ToString());
  return s.ok() ? "ok" : std::string(s.message());
}

TEST(OrderCheckTest, MembersAgreeOnWhatACollectiveRuns) {
  std::string sum = "all_reduce(sum) f32 [4] on @m axes [0]";
  // Different programs (uneven pieces, say) with one signature agree.
  EXPECT_EQ(verdict({{0, {collective("f.part0", 0, sum, {0, 1})}},
                     {1, {collective("f.part1", 3, sum, {0, 1})}}}),
            "ok");
  // A reduction, an element type or a shape of their own.
  for (std::string other : {"all_reduce(max) f32 [4] on @m axes [0]",
                            "all_reduce(sum) bf16 [4] on @m axes [0]",
                            "all_reduce(sum) f32 [5] on @m axes [0]"}) {
    std::string v = verdict({{0, {collective("f.part0", 0, sum, {0, 1})}},
                             {1, {collective("f.part1", 0, other, {0, 1})}}});
    EXPECT_NE(v.find("the ranks disagree on collective #1 over ranks [0, 1]: "
                     "rank 0's 'pc.all_reduce' at f.part0#0 (iteration 0) is " +
                     sum +
                     " but rank 1's 'pc.all_reduce' at f.part1#0 "
                     "(iteration 0) is " +
                     other),
              std::string::npos)
        << v;
  }
  // Members of one program must issue the same op, even with one
  // signature.
  std::string v = verdict({{0, {collective("f", 0, sum, {0, 1})}},
                           {1, {collective("f", 1, sum, {0, 1})}}});
  EXPECT_NE(v.find("the orders do not match: collective #1"), std::string::npos)
      << v;
  // A member that never issues it.
  v = verdict({{0, {collective("f", 0, sum, {0, 1})}}, {1, {}}});
  EXPECT_NE(v.find("which rank 1 never issues"), std::string::npos) << v;
  v = verdict({{0, {collective("f", 0, sum, {0, 1})}}});
  EXPECT_NE(v.find("rank 1 has no order"), std::string::npos) << v;
}

TEST(OrderCheckTest, EveryMessageHasBothEndsOfOnePiece) {
  EXPECT_EQ(verdict({{0, {message(true, 1, "f32 [2, 3]")}},
                     {1, {message(false, 0, "f32 [2, 3]")}}}),
            "ok");
  std::string v = verdict({{0, {message(true, 1, "f32 [2, 3]")}}, {1, {}}});
  EXPECT_NE(v.find("rank 0 sends 1 messages (tag 7) to rank 1, which "
                   "receives 0; rank 0's 'pc.send' (iteration 0) has no "
                   "matching receive"),
            std::string::npos)
      << v;
  v = verdict({{0, {}}, {1, {message(false, 0, "f32 [2, 3]")}}});
  EXPECT_NE(v.find("rank 0 sends 0 messages (tag 7) to rank 1, which "
                   "receives 1; rank 1's 'pc.recv' (iteration 0) has no "
                   "matching send"),
            std::string::npos)
      << v;
  v = verdict({{0, {message(true, 1, "f32 [2, 3]")}},
               {1, {message(false, 0, "f32 [3, 3]")}}});
  EXPECT_NE(v.find("the ranks disagree on message #1 (tag 7) from rank 0 to "
                   "rank 1: rank 0's 'pc.send' (iteration 0) sends f32 [2, 3] "
                   "but rank 1's 'pc.recv' (iteration 0) receives f32 [3, 3]"),
            std::string::npos)
      << v;
}

} // namespace

namespace {

// Every write is checked: when the disk takes only part of a file (here a
// file size limit, which fails writes with EFBIG as a full disk fails them
// with ENOSPC), the write is an error naming the file, and neither the file
// nor a temporary one is left behind; the previous file stays.
TEST(WriteTest, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  std::string dir = ::testing::TempDir() + "/pc_write_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string path = dir + "/out.npy";
  HostTensor small = HostTensor::zeros({2}, CommType::F32);
  ASSERT_TRUE(pc::runtime::writeNpy(path, small).ok());
  uintmax_t before = std::filesystem::file_size(path);

  struct rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto previous = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limited = old;
  limited.rlim_cur = 1000;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  HostTensor big = HostTensor::zeros({4096}, CommType::F32);
  absl::Status npy = pc::runtime::writeNpy(path, big);
  absl::Status safetensors =
      pc::runtime::writeSafetensors(dir + "/w.safetensors", {{"w", big}});
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);

  EXPECT_EQ(npy.code(), absl::StatusCode::kDataLoss) << npy;
  EXPECT_NE(npy.message().find("out.npy: writing failed"), std::string::npos)
      << npy;
  EXPECT_EQ(safetensors.code(), absl::StatusCode::kDataLoss) << safetensors;
  std::vector<std::string> left;
  for (auto &entry : std::filesystem::directory_iterator(dir))
    left.push_back(entry.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"out.npy"});
  EXPECT_EQ(std::filesystem::file_size(path), before);
  std::filesystem::remove_all(dir);
}

// The op profiler times every compute op of a program in the program's
// order, pass after pass: ops of one key pool their firings into one
// entry, every compute op has one, and maxPasses bounds the passes even
// where minSeconds asks for more.
class OpProfilerTest : public pc::test::PcContextTest {};

TEST_F(OpProfilerTest, TimesEachKeyOnceWithinThePassesAllowed) {
  OwningOpRef<ModuleOp> m = distributed(context, R"mlir(
    pc.mesh @m <["x"=2]>
    func.func @f(%a: tensor<8x16xf32, #pc.sbp<@m, [S(0)]>>,
                 %w: tensor<16x16xf32, #pc.sbp<@m, [B]>>)
        -> tensor<8x16xf32, #pc.sbp<@m, [S(0)]>> {
      %h = pc.matmul %a, %w : (tensor<8x16xf32, #pc.sbp<@m, [S(0)]>>, tensor<16x16xf32, #pc.sbp<@m, [B]>>) -> tensor<8x16xf32, #pc.sbp<@m, [S(0)]>>
      %g = pc.matmul %h, %w : (tensor<8x16xf32, #pc.sbp<@m, [S(0)]>>, tensor<16x16xf32, #pc.sbp<@m, [B]>>) -> tensor<8x16xf32, #pc.sbp<@m, [S(0)]>>
      %s = pc.mul %g, %a : (tensor<8x16xf32, #pc.sbp<@m, [S(0)]>>, tensor<8x16xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x16xf32, #pc.sbp<@m, [S(0)]>>
      return %s : tensor<8x16xf32, #pc.sbp<@m, [S(0)]>>
    }
  )mlir");
  ASSERT_TRUE(m);

  pc::runtime::OpProfilerOptions options;
  options.minSeconds = 20; // far more than maxPasses give
  options.minPasses = 1;
  options.maxPasses = 3;
  options.rounds = 2;
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<pc::OpProfile> profile = pc::runtime::profileOps(*m, options);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_LT(seconds, 20.0);
  std::vector<std::string> keys;
  for (const auto &[key, t] : profile->seconds) {
    keys.push_back(key.substr(0, key.find(' ')));
    EXPECT_GT(t, 0) << key;
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"pc.matmul", "pc.mul"}));
}

} // namespace

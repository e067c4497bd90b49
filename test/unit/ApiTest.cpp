//===- ApiTest.cpp - The C++ graph-building API and sessions --------------===//
//
// Every op through the API builds the IR op it names, with the inferred
// shape; the same MLP built through the API and written as IR text gives the
// same results; misuse (shape mismatches, a layout on another graph's mesh,
// a value of another graph, a closed session, ...) gives an error naming
// the call and never aborts; sessions train, save and load.
//
//===----------------------------------------------------------------------===//

#include "SessionTestUtil.h"
#include "api/Program.h"
#include "dialect/OpProfile.h"
#include "passes/InitAll.h"
#include "runtime/exec/CpuExecutor.h"
#include "runtime/exec/Npy.h"
#include "runtime/exec/Safetensors.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace pc::api;
using pc::runtime::CommType;
using pc::runtime::HostTensor;

namespace {

/// The IR line of the last op `name` in `g`'s text.
std::string lineOf(Graph &g, const std::string &name) {
  std::string text = g.str(), found;
  size_t at = 0;
  while ((at = text.find(name + " ", at)) != std::string::npos) {
    size_t begin = text.rfind('\n', at) + 1, end = text.find('\n', at);
    found = text.substr(begin, end - begin);
    at = end;
  }
  return found;
}

TEST(ApiTest, EveryOpBuildsItsIrOp) {
  Graph g("ops");
  Mesh m = g.mesh("m", {{"dp", 2}, {"tp", 2}});
  Value x = g.input("x", {4, 8}, DType::F32, Placement{m, {S(0), B}});
  Value w = g.param("w", {8, 6}, DType::F32, Init::normal(0.1), true,
                    Placement{m, {B, S(1)}});
  Value v = g.param("v", {8}, DType::F32, Init::ones(), false);
  Value ids = g.input("ids", {4}, DType::I64);
  struct Case {
    const char *op;
    Value value;
    std::vector<int64_t> shape;
  };
  std::vector<Case> cases = {
      {"pc.matmul", g.matmul(x, w), {4, 6}},
      {"pc.matmul", g.matmul(w, x, true, true), {6, 4}},
      {"pc.add", g.add(x, v), {4, 8}},
      {"pc.sub", g.sub(x, v), {4, 8}},
      {"pc.mul", g.mul(x, x), {4, 8}},
      {"pc.div", g.div(x, v), {4, 8}},
      {"pc.compare", g.compare(x, v, Compare::Gt), {4, 8}},
      {"pc.neg", g.neg(x), {4, 8}},
      {"pc.exp", g.exp(x), {4, 8}},
      {"pc.log", g.log(x), {4, 8}},
      {"pc.tanh", g.tanh(x), {4, 8}},
      {"pc.relu", g.relu(x), {4, 8}},
      {"pc.sigmoid", g.sigmoid(x), {4, 8}},
      {"pc.sqrt", g.sqrt(x), {4, 8}},
      {"pc.erf", g.erf(x), {4, 8}},
      {"pc.gelu", g.gelu(x, true), {4, 8}},
      {"pc.softmax", g.softmax(x), {4, 8}},
      {"pc.log_softmax", g.logSoftmax(x, 0), {4, 8}},
      {"pc.layer_norm", g.layerNorm(x, v, v), {4, 8}},
      {"pc.rms_norm", g.rmsNorm(x, v), {4, 8}},
      {"pc.reduce_sum", g.reduceSum(x, {1}), {4}},
      {"pc.reduce_mean", g.reduceMean(x, {0}, true), {1, 8}},
      {"pc.reduce_max", g.reduceMax(x, {0, 1}), {}},
      {"pc.reshape", g.reshape(x, {2, 16}), {2, 16}},
      {"pc.transpose", g.transpose(x, {1, 0}), {8, 4}},
      {"pc.broadcast_to", g.broadcastTo(v, {3, 8}), {3, 8}},
      {"pc.slice", g.slice(x, {0, 2}, {4, 5}), {4, 3}},
      {"pc.concat", g.concat({x, x}, 0), {8, 8}},
      {"pc.embedding", g.embedding(ids, w), {4, 6}},
      {"pc.causal_mask", g.causalMask(g.reshape(x, {2, 4, 4})), {2, 4, 4}},
      {"pc.cross_entropy", g.crossEntropy(x, ids), {4}},
      {"pc.one_hot", g.oneHot(ids, 5), {4, 5}},
      {"pc.cast", g.cast(x, DType::BF16), {4, 8}},
      {"pc.constant", g.constant(2.0, {3}), {3}},
      {"pc.to_sbp", g.toSbp(x, Placement{m, {B, S(1)}}), {4, 8}},
  };
  ASSERT_TRUE(g.status().ok()) << g.status();
  for (const Case &c : cases) {
    ASSERT_TRUE(c.value.valid()) << c.op;
    EXPECT_EQ(c.value.shape(), c.shape) << c.op;
    EXPECT_NE(lineOf(g, c.op), "") << c.op << " not in\n" << g.str();
  }
  EXPECT_EQ(cases.back().value.dtype(), DType::F32);
  EXPECT_EQ(cases[cases.size() - 3].value.dtype(), DType::BF16);
  // Layouts are written where the user gave them.
  EXPECT_NE(g.str().find("pc.param @w : tensor<8x6xf32, #pc.sbp<@m, [B, "
                         "S(1)]>> = #pc.init<normal"),
            std::string::npos);
  EXPECT_NE(g.str().find("{trainable = false}"), std::string::npos);
  EXPECT_NE(lineOf(g, "pc.to_sbp").find("#pc.sbp<@m, [B, S(1)]>"),
            std::string::npos);
  g.output("y", cases[0].value);
  EXPECT_TRUE(mlir::succeeded(mlir::verify(g.module())));
  EXPECT_NE(g.str().find("{pc.name = \"y\"}"), std::string::npos);

  // The text is IR that pc-opt reads: it parses back and verifies.
  mlir::MLIRContext ctx;
  mlir::DialectRegistry registry;
  pc::registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  auto parsed = mlir::parseSourceString<mlir::ModuleOp>(g.str(), &ctx);
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(mlir::succeeded(mlir::verify(*parsed)));
}

TEST(ApiTest, BuildingGoesOnAfterTheModuleIsRead) {
  Graph g("more");
  g.mesh("m", {{"x", 2}});
  Value x = g.input("x", {4}, DType::F32);
  g.output("a", g.relu(x));
  std::string first = g.str();
  g.output("b", g.exp(x));
  EXPECT_TRUE(mlir::succeeded(mlir::verify(g.module())));
  std::string second = g.str();
  EXPECT_EQ(first.find("pc.exp"), std::string::npos);
  EXPECT_NE(second.find("pc.exp"), std::string::npos);
  EXPECT_NE(second.find("{pc.name = \"b\"}"), std::string::npos);
  absl::StatusOr<Program> p = compile(g);
  EXPECT_TRUE(p.ok()) << p.status();
}

TEST(ApiTest, CompileErrorsCarryTheDiagnostics) {
  // Two meshes and a value nothing places: propagation cannot choose one.
  Graph g("two");
  g.mesh("a", {{"x", 2}});
  g.mesh("b", {{"x", 2}});
  Value x = g.input("x", {4}, DType::F32);
  g.output("y", g.relu(x));
  absl::StatusOr<Program> p = compile(g);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(p.status().message().substr(0, 11)), "compiling: ");
  EXPECT_NE(p.status().message().find("mesh"), std::string::npos) << p.status();
  // Training needs a loss.
  CompileOptions train;
  train.train = true;
  absl::StatusOr<Program> t = compile(g, train);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("has no loss to differentiate"),
            std::string::npos)
      << t.status();
}

TEST(ApiTest, PlacementScopesPlaceInputsAndParameters) {
  Graph g("stages");
  Mesh a = g.mesh("a", {{"x", 2}});
  Mesh b = g.mesh("b", {{"x", 2}});
  Value in;
  {
    auto scope = g.on(a);
    in = g.input("x", {4}, DType::F32);
    Value w = g.param("w", {4}, DType::F32, Init::ones());
    Value s = g.toSbp(g.mul(in, w), {S(0)});
    {
      auto inner = g.on(b);
      g.output("y", g.toSbp(s, {B}));
    }
    g.output("z", g.toSbp(s, {B}));
  }
  ASSERT_TRUE(g.status().ok()) << g.status();
  std::string text = g.str();
  EXPECT_NE(text.find("tensor<4xf32, #pc.sbp<@a, [B]>> {pc.name = \"x\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("pc.param @w : tensor<4xf32, #pc.sbp<@a, [B]>>"),
            std::string::npos);
  EXPECT_NE(text.find("-> tensor<4xf32, #pc.sbp<@b, [B]>>"), std::string::npos);
  // Outside every scope, a toSbp without a mesh is a misuse.
  g.toSbp(in, {B});
  EXPECT_EQ(g.status().message(),
            "Graph::toSbp: no mesh: give a Placement, or call it within a "
            "Graph::on(mesh) scope");
}

TEST(ApiTest, MisuseIsAnErrorThatNamesTheCall) {
  {
    Graph g("shapes");
    Value a = g.input("a", {8, 4}, DType::F32);
    Value b = g.input("b", {5, 3}, DType::F32);
    Value c = g.matmul(a, b);
    EXPECT_FALSE(c.valid());
    EXPECT_EQ(std::string(g.status().message().substr(0, 30)),
              "Graph::matmul: 'pc.matmul' op ");
    // Sticky: later calls fail too, and keep the first error.
    EXPECT_FALSE(g.relu(a).valid());
    EXPECT_EQ(std::string(g.status().message().substr(0, 14)),
              "Graph::matmul:");
  }
  {
    Graph g("g"), other("other");
    Mesh theirs = other.mesh("m", {{"x", 2}});
    Value a = g.input("a", {4}, DType::F32, Placement{theirs, {S(0)}});
    EXPECT_FALSE(a.valid());
    EXPECT_EQ(g.status().message(),
              "Graph::input: the layout of 'a' is on a mesh of another graph");
  }
  {
    Graph g("g"), other("other");
    g.mesh("m", {{"x", 2}});
    Mesh theirs = other.mesh("m", {{"x", 2}});
    Value a = g.input("a", {4}, DType::F32);
    g.toSbp(a, Placement{theirs, {S(0)}});
    EXPECT_EQ(g.status().message(),
              "Graph::toSbp: mesh 'm' is not a mesh of @g");
  }
  {
    Graph g("g"), other("other");
    Value a = g.input("a", {4}, DType::F32);
    Value b = other.input("b", {4}, DType::F32);
    g.add(a, b);
    EXPECT_EQ(g.status().message(),
              "Graph::add: operand #1 belongs to another graph, not @g");
  }
  {
    Graph g("g");
    Mesh m = g.mesh("m", {{"x", 2}, {"y", 2}});
    g.input("a", {4}, DType::F32, Placement{m, {S(0)}});
    EXPECT_EQ(g.status().message(),
              "Graph::input: the layout of 'a' has 1 entries for mesh @m "
              "with 2 axes");
  }
  {
    Graph g("g");
    Mesh m = g.mesh("m", {{"x", 2}});
    g.input("a", {4}, DType::F32, Placement{m, {S(1)}});
    EXPECT_EQ(std::string(g.status().message().substr(0, 32)),
              "Graph::input: the layout of 'a':");
  }
  {
    Graph g("g");
    Value a = g.input("a", {4}, DType::F32);
    g.loss(a);
    EXPECT_EQ(g.status().message(),
              "Graph::loss: the loss must be a 0-d float value");
    absl::StatusOr<Program> p = compile(g);
    EXPECT_EQ(p.status().message(),
              "compile: the graph has an error: Graph::loss: the loss must be "
              "a 0-d float value");
  }
  {
    Graph g("g");
    g.input("a", {4}, DType::F32);
    g.input("a", {4}, DType::F32);
    EXPECT_EQ(g.status().message(), "Graph::input: 'a' is already a name");
  }
}

/// The MLP both ways: through the API, and as IR text.
const char *kMlpText = R"mlir(
pc.mesh @m <["dp"=2, "tp"=2]>
pc.param @w1 : tensor<6x8xf32, #pc.sbp<@m, [B, S(1)]>> = #pc.init<normal(std = 0.5)>
pc.param @w2 : tensor<8x3xf32, #pc.sbp<@m, [B, S(0)]>> = #pc.init<normal(std = 0.5)>
func.func @mlp(%x: tensor<4x6xf32, #pc.sbp<@m, [S(0), B]>> {pc.name = "x"}) -> (tensor<4x3xf32> {pc.name = "y"}) {
  %w1 = pc.get_param @w1 : tensor<6x8xf32, #pc.sbp<@m, [B, S(1)]>>
  %w2 = pc.get_param @w2 : tensor<8x3xf32, #pc.sbp<@m, [B, S(0)]>>
  %h = pc.matmul %x, %w1 : (tensor<4x6xf32, #pc.sbp<@m, [S(0), B]>>, tensor<6x8xf32, #pc.sbp<@m, [B, S(1)]>>) -> tensor<4x8xf32>
  %a = pc.tanh %h : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = pc.matmul %a, %w2 : (tensor<4x8xf32>, tensor<8x3xf32, #pc.sbp<@m, [B, S(0)]>>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
)mlir";

void buildMlp(Graph &g) {
  Mesh m = g.mesh("m", {{"dp", 2}, {"tp", 2}});
  Value x = g.input("x", {4, 6}, DType::F32, Placement{m, {S(0), B}});
  Value w1 = g.param("w1", {6, 8}, DType::F32, Init::normal(0.5), true,
                     Placement{m, {B, S(1)}});
  Value w2 = g.param("w2", {8, 3}, DType::F32, Init::normal(0.5), true,
                     Placement{m, {B, S(0)}});
  g.output("y", g.matmul(g.tanh(g.matmul(x, w1)), w2));
}

HostTensor someInput() {
  HostTensor x = HostTensor::zeros({4, 6}, CommType::F32);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.as<float>()[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  return x;
}

TEST(ApiTest, TheApiAndIrTextGiveTheSameResults) {
  Graph g("mlp");
  buildMlp(g);
  absl::StatusOr<Program> program = compile(g);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->numDevices(), 4);
  EXPECT_NE(program->plan().find("mesh @m [dp=2, tp=2], 4 devices"),
            std::string::npos)
      << program->plan();
  absl::StatusOr<std::unique_ptr<Session>> s = Session::create(*program);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)->feed("x", someInput()).ok());
  ASSERT_TRUE((*s)->run().ok());
  absl::StatusOr<HostTensor> viaApi = (*s)->fetch("y");
  ASSERT_TRUE(viaApi.ok()) << viaApi.status();

  // The IR text, compiled and run directly.
  pc::registerAllPasses();
  mlir::MLIRContext ctx;
  mlir::DialectRegistry registry;
  pc::registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  auto m = mlir::parseSourceString<mlir::ModuleOp>(kMlpText, &ctx);
  ASSERT_TRUE(m);
  mlir::PassManager pm = mlir::PassManager::on<mlir::ModuleOp>(&ctx);
  ASSERT_TRUE(mlir::succeeded(mlir::parsePassPipeline("pc-distribute", pm)));
  ASSERT_TRUE(mlir::succeeded(pm.run(*m)));
  absl::StatusOr<pc::runtime::CpuRun> viaText =
      pc::runtime::runOnCpu(*m, "mlp", {someInput()}, 0);
  ASSERT_TRUE(viaText.ok()) << viaText.status();
  ASSERT_EQ(viaText->results.size(), 1u);
  EXPECT_EQ(viaApi->shape, viaText->results[0].shape);
  EXPECT_EQ(viaApi->bytes, viaText->results[0].bytes);
}

// Session::emulateCompute: the profiled ops wait their time and give zeros;
// an empty profile brings the kernels back, bit for bit; a malformed
// profile and a closed session are errors.
TEST(ApiTest, EmulatedComputeWaitsAndGivesZeros) {
  Graph g("mlp");
  buildMlp(g);
  absl::StatusOr<Program> program = compile(g);
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<std::string> profile = program->profileOps(1);
  ASSERT_TRUE(profile.ok()) << profile.status();
  ASSERT_NE(profile->find("pc.matmul"), std::string::npos) << *profile;
  absl::StatusOr<std::unique_ptr<Session>> s = Session::create(*program);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)->feed("x", someInput()).ok());
  auto runY = [&]() -> absl::StatusOr<HostTensor> {
    if (absl::Status st = (*s)->run(); !st.ok())
      return st;
    return (*s)->fetch("y");
  };
  absl::StatusOr<HostTensor> real = runY();
  ASSERT_TRUE(real.ok()) << real.status();
  ASSERT_TRUE(std::any_of(real->bytes.begin(), real->bytes.end(),
                          [](auto b) { return b != 0; }));

  // Every op 50 ms: the run waits at least that long, and gives zeros.
  llvm::Expected<pc::OpProfile> times = pc::parseOpProfile(*profile, "test");
  ASSERT_TRUE(bool(times)) << llvm::toString(times.takeError());
  for (auto &[key, t] : times->seconds)
    t = 0.05;
  ASSERT_TRUE((*s)->emulateCompute(pc::formatOpProfile(*times)).ok());
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<HostTensor> emulated = runY();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(emulated.ok()) << emulated.status();
  EXPECT_GE(seconds, 0.05);
  EXPECT_EQ(emulated->shape, real->shape);
  EXPECT_TRUE(std::all_of(emulated->bytes.begin(), emulated->bytes.end(),
                          [](auto b) { return b == 0; }));

  ASSERT_TRUE((*s)->emulateCompute("").ok());
  absl::StatusOr<HostTensor> again = runY();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->bytes, real->bytes);

  absl::Status bad = (*s)->emulateCompute("{\"device\": \"cpu\"}");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_NE(bad.message().find("op profile"), std::string::npos) << bad;
  (*s)->close();
  EXPECT_EQ((*s)->emulateCompute(*profile).code(),
            absl::StatusCode::kFailedPrecondition);
}

// Program::simulate gives the step's work on the host's cores where the
// devices share them (CPU virtual devices), none on GPUs.
TEST(ApiTest, SimulateReportsTheWorkOnSharedCores) {
  std::string text =
      pc::test::readSource(PC_SOURCE_DIR "/examples/mlp_2x2.mlir");
  auto workOn = [&](const char *spec) -> absl::StatusOr<double> {
    CompileOptions options;
    options.train = true;
    options.cluster = std::string(PC_SOURCE_DIR "/planner/clusters/") + spec;
    absl::StatusOr<Program> program = compileSource(text, "mlp", options);
    if (!program.ok())
      return program.status();
    double step = 0, idle = 0, work = -1;
    absl::StatusOr<std::string> report =
        program->simulate(&step, {}, false, &idle, &work);
    if (!report.ok())
      return report.status();
    EXPECT_GT(step, 0);
    return work;
  };
  absl::StatusOr<double> cpu = workOn("cpu-virtual.json");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_GT(*cpu, 0);
  absl::StatusOr<double> gpu = workOn("dgx-a100.json");
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(*gpu, 0);
}

TEST(ApiTest, SessionsTrainSaveAndLoad) {
  auto build = [](Graph &g) {
    Mesh m = g.mesh("m", {{"dp", 2}});
    Value x = g.input("x", {4, 6}, DType::F32, Placement{m, {S(0)}});
    Value w = g.param("w", {6, 3}, DType::F32, Init::normal(0.5));
    Value y = g.matmul(x, w);
    g.loss(g.reduceMean(g.mul(y, y), {0, 1}));
  };
  Graph g("train");
  build(g);
  CompileOptions options;
  options.train = true;
  options.optimizer.kind = "sgd";
  options.optimizer.lr = 0.1;
  absl::StatusOr<Program> program = compile(g, options);
  ASSERT_TRUE(program.ok()) << program.status();
  auto a = Session::create(*program);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->trainStep().status().message(),
            "Session::trainStep: input 'x' was not fed");
  ASSERT_TRUE((*a)->feed("x", someInput()).ok());
  double first = *(*a)->trainStep();
  ASSERT_TRUE((*a)->trainStep().ok());
  std::string dir =
      (std::filesystem::temp_directory_path() / "pc-api-test-ckpt").string();
  std::filesystem::remove_all(dir);
  ASSERT_TRUE((*a)->save(dir, /*sharded=*/true).ok());
  double next = *(*a)->trainStep();
  EXPECT_LT(next, first);
  EXPECT_EQ((*a)->report().losses.size(), 3u);

  // A fresh session on 1 device resumes from the checkpoint.
  Graph g1("train");
  build(g1);
  options.meshShapes["m"] = {1};
  absl::StatusOr<Program> one = compile(g1, options);
  ASSERT_TRUE(one.ok()) << one.status();
  auto b = Session::create(*one);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE((*b)->load(dir).ok());
  ASSERT_TRUE((*b)->feed("x", someInput()).ok());
  absl::StatusOr<double> resumed = (*b)->trainStep();
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_NEAR(*resumed, next, 1e-6 * next);
  EXPECT_EQ((*b)->report().step, 3);

  // Misuse of sessions.
  EXPECT_EQ((*b)->feed("x", HostTensor::zeros({3}, CommType::F32)).message(),
            "Session::feed: input 'x' is f32 of shape [4, 6], not f32 of "
            "shape [3]");
  EXPECT_EQ((*b)->feed("nope", someInput()).message(),
            "Session::feed: the program has no input 'nope'");
  EXPECT_EQ((*b)->run().message(),
            "Session::run: the program is a training step; call trainStep()");
  EXPECT_EQ((*b)->fetch("nope").status().message(),
            "Session::fetch: the program has no output 'nope'");
  (*b)->close();
  EXPECT_EQ((*b)->trainStep().status().message(),
            "Session::trainStep: the session is closed");
  EXPECT_EQ((*b)->fetch("loss").status().message(),
            "Session::fetch: the session is closed");
  CompileOptions pipelined;
  pipelined.stages = 2;
  pipelined.schedule = "2f2b";
  EXPECT_EQ(compile(g1, pipelined).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::filesystem::remove_all(dir);
}

TEST(ApiTest, WeightsLoadIntoATrainingSessionOnlyWhenTheyAllMatch) {
  Graph g("train");
  Mesh m = g.mesh("m", {{"dp", 2}});
  Value x = g.input("x", {4, 6}, DType::F32, Placement{m, {S(0)}});
  Value w = g.param("w", {6, 3}, DType::F32, Init::normal(0.5));
  g.loss(g.reduceMean(g.mul(g.matmul(x, w), g.matmul(x, w)), {0, 1}));
  CompileOptions options;
  options.train = true;
  absl::StatusOr<Program> program = compile(g, options);
  ASSERT_TRUE(program.ok()) << program.status();

  // The program lists its parameters: the weight, then AdamW's state.
  std::vector<Parameter> params = program->parameters();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].name, "w");
  EXPECT_EQ(params[0].shape, (std::vector<int64_t>{6, 3}));
  EXPECT_EQ(params[0].layout, "#pc.sbp<@m, [B]>");
  EXPECT_TRUE(params[0].trainable);
  EXPECT_FALSE(params[0].optimizerState);
  EXPECT_EQ(params[1].name, "w.adam_m");
  EXPECT_TRUE(params[1].optimizerState);
  EXPECT_FALSE(params[1].trainable);
  EXPECT_TRUE(params[3].optimizerState); // the step counter

  std::string dir =
      (std::filesystem::temp_directory_path() / "pc-api-test-weights").string();
  std::filesystem::create_directories(dir);
  HostTensor ones = HostTensor::zeros({6, 3}, CommType::F32);
  for (int64_t i = 0; i < 18; ++i)
    ones.as<float>()[i] = 1.0f;
  ASSERT_TRUE(
      pc::runtime::writeSafetensors(dir + "/good.safetensors", {{"w", ones}})
          .ok());
  ASSERT_TRUE(pc::runtime::writeSafetensors(dir + "/renamed.safetensors",
                                            {{"model.w", ones}})
                  .ok());
  ASSERT_TRUE(pc::runtime::writeSafetensors(dir + "/extra.safetensors",
                                            {{"w", ones}, {"head", ones}})
                  .ok());
  auto s = Session::create(*program);
  ASSERT_TRUE(s.ok());
  absl::Status renamed = (*s)->loadParameters(dir + "/renamed.safetensors");
  EXPECT_EQ(renamed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(renamed.message().find("tensor 'model.w' matches no parameter"),
            std::string::npos)
      << renamed;
  absl::Status extra = (*s)->loadParameters(dir + "/extra.safetensors");
  EXPECT_NE(extra.message().find("tensor 'head' matches no parameter"),
            std::string::npos)
      << extra;
  // The weights alone load; the optimizer state keeps its zeros.
  ASSERT_TRUE((*s)->loadParameters(dir + "/good.safetensors").ok());
  HostTensor in = HostTensor::zeros({4, 6}, CommType::F32);
  for (int64_t i = 0; i < 24; ++i)
    in.as<float>()[i] = 1.0f;
  ASSERT_TRUE((*s)->feed("x", in).ok());
  absl::StatusOr<double> loss = (*s)->trainStep();
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_DOUBLE_EQ(*loss, 36.0); // (x·1)^2 with rows of six ones
  std::filesystem::remove_all(dir);
}

} // namespace

using pc::test::parametersOf;
using pc::test::readSource;

// What pc-run does through the API: compile IR text for training with the
// one C++ pipeline, list the ports, draw inputs that fit, train with a
// schedule, and read per-rank figures; a diverging step is an error.
TEST(ApiTest, CompiledSourceTrainsWithASchedule) {
  std::string text = readSource(PC_SOURCE_DIR "/examples/mlp_2x2.mlir");
  CompileOptions options;
  options.train = true;
  options.optimizer.kind = "sgd";
  absl::StatusOr<Program> p = compileSource(text, "mlp_2x2.mlir", options);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->isTrainingStep());
  EXPECT_EQ(p->graph(), "mlp");
  ASSERT_EQ(p->inputs().size(), 3u);
  EXPECT_EQ(p->inputs()[2].name, "lr");
  absl::StatusOr<std::vector<HostTensor>> inputs = p->exampleInputs(1);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  absl::StatusOr<std::unique_ptr<Session>> s = Session::create(*p);
  ASSERT_TRUE(s.ok()) << s.status();
  for (const Port &port : p->inputs())
    if (port.name != "lr")
      ASSERT_TRUE((*s)->feed(port.name, (*inputs)[port.index]).ok());
  OptimizerOptions rates;
  rates.lr = 0.1;
  rates.schedule = "cosine";
  rates.totalSteps = 2;
  ASSERT_TRUE((*s)->setSchedule(rates).ok());
  rates.schedule = "step";
  EXPECT_EQ((*s)->setSchedule(rates).message(),
            "the schedule must be constant or cosine, not 'step'");
  ASSERT_TRUE((*s)->trainStep().ok());
  EXPECT_DOUBLE_EQ((*s)->report().lr, 0.1);
  ASSERT_TRUE((*s)->trainStep().ok());
  EXPECT_LT((*s)->report().lr, 0.1);
  EXPECT_EQ((*s)->report().comm.size(), 4u);
  EXPECT_EQ((*s)->report().peakBytes.size(), 4u);
  // A rate that makes the loss overflow stops the run with an error.
  rates.schedule = "constant";
  rates.lr = 1e30;
  ASSERT_TRUE((*s)->setSchedule(rates).ok());
  absl::Status diverged;
  int64_t applied = (*s)->report().step;
  for (int i = 0; i < 5 && diverged.ok(); ++i) {
    diverged = (*s)->trainStep().status();
    if (diverged.ok())
      ++applied;
  }
  EXPECT_NE(diverged.message().find("the loss is"), std::string::npos)
      << diverged;
  // The rejected step was not applied: the step count and the curve stop
  // before it, and every recorded loss is finite.
  EXPECT_EQ((*s)->report().step, applied);
  EXPECT_EQ(static_cast<int64_t>((*s)->report().losses.size()), applied);
  // Rejected again, from the same parameters: nothing changes them.
  std::string before = ::testing::TempDir() + "/pc_rejected_before";
  std::string after = ::testing::TempDir() + "/pc_rejected_after";
  ASSERT_TRUE((*s)->save(before).ok());
  EXPECT_FALSE((*s)->trainStep().ok());
  ASSERT_TRUE((*s)->save(after).ok());
  absl::StatusOr<std::map<std::string, HostTensor>> a =
      pc::runtime::readSafetensors(before);
  absl::StatusOr<std::map<std::string, HostTensor>> b =
      pc::runtime::readSafetensors(after);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), b->size());
  for (auto &[name, t] : *a)
    EXPECT_EQ(t.bytes, b->at(name).bytes) << name;
  std::remove(before.c_str());
  std::remove(after.c_str());
  for (double l : (*s)->report().losses)
    EXPECT_TRUE(std::isfinite(l));
  rates.lr = std::nan("");
  EXPECT_EQ((*s)->setSchedule(rates).message(),
            "the learning rate must be a finite number >= 0, not nan");

  absl::StatusOr<Program> bad =
      compileSource("func.func @f(", "bad.mlir", options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(bad.status().message()).substr(0, 18),
            "bad.mlir:1:13: err");
}

// Steps as iterations of one run (loop-carried parameters, a rate per
// step) are the steps one run at a time, bit for bit: on 4 devices with
// AdamW and a cosine schedule, whose rate changes every step.
TEST(ApiTest, StepsInOneRunEqualStepsOneRunEach) {
  std::string text = readSource(PC_SOURCE_DIR "/examples/mlp_2x2.mlir");
  CompileOptions options;
  options.train = true;
  options.optimizer.kind = "adamw";
  absl::StatusOr<Program> p = compileSource(text, "mlp_2x2.mlir", options);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<std::vector<HostTensor>> inputs = p->exampleInputs(1);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  auto start = [&]() {
    absl::StatusOr<std::unique_ptr<Session>> s = Session::create(*p);
    EXPECT_TRUE(s.ok()) << s.status();
    for (const Port &port : p->inputs())
      if (port.name != "lr")
        EXPECT_TRUE((*s)->feed(port.name, (*inputs)[port.index]).ok());
    OptimizerOptions rates;
    rates.lr = 0.05;
    rates.schedule = "cosine";
    rates.warmupSteps = 2;
    rates.totalSteps = 7;
    EXPECT_TRUE((*s)->setSchedule(rates).ok());
    return *std::move(s);
  };
  std::unique_ptr<Session> one = start(), many = start();
  std::vector<double> expected;
  for (int i = 0; i < 7; ++i) {
    absl::StatusOr<double> l = one->trainStep();
    ASSERT_TRUE(l.ok()) << l.status();
    expected.push_back(*l);
  }
  // 3 steps, then 4: the second run starts from what the first stored.
  absl::StatusOr<std::vector<double>> first = many->train(3);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::vector<double>> second = many->train(4);
  ASSERT_TRUE(second.ok()) << second.status();
  std::vector<double> got = *first;
  got.insert(got.end(), second->begin(), second->end());
  EXPECT_EQ(got, expected);
  EXPECT_EQ(many->report().losses, expected);
  EXPECT_EQ(many->report().step, 7);
  ASSERT_EQ(many->report().steps.size(), 4u);
  EXPECT_EQ(many->report().steps[3].step, 6);
  EXPECT_EQ(many->report().steps[3].loss, expected[6]);
  EXPECT_EQ(many->report().lr, one->report().lr);
  std::map<std::string, HostTensor> a = parametersOf(*one, "pc_one_by_one");
  std::map<std::string, HostTensor> b = parametersOf(*many, "pc_in_one_run");
  ASSERT_EQ(a.size(), b.size());
  for (auto &[name, t] : a)
    EXPECT_EQ(t.bytes, b.at(name).bytes) << name;
  EXPECT_EQ(many->train(0).status().message(),
            "Session::train: steps must be at least 1, not 0");

  // A step that diverges rejects its whole run: the step count, the curve
  // and the parameters stay those before it.
  OptimizerOptions huge;
  huge.lr = 1e30;
  ASSERT_TRUE(many->setSchedule(huge).ok());
  absl::StatusOr<std::vector<double>> diverged = many->train(5);
  ASSERT_FALSE(diverged.ok());
  EXPECT_NE(diverged.status().message().find("were not applied"),
            std::string::npos)
      << diverged.status();
  EXPECT_EQ(many->report().step, 7);
  EXPECT_EQ(many->report().losses.size(), 7u);
  std::map<std::string, HostTensor> c = parametersOf(*many, "pc_rejected");
  for (auto &[name, t] : b)
    EXPECT_EQ(t.bytes, c.at(name).bytes) << name;
}

// An input fed from a .npy file is mapped and read at each run; a file
// that changed since is an error of the run, never a fault.
TEST(ApiTest, AFedFileThatChangedIsAnError) {
  std::string text = readSource(PC_SOURCE_DIR "/examples/mlp_2x2.mlir");
  absl::StatusOr<Program> p = compileSource(text, "mlp_2x2.mlir");
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<std::vector<HostTensor>> inputs = p->exampleInputs(2);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  absl::StatusOr<std::unique_ptr<Session>> s = Session::create(*p);
  ASSERT_TRUE(s.ok()) << s.status();
  const Port &x = p->inputs()[0];
  std::string path = ::testing::TempDir() + "/pc_api_feed.npy";
  ASSERT_TRUE(pc::runtime::writeNpy(path, (*inputs)[0]).ok());
  ASSERT_TRUE((*s)->feedFile(x.name, path).ok());
  for (const Port &port : p->inputs())
    if (port.index != x.index)
      ASSERT_TRUE((*s)->feed(port.name, (*inputs)[port.index]).ok());
  ASSERT_TRUE((*s)->run().ok());
  absl::StatusOr<HostTensor> fromFile = (*s)->fetch(p->outputs()[0].name);
  ASSERT_TRUE(fromFile.ok());
  ASSERT_TRUE((*s)->feed(x.name, (*inputs)[0]).ok());
  ASSERT_TRUE((*s)->run().ok());
  EXPECT_EQ((*s)->fetch(p->outputs()[0].name)->bytes, fromFile->bytes);

  ASSERT_TRUE((*s)->feedFile(x.name, path).ok());
  HostTensor half = HostTensor::zeros({2}, CommType::F32);
  ASSERT_TRUE(pc::runtime::writeNpy(path + ".new", half).ok());
  std::filesystem::rename(path + ".new", path);
  absl::Status changed = (*s)->run();
  EXPECT_EQ(changed.code(), absl::StatusCode::kFailedPrecondition) << changed;
  EXPECT_NE(changed.message().find("changed since it was fed"),
            std::string::npos)
      << changed;
  std::filesystem::remove(path);
}

namespace {

/// A 3-layer MLP with a loss; with `staged`, layers in stages 0, 1, 1.
void buildStagedMlp(Graph &g, bool staged) {
  Mesh m = g.mesh("m", {{"dp", 1}});
  (void)m;
  Value x = g.input("x", {8, 6}, DType::F32);
  Value labels = g.input("labels", {8}, DType::I64);
  auto layer = [&](Value in, const std::string &name, int64_t n) {
    Value w = g.param(name, {in.shape()[1], n}, DType::F32, Init::normal(0.3));
    return g.tanh(g.matmul(in, w));
  };
  Value h;
  {
    std::optional<Graph::StageScope> s;
    if (staged)
      s.emplace(g.stage(0));
    h = layer(x, "w1", 16);
  }
  std::optional<Graph::StageScope> s;
  if (staged)
    s.emplace(g.stage(1));
  h = layer(h, "w2", 16);
  Value logits =
      g.matmul(h, g.param("w3", {16, 5}, DType::F32, Init::normal(0.3)));
  g.loss(g.reduceMean(g.crossEntropy(logits, labels), {0}));
}

std::vector<double> trainLosses(Graph &g, CompileOptions options,
                                int64_t devices) {
  options.train = true;
  options.optimizer.kind = "sgd";
  options.optimizer.lr = 0.1;
  absl::StatusOr<Program> program = compile(g, options);
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok())
    return {};
  SessionOptions so;
  so.devices = devices;
  auto s = Session::create(*program, so);
  EXPECT_TRUE(s.ok()) << s.status();
  absl::StatusOr<std::vector<HostTensor>> in = program->exampleInputs(3);
  EXPECT_TRUE(in.ok());
  for (const Port &port : program->inputs())
    if (port.name != "lr")
      EXPECT_TRUE((*s)->feed(port.name, (*in)[port.index]).ok());
  std::vector<double> losses;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<double> l = (*s)->trainStep();
    EXPECT_TRUE(l.ok()) << l.status();
    losses.push_back(l.ok() ? *l : 0);
  }
  return losses;
}

} // namespace

// Stages assigned through the API's scope train as a pipeline, and equal
// the one-device run that accumulates over the same micro-batches.
TEST(ApiTest, StageScopesPipelineAGraph) {
  Graph staged("mlp");
  buildStagedMlp(staged, true);
  ASSERT_TRUE(staged.status().ok()) << staged.status();
  EXPECT_NE(staged.str().find("pc.stage = 1"), std::string::npos);
  CompileOptions pipelined;
  pipelined.microbatches = 4;
  pipelined.schedule = "zb-h1";
  absl::StatusOr<Program> program = [&] {
    CompileOptions o = pipelined;
    o.train = true;
    return compile(staged, o);
  }();
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(program->numDevices(), 2);
  // Its forward pass, for the validation loss, is pipelined on the same
  // stages (a forward-only schedule); the plan lists it.
  EXPECT_TRUE(program->canEvaluate());
  EXPECT_NE(program->plan().find("also on these ranks: @mlp.eval"),
            std::string::npos);
  std::vector<double> piped = trainLosses(staged, pipelined, 2);

  Graph plain("mlp");
  buildStagedMlp(plain, false);
  CompileOptions accumulated;
  accumulated.microbatches = 4;
  std::vector<double> reference = trainLosses(plain, accumulated, 1);
  EXPECT_EQ(piped, reference);

  Graph bad("mlp");
  (void)bad.stage(-1);
  EXPECT_EQ(bad.status().message(),
            "Graph::stage: pipeline stage -1 is negative; stages count from 0");
}

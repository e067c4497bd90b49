//===- PlannerTest.cpp - The planner against published figures ------------===//
//
// The cost model and simulator against Korthikanti et al. (2022), Table 5,
// and the FLOPs formula of Narayanan et al. (2021); the memory model
// against the ZeRO and activation formulas; the search against an
// exhaustive one; the strategies it picks against the seed's guide.
//
//===----------------------------------------------------------------------===//

#include "planner/Search.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

using namespace pc::planner;

namespace {

ClusterSpec shipped(const std::string &name, int64_t nodes = 1,
                    int64_t perNode = 0) {
  llvm::Expected<ClusterSpec> s = loadClusterSpec(
      std::string(PC_SOURCE_DIR) + "/planner/clusters/" + name + ".json");
  if (!s) {
    ADD_FAILURE() << llvm::toString(s.takeError());
    return {};
  }
  s->nodes = nodes;
  if (perNode)
    s->devicesPerNode = perNode;
  return *s;
}

TransformerSpec model(const std::string &text) {
  llvm::Expected<TransformerSpec> m = parseModel(text);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return {};
  }
  return *m;
}

std::string specError(const std::string &json) {
  llvm::Expected<ClusterSpec> s = parseClusterSpec(json, "bad.json");
  if (s)
    return "(parsed)";
  return llvm::toString(s.takeError());
}

const char *kMinimal = R"({
  "name": "one", "nodes": 1, "devices_per_node": 1,
  "device": {"name": "x", "peak_flops": {"bf16": "100 TFLOP/s"},
             "memory": "16 GiB", "memory_bandwidth": "1 TB/s"},
  "efficiency": {}
})";

} // namespace

TEST(ClusterSpecTest, ShippedSpecsParse) {
  for (const char *name :
       {"dgx-a100", "dgx-h100", "dgx-h200", "pcie-a100", "cpu-virtual"}) {
    ClusterSpec s = shipped(name);
    EXPECT_FALSE(s.name.empty()) << name;
    EXPECT_GT(s.memoryBytes, 0) << name;
  }
  ClusterSpec a100 = shipped("dgx-a100");
  EXPECT_DOUBLE_EQ(*a100.peak("bf16"), 312e12);
  EXPECT_DOUBLE_EQ(a100.memoryBytes, 80e9);
  EXPECT_DOUBLE_EQ(a100.intraNode.bandwidth, 300e9);
  EXPECT_DOUBLE_EQ(a100.interNode.bandwidth, 25e9); // 200 Gb/s
  EXPECT_DOUBLE_EQ(a100.intraNode.latency, 3e-6);
  EXPECT_EQ(a100.devicesPerNode, 8);
}

TEST(ClusterSpecTest, Units) {
  EXPECT_DOUBLE_EQ(*parseBytes("80 GB"), 80e9);
  EXPECT_DOUBLE_EQ(*parseBytes("64GiB"), 64.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(*parseBytes("1024"), 1024);
  llvm::Expected<double> bad = parseBytes("12 parsecs");
  ASSERT_FALSE(bad);
  EXPECT_NE(llvm::toString(bad.takeError()).find("not a size"),
            std::string::npos);
  llvm::Expected<ClusterSpec> s = parseClusterSpec(kMinimal, "one.json");
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  EXPECT_DOUBLE_EQ(s->memoryBytes, 16.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(s->memoryBandwidth, 1e12);
  EXPECT_DOUBLE_EQ(s->matmulEfficiency, 1);
}

TEST(ClusterSpecTest, ErrorsNameTheFileAndTheKey) {
  std::string base = kMinimal;
  auto with = [&](const std::string &from, const std::string &to) {
    std::string s = base;
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  EXPECT_NE(specError("{").find("bad.json: not JSON"), std::string::npos);
  EXPECT_NE(specError("[1]").find("a cluster spec is a JSON object"),
            std::string::npos);
  EXPECT_NE(specError(with("\"memory\"", "\"memry\""))
                .find("bad.json: 'device.memory' is missing"),
            std::string::npos);
  EXPECT_NE(
      specError(with("\"efficiency\": {}", "\"efficiency\": {}, \"colour\": 1"))
          .find("unknown key 'colour'"),
      std::string::npos);
  EXPECT_NE(specError(with("\"1 TB/s\"", "\"1 TB\""))
                .find("'device.memory_bandwidth' must be bytes/s"),
            std::string::npos);
  EXPECT_NE(
      specError(with("\"efficiency\": {}", "\"efficiency\": {\"matmul\": 1.5}"))
          .find("'efficiency.matmul' is a fraction"),
      std::string::npos);
  EXPECT_NE(
      specError(with("\"devices_per_node\": 1", "\"devices_per_node\": 2"))
          .find("'intra_node' is missing"),
      std::string::npos);
  // An intra-node link with one more field.
  auto linkWith = [&](const std::string &field) {
    return specError(with("\"devices_per_node\": 1",
                          "\"devices_per_node\": 2, \"intra_node\": "
                          "{\"kind\": \"nvlink\", \"bandwidth\": 1e9, "
                          "\"latency\": 1e-6, " +
                              field + "}"));
  };
  EXPECT_NE(linkWith("\"latency_busy\": 1.5")
                .find("'intra_node.latency_busy' is a fraction of the latency "
                      "and must be at most 1"),
            std::string::npos);
  EXPECT_NE(linkWith("\"queued_share\": 0").find("'intra_node.queued_share'"),
            std::string::npos);
  EXPECT_NE(linkWith("\"queued_share\": 2")
                .find("'intra_node.queued_share' is a fraction of the latency "
                      "and must be at most 1"),
            std::string::npos);
  EXPECT_NE(specError(with("\"efficiency\": {}",
                           "\"efficiency\": {\"shared_cores\": 1.5}"))
                .find("'efficiency.shared_cores' is a fraction of the cores "
                      "and must be at most 1"),
            std::string::npos);
  EXPECT_NE(specError(with("\"efficiency\": {}",
                           "\"efficiency\": {\"wake_work\": -1}"))
                .find("'efficiency.wake_work' must be positive"),
            std::string::npos);
  EXPECT_NE(specError(with("\"efficiency\": {}",
                           "\"efficiency\": {\"kernel_in_step\": 0}"))
                .find("'efficiency.kernel_in_step' must be positive"),
            std::string::npos);
  EXPECT_NE(linkWith("\"p2p_work\": -1")
                .find("'intra_node.p2p_work' must be positive"),
            std::string::npos);
  EXPECT_NE(linkWith("\"straggler_lag\": -1")
                .find("'intra_node.straggler_lag' must be positive"),
            std::string::npos);
  EXPECT_NE(linkWith("\"call_latency\": -1")
                .find("'intra_node.call_latency' must be positive"),
            std::string::npos);
  EXPECT_NE(specError(with("\"nodes\": 1", "\"nodes\": -3"))
                .find("'nodes' must be a positive integer"),
            std::string::npos);
  llvm::Expected<ClusterSpec> missing = loadClusterSpec("/no/such/spec.json");
  ASSERT_FALSE(missing);
  EXPECT_NE(llvm::toString(missing.takeError())
                .find("/no/such/spec.json: cannot read the cluster spec"),
            std::string::npos);
}

TEST(ModelTest, PresetsAndErrors) {
  TransformerSpec gpt3 = model("gpt3-175b");
  EXPECT_NEAR(double(gpt3.parameters()) / 1e9, 175, 1);
  EXPECT_NEAR(double(model("megatron-530b").parameters()) / 1e9, 530, 3);
  EXPECT_NEAR(double(model("megatron-1t").parameters()) / 1e12, 1.0, 0.01);
  EXPECT_NEAR(double(model("gpt3-125m").parameters()) / 1e6, 125, 2);
  TransformerSpec custom = model("gpt3-1.3b,seq=1024");
  EXPECT_EQ(custom.seq, 1024);
  EXPECT_EQ(custom.hidden, 2048);
  for (const char *bad : {"gpt5", "layers=2,hidden=100,heads=3",
                          "gpt3-1.3b,depth=3", "layers=x"}) {
    llvm::Expected<TransformerSpec> m = parseModel(bad);
    EXPECT_FALSE(bool(m)) << bad;
    llvm::consumeError(m.takeError());
  }
}

namespace {

// Korthikanti et al. (2022), Table 5 (../shared/reference/planner-
// validation.md): A100 80GB, sequence 2048, vocabulary 51,200, DP 1.
struct Table5Row {
  const char *model;
  int64_t tp, pp, gpus, batch, micro, v;
  double full, selective; // seconds per iteration
};
constexpr Table5Row kTable5[] = {
    {"megatron-22b", 8, 1, 8, 4, 4, 1, 1.42, 1.10},
    {"megatron-175b", 8, 8, 64, 64, 1, 3, 18.13, 13.75},
    {"megatron-530b", 8, 35, 280, 280, 1, 3, 49.05, 37.83},
    {"megatron-1t", 8, 64, 512, 512, 1, 1, 94.42, 71.49}};

/// The row's strategy: full recompute, or selective with sequence
/// parallelism.
Strategy table5Strategy(const Table5Row &r, bool selective) {
  Strategy st;
  st.tp = r.tp;
  st.pp = r.pp;
  st.virtualStages = r.v;
  st.schedule = r.v > 1 ? pc::pipeline::ScheduleKind::Interleaved
                        : pc::pipeline::ScheduleKind::OneFOneB;
  st.microBatchSize = r.micro;
  st.microBatches = r.batch / r.micro;
  st.recompute = selective ? Recompute::Selective : Recompute::Full;
  st.sequenceParallel = selective;
  return st;
}

} // namespace

// Narayanan et al. (2021): with full recompute, an iteration is
// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) FLOPs. The formula, and the FLOPs
// the simulated per-device programs run, must equal it.
TEST(PlannerTest, IterationFlopsEqualTheFormula) {
  for (const Table5Row &r : kTable5) {
    TransformerSpec m = model(r.model);
    double B = r.batch, s = m.seq, l = m.layers, h = m.hidden, V = m.vocab;
    double formula =
        96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    EXPECT_NEAR(m.iterationFlops(r.batch, Recompute::Full) / formula, 1, 1e-12);
    EXPECT_NEAR(m.iterationFlops(r.batch, Recompute::None) /
                    (formula * 72 / 96 -
                     72 * B * s * l * h * h * V / (16 * l * h) +
                     6 * B * s * h * V),
                1, 1e-9);
    ClusterSpec c = shipped("dgx-a100", r.gpus / 8);
    Simulator sim(c);
    llvm::Expected<Simulation> out =
        sim.simulate(m, table5Strategy(r, /*selective=*/false));
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    EXPECT_NEAR(out->hardwareFlops / formula, 1, 1e-9) << r.model;
  }
}

// Table 5's iteration times on Selene's A100s, within 10%.
TEST(PlannerTest, KorthikantiTable5) {
  for (const Table5Row &r : kTable5) {
    ClusterSpec c = shipped("dgx-a100", r.gpus / 8);
    Simulator sim(c);
    TransformerSpec m = model(r.model);
    for (bool selective : {false, true}) {
      Strategy st = table5Strategy(r, selective);
      llvm::Expected<Simulation> out = sim.simulate(m, st);
      ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
      double paper = selective ? r.selective : r.full;
      double error = out->stepTime / paper - 1;
      std::printf("%-14s %-22s paper %6.2f s  pc %6.2f s  %+5.1f%%\n", r.model,
                  selective ? "selective + sp" : "full recompute", paper,
                  out->stepTime, 100 * error);
      EXPECT_LT(std::abs(error), 0.10) << r.model << " " << st.str();
      EXPECT_TRUE(out->fits) << r.model << " " << st.str() << ": "
                             << out->peakMemory / 1e9 << " GB";
    }
  }
}

// Model states per device as pc stores them (f32 weights, gradients and
// two Adam moments: 16 bytes per parameter), sharded as ZeRO's stages
// shard them (Rajbhandari et al. 2019, with pc's byte counts).
TEST(PlannerTest, ZeroMemory) {
  ClusterSpec c = shipped("dgx-a100", 8);
  Simulator sim(c);
  TransformerSpec m = model("gpt3-6.7b");
  double psi = double(m.parameters());
  const double nd = 64;
  double expected[] = {16 * psi, 8 * psi + 8 * psi / nd,
                       4 * psi + 12 * psi / nd, 16 * psi / nd};
  for (int zero = 0; zero <= 3; ++zero) {
    Strategy st;
    st.dp = 64;
    st.zero = zero;
    st.dtype = "f32"; // no bf16 working copies
    Memory mem = sim.memory(m, st)[0];
    double states = mem.weights + mem.gradients + mem.optimizer;
    // ZeRO-3 adds the two gathered layers in flight.
    double slack = zero == 3 ? 2 * 4.0 * double(m.layerParameters()) : 0;
    EXPECT_NEAR(states, expected[zero] + slack, 1e-6 * psi) << zero;
  }
  Strategy off;
  off.dp = 64;
  off.dtype = "f32";
  off.offloadOptimizer = true;
  Memory mem = sim.memory(m, off)[0];
  EXPECT_EQ(mem.optimizer, 0);
  EXPECT_NEAR(mem.host, 8 * psi, 1e-6 * psi);
}

// Korthikanti et al. (2022), Table 2, at 16-bit activations.
TEST(PlannerTest, ActivationMemory) {
  TransformerSpec m = model("megatron-175b");
  double s = m.seq, b = 2, h = m.hidden, a = m.heads, t = 8;
  double sbh = s * b * h;
  Strategy st;
  st.microBatchSize = 2;
  st.tp = 1;
  EXPECT_NEAR(layerActivationBytes(m, st), sbh * (34 + 5 * a * s / h), 1);
  st.tp = 8;
  EXPECT_NEAR(layerActivationBytes(m, st),
              sbh * (10 + 24 / t + 5 * a * s / (h * t)), 1);
  st.sequenceParallel = true;
  EXPECT_NEAR(layerActivationBytes(m, st), sbh / t * (34 + 5 * a * s / h), 1);
  st.recompute = Recompute::Selective;
  EXPECT_NEAR(layerActivationBytes(m, st), 34 * sbh / t, 1);
  st.sequenceParallel = false;
  st.recompute = Recompute::Full;
  EXPECT_NEAR(layerActivationBytes(m, st), 2 * sbh, 1);
}

TEST(PlannerTest, CollectivesFollowTheTopology) {
  ClusterSpec c = shipped("dgx-a100", 4);
  CostModel cost(c, 312e12);
  // Tensor-parallel ranks share a node; data-parallel ranks 8 apart do not.
  Group tp = axisGroup(8, 1, 8), dp = axisGroup(4, 8, 8);
  EXPECT_EQ(tp.nodes(), 1);
  EXPECT_EQ(dp.nodes(), 4);
  EXPECT_EQ(dp.perNode, 1);
  Group mixed = axisGroup(8, 2, 8); // 4 per node over 2 nodes
  EXPECT_EQ(mixed.perNode, 4);
  EXPECT_EQ(mixed.nodes(), 2);
  double bytes = 1e9;
  double nvlink = cost.collective(CollectiveKind::AllReduce, bytes, tp);
  EXPECT_NEAR(nvlink, 2 * 7.0 / 8 * bytes / (300e9 * 0.8) + 14 * 3e-6, 1e-9);
  double ib = cost.collective(CollectiveKind::AllReduce, bytes, dp);
  EXPECT_NEAR(ib, 2 * 3.0 / 4 * bytes / (25e9 * 0.8) + 6 * 5e-6, 1e-9);
  // Four members per node drive four network links.
  EXPECT_NEAR(cost.link(mixed).bandwidth, 4 * 25e9, 1);
  EXPECT_EQ(cost.collective(CollectiveKind::AllGather, bytes, Group{}), 0);
  // A small all-reduce over many nodes takes the tree.
  Group wide = axisGroup(512, 8, 8);
  double small = cost.collective(CollectiveKind::AllReduce, 1e3, wide);
  EXPECT_LT(small, 2 * 511 * 5e-6);
}

// A link's call latency is paid once per collective, beside its steps'.
TEST(PlannerTest, CallLatencyPerCollective) {
  ClusterSpec c = shipped("dgx-a100", 1), d = c;
  d.intraNode.callLatency = 1e-4;
  CostModel plain(c, 312e12), called(d, 312e12); // they keep the specs
  Group tp = axisGroup(8, 1, 8);
  double before = plain.collective(CollectiveKind::AllReduce, 1e6, tp);
  EXPECT_NEAR(called.collective(CollectiveKind::AllReduce, 1e6, tp),
              before + 1e-4, 1e-12);
  EXPECT_NEAR(called.collective(CollectiveKind::AllGather, 1e6, tp) -
                  plain.collective(CollectiveKind::AllGather, 1e6, tp),
              1e-4, 1e-12);
  EXPECT_EQ(called.collective(CollectiveKind::AllReduce, 1e6, Group{}), 0);
}

// The search simulates only the best candidates by its estimate; it must
// find what simulating every candidate finds.
TEST(PlannerTest, SearchEqualsExhaustive) {
  for (const char *name : {"gpt3-350m", "gpt3-2.7b"}) {
    ClusterSpec c = shipped("dgx-a100", 2);
    Simulator sim(c);
    TransformerSpec m = model(name);
    SearchOptions quick;
    quick.globalBatch = 64;
    quick.dtypes = {"bf16"};
    SearchOptions all = quick;
    all.simulate = 1 << 30;
    llvm::Expected<SearchResult> a = search(m, sim, quick);
    llvm::Expected<SearchResult> b = search(m, sim, all);
    ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
    ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
    EXPECT_GT(int64_t(b->best.size()), quick.simulate);
    EXPECT_EQ(a->best.front().strategy.str(), b->best.front().strategy.str())
        << name;
    EXPECT_DOUBLE_EQ(a->best.front().stepTime, b->best.front().stepTime);
  }
}

TEST(PlannerTest, RejectsWhatCannotRun) {
  ClusterSpec c = shipped("dgx-a100");
  Simulator sim(c);
  TransformerSpec m = model("gpt3-1.3b");
  Strategy st;
  st.tp = 8;
  st.microBatches = 4;
  EXPECT_EQ(sim.check(m, st), "");
  st.tp = 4;
  EXPECT_NE(sim.check(m, st).find("4 devices, but the cluster has 8"),
            std::string::npos);
  st.tp = 2;
  st.pp = 4;
  st.virtualStages = 4;
  EXPECT_NE(sim.check(m, st).find("interleaved"), std::string::npos);
  st.schedule = pc::pipeline::ScheduleKind::Interleaved;
  EXPECT_NE(sim.check(m, st).find("layers to divide evenly"),
            std::string::npos);
  llvm::Expected<Simulation> bad = sim.simulate(m, st);
  ASSERT_FALSE(bad);
  EXPECT_NE(llvm::toString(bad.takeError()).find("strategy 'dp1 tp2 pp4 v4"),
            std::string::npos);
  SearchOptions o;
  o.globalBatch = 7; // no data-parallel size but 1 divides it; still runs
  EXPECT_TRUE(bool(search(m, sim, o)));
  TransformerSpec odd = model("layers=4,hidden=96,heads=3");
  ClusterSpec one = shipped("dgx-a100", 1, 1);
  Simulator single(one);
  o.globalBatch = 1;
  EXPECT_TRUE(bool(search(odd, single, o)));
}

// The seed's guide: one GPU: offload; one node: DDP or ZeRO, and TP, ZeRO
// or PP when the model does not fit, PP without NVLink; many nodes: ZeRO or
// 3-D, DP+PP+TP+ZeRO-1 on slow networks.
TEST(PlannerTest, SeedGuide) {
  ClusterSpec slow = shipped("dgx-a100");
  slow.interNode.bandwidth = 10e9 / 8; // 10 Gb/s per device
  slow.name = "DGX A100, 10 Gb/s network";
  struct Scenario {
    const char *what;
    ClusterSpec cluster;
    const char *model;
    int64_t batch;
    std::function<bool(const Strategy &)> expected;
    const char *family;
  };
  auto singleDevice = [](const Strategy &s) {
    return s.devices() == 1 && !s.offloadOptimizer;
  };
  auto offload = [](const Strategy &s) { return s.offloadOptimizer; };
  auto ddpOrZero = [](const Strategy &s) {
    return s.tp == 1 && s.pp == 1 && s.dp > 1;
  };
  auto tpZeroOrPp = [](const Strategy &s) {
    return s.tp > 1 || s.pp > 1 || s.zero >= 1;
  };
  auto pipeline = [](const Strategy &s) { return s.pp > 1 && s.tp == 1; };
  auto zeroOr3d = [](const Strategy &s) {
    return s.zero >= 1 || (s.dp > 1) + (s.tp > 1) + (s.pp > 1) >= 2;
  };
  auto slow3d = [](const Strategy &s) {
    return s.dp > 1 && s.tp > 1 && s.pp > 1 && s.zero <= 1;
  };
  auto with = [](ClusterSpec c, int64_t nodes, int64_t perNode = 0) {
    c.nodes = nodes;
    if (perNode)
      c.devicesPerNode = perNode;
    return c;
  };
  ClusterSpec a100 = shipped("dgx-a100"), pcie = shipped("pcie-a100");
  std::vector<Scenario> scenarios = {
      {"one GPU, fits", with(a100, 1, 1), "gpt3-125m", 8, singleDevice,
       "single device"},
      {"one GPU, fits", with(a100, 1, 1), "gpt3-1.3b", 8, singleDevice,
       "single device"},
      {"one GPU, does not fit", with(a100, 1, 1), "gpt3-6.7b", 8, offload,
       "offload"},
      {"one node, fits", a100, "gpt3-350m", 64, ddpOrZero, "DDP or ZeRO"},
      {"one node, fits", a100, "gpt3-1.3b", 64, ddpOrZero, "DDP or ZeRO"},
      {"one node, does not fit", a100, "gpt3-13b", 64, tpZeroOrPp,
       "TP, ZeRO or PP"},
      {"one node without NVLink, does not fit", pcie, "gpt3-13b", 64, pipeline,
       "PP"},
      {"many nodes, fast network", with(a100, 4), "gpt3-350m", 256, ddpOrZero,
       "DDP or ZeRO"},
      {"many nodes, fast network", with(a100, 16), "gpt3-175b", 1536, zeroOr3d,
       "ZeRO or 3-D"},
      {"many nodes, fast network", with(a100, 64), "megatron-1t", 512, zeroOr3d,
       "ZeRO or 3-D"},
      {"many nodes, slow network", with(slow, 64), "gpt3-175b", 1536, slow3d,
       "DP+PP+TP+ZeRO-1"},
      {"many nodes, slow network", with(slow, 16), "gpt3-13b", 512, slow3d,
       "DP+PP+TP+ZeRO-1"},
  };
  for (const Scenario &sc : scenarios) {
    Simulator sim(sc.cluster);
    SearchOptions o;
    o.globalBatch = sc.batch;
    llvm::Expected<SearchResult> r = search(model(sc.model), sim, o);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    const Simulation &best = r->best.front();
    std::printf("%-40s %-12s %3lld devices: %s (%s), %.2f s, %.1f s search\n",
                sc.what, sc.model, (long long)sc.cluster.devices(),
                best.strategy.str().c_str(), best.strategy.family().c_str(),
                best.stepTime, r->seconds);
    EXPECT_TRUE(best.fits) << sc.what << " " << sc.model;
    EXPECT_TRUE(sc.expected(best.strategy))
        << sc.what << " " << sc.model << ": expected " << sc.family << ", got "
        << best.strategy.str();
  }
}

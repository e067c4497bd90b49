//===- gpt_hybrid.cpp - A GPT trained with DP x TP through the C++ API ----===//
//
// Builds a small GPT with the graph API: ids and labels split over the data
// parallel axis, attention and MLP weights Megatron-style over the tensor
// parallel axis (column-parallel, then row-parallel), everything else left
// to SBP propagation. Compiles a training step with AdamW, prints the plan,
// then trains and prints the loss.
//
//   gpt_hybrid [--dp N] [--tp M] [--steps K] [--layers L]
//
//===----------------------------------------------------------------------===//

#include "api/Program.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace pc::api;
using pc::runtime::CommType;
using pc::runtime::HostTensor;

int main(int argc, char **argv) {
  int64_t dp = 2, tp = 2, steps = 20, layers = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    int64_t v = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--dp"))
      dp = v;
    else if (!std::strcmp(argv[i], "--tp"))
      tp = v;
    else if (!std::strcmp(argv[i], "--steps"))
      steps = v;
    else if (!std::strcmp(argv[i], "--layers"))
      layers = v;
  }
  const int64_t batch = 4, seq = 8, hidden = 32, heads = 4, vocab = 64;
  const int64_t hd = hidden / heads;

  Graph g("gpt");
  Mesh mesh = g.mesh("mesh", {{"dp", dp}, {"tp", tp}});
  Placement data{mesh, {S(0), B}}, col{mesh, {B, S(1)}}, row{mesh, {B, S(0)}};
  Value ids = g.input("ids", {batch, seq}, DType::I64, data);
  Value labels = g.input("labels", {batch, seq}, DType::I64, data);
  Value wte = g.param("wte", {vocab, hidden}, DType::F32, Init::normal(0.02));
  Value wpe = g.param("wpe", {seq, hidden}, DType::F32, Init::normal(0.01));
  Value x = g.add(g.embedding(ids, wte), wpe);
  Value scale = g.constant(1.0 / std::sqrt(double(hd)), {});
  for (int64_t l = 0; l < layers; ++l) {
    std::string p = "h" + std::to_string(l) + ".";
    auto vec = [&](const std::string &n, Init init) {
      return g.param(p + n, {hidden}, DType::F32, init);
    };
    auto mat = [&](const std::string &n, int64_t r, int64_t c,
                   const Placement &layout) {
      return g.param(p + n, {r, c}, DType::F32, Init::normal(0.02), true,
                     layout);
    };
    Value ln = g.layerNorm(x, vec("ln1.weight", Init::ones()),
                           vec("ln1.bias", Init::zeros()));
    auto headsOf = [&](Value w, std::vector<int64_t> perm) {
      Value m = g.reshape(g.matmul(ln, w), {batch, seq, heads, hd});
      return g.transpose(m, perm);
    };
    Value q = headsOf(mat("attn.q", hidden, hidden, col), {0, 2, 1, 3});
    Value k = headsOf(mat("attn.k", hidden, hidden, col), {0, 2, 3, 1});
    Value v = headsOf(mat("attn.v", hidden, hidden, col), {0, 2, 1, 3});
    Value probs = g.softmax(g.causalMask(g.mul(g.matmul(q, k), scale)));
    Value o = g.reshape(g.transpose(g.matmul(probs, v), {0, 2, 1, 3}),
                        {batch, seq, hidden});
    x = g.add(x, g.matmul(o, mat("attn.out", hidden, hidden, row)));
    Value ln2 = g.layerNorm(x, vec("ln2.weight", Init::ones()),
                            vec("ln2.bias", Init::zeros()));
    Value f = g.gelu(g.matmul(ln2, mat("mlp.fc", hidden, 4 * hidden, col)),
                     /*approximate=*/true);
    x = g.add(x, g.matmul(f, mat("mlp.proj", 4 * hidden, hidden, row)));
  }
  Value lf =
      g.layerNorm(x, g.param("lnf.weight", {hidden}, DType::F32, Init::ones()),
                  g.param("lnf.bias", {hidden}, DType::F32, Init::zeros()));
  Value logits = g.matmul(lf, g.param("head", {hidden, vocab}, DType::F32,
                                      Init::normal(0.02), true, col));
  g.loss(g.reduceMean(g.crossEntropy(logits, labels), {0, 1}));
  if (!g.status().ok()) {
    std::fprintf(stderr, "building the graph: %s\n",
                 g.status().ToString().c_str());
    return 1;
  }

  CompileOptions options;
  options.train = true;
  options.optimizer.lr = 1e-2;
  options.optimizer.clipNorm = 1.0;
  absl::StatusOr<Program> program = compile(g, options);
  if (!program.ok()) {
    std::fprintf(stderr, "%s\n", program.status().ToString().c_str());
    return 1;
  }
  std::printf("plan for dp=%lld x tp=%lld:\n%s", (long long)dp, (long long)tp,
              program->plan().c_str());

  absl::StatusOr<std::unique_ptr<Session>> session = Session::create(*program);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
    return 1;
  }
  std::mt19937 rng(3);
  HostTensor tokens = HostTensor::zeros({batch, seq}, CommType::I64);
  HostTensor targets = HostTensor::zeros({batch, seq}, CommType::I64);
  for (int64_t i = 0; i < tokens.numel(); ++i) {
    tokens.as<int64_t>()[i] = std::uniform_int_distribution<int>(0, 63)(rng);
    targets.as<int64_t>()[i] = std::uniform_int_distribution<int>(0, 63)(rng);
  }
  if (!(*session)->feed("ids", tokens).ok() ||
      !(*session)->feed("labels", targets).ok())
    return 1;
  for (int64_t s = 0; s < steps; ++s) {
    absl::StatusOr<double> loss = (*session)->trainStep();
    if (!loss.ok()) {
      std::fprintf(stderr, "%s\n", loss.status().ToString().c_str());
      return 1;
    }
    std::printf("step %lld loss %.6f\n", (long long)s + 1, *loss);
  }
  std::printf(
      "More devices: gpt_hybrid --dp 4 --tp 2 (or scripts/demo.sh --dp 4 "
      "--tp 2) runs on 8 CPU virtual devices. GPUs: the CUDA backend builds "
      "(-DPC_ENABLE_CUDA=ON) but does not run programs yet.\n");
  return 0;
}

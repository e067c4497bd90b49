//===- mlp_data_parallel.cpp - Data-parallel MLP training via the API -----===//
//
// A two-layer MLP whose batch is split over a 1-D mesh: data parallelism
// with nothing but the input's layout. The gradients of the replicated
// weights come out partial and are all-reduced before AdamW, which the plan
// shows. Trains, prints the loss, and checks that it fell.
//
//   mlp_data_parallel [--devices N] [--steps K]
//
//===----------------------------------------------------------------------===//

#include "api/Program.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace pc::api;
using pc::runtime::CommType;
using pc::runtime::HostTensor;

int main(int argc, char **argv) {
  int64_t devices = 4, steps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--devices"))
      devices = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps"))
      steps = std::atoll(argv[i + 1]);
  }
  const int64_t batch = 16, in = 32, hidden = 64, classes = 10;
  Graph g("mlp");
  Mesh mesh = g.mesh("mesh", {{"dp", devices}});
  Value x = g.input("x", {batch, in}, DType::F32, Placement{mesh, {S(0)}});
  Value y = g.input("y", {batch}, DType::I64, Placement{mesh, {S(0)}});
  Value h = g.relu(g.add(
      g.matmul(x, g.param("w1", {in, hidden}, DType::F32, Init::normal(0.2))),
      g.param("b1", {hidden}, DType::F32, Init::zeros())));
  Value logits = g.add(g.matmul(h, g.param("w2", {hidden, classes}, DType::F32,
                                           Init::normal(0.2))),
                       g.param("b2", {classes}, DType::F32, Init::zeros()));
  g.loss(g.reduceMean(g.crossEntropy(logits, y), {0}));

  CompileOptions options;
  options.train = true;
  options.optimizer.lr = 1e-2;
  absl::StatusOr<Program> program = compile(g, options);
  if (!program.ok()) {
    std::fprintf(stderr, "%s\n", program.status().ToString().c_str());
    return 1;
  }
  std::printf("%s", program->plan().c_str());
  absl::StatusOr<std::unique_ptr<Session>> session = Session::create(*program);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", session.status().ToString().c_str());
    return 1;
  }
  std::mt19937 rng(5);
  HostTensor xs = HostTensor::zeros({batch, in}, CommType::F32);
  HostTensor ys = HostTensor::zeros({batch}, CommType::I64);
  for (int64_t i = 0; i < xs.numel(); ++i)
    xs.as<float>()[i] = std::normal_distribution<float>()(rng);
  for (int64_t i = 0; i < ys.numel(); ++i)
    ys.as<int64_t>()[i] = std::uniform_int_distribution<int>(0, 9)(rng);
  if (!(*session)->feed("x", xs).ok() || !(*session)->feed("y", ys).ok())
    return 1;
  double first = 0, loss = 0;
  for (int64_t s = 0; s < steps; ++s) {
    absl::StatusOr<double> l = (*session)->trainStep();
    if (!l.ok()) {
      std::fprintf(stderr, "%s\n", l.status().ToString().c_str());
      return 1;
    }
    loss = *l;
    if (!s)
      first = loss;
    std::printf("step %lld loss %.6f\n", (long long)s + 1, loss);
  }
  Report r = (*session)->report();
  std::printf("all-reduces per step: %lld\n",
              (long long)(r.collectives["all_reduce"] / devices));
  return loss < first ? 0 : 1;
}

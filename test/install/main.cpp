// A user's program against the installed pc: build a graph, compile a
// data-parallel training step, train three steps on two CPU devices. It
// includes every public header, so that each compiles against the
// installed tree alone.
#include "api/Files.h"
#include "api/Program.h"
#include "api/Trace.h"

#include <cstdio>
#include <vector>

using namespace pc::api;

int main() {
  Graph g("linear");
  Mesh m = g.mesh("m", {{"dp", 2}});
  Value x = g.input("x", {4, 3}, DType::F32, Placement{m, {S(0)}});
  Value w = g.param("w", {3, 2}, DType::F32, Init::normal(0.5));
  Value y = g.matmul(x, w);
  g.loss(g.reduceMean(g.mul(y, y), {0, 1}));
  CompileOptions options;
  options.train = true;
  options.optimizer.kind = "sgd";
  options.optimizer.lr = 0.1;
  absl::StatusOr<Program> program = compile(g, options);
  if (!program.ok()) {
    std::printf("error: %s\n", program.status().ToString().c_str());
    return 1;
  }
  auto session = Session::create(*program);
  if (!session.ok())
    return 1;
  std::vector<float> values(12);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
  absl::StatusOr<pc::runtime::HostTensor> input =
      pc::runtime::HostTensor::fromData<float>({4, 3}, values);
  if (!input.ok() || !(*session)->feed("x", *input).ok())
    return 1;
  double first = 0, last = 0;
  for (int s = 0; s < 3; ++s) {
    absl::StatusOr<double> loss = (*session)->trainStep();
    if (!loss.ok())
      return 1;
    (s ? last : first) = *loss;
    last = *loss;
  }
  // An untraced run has no per-op times; a missing file is an error.
  if (!opTimes((*session)->report()).empty() ||
      readNpy("no-such-file.npy").ok())
    return 1;
  std::printf("consumer trained: loss %.6f -> %.6f\n", first, last);
  return last < first ? 0 : 1;
}

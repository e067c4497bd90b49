//===- LoaderThroughput.cpp - The data loader's tokens per second ---------===//
//
//   pc-bench-loader SPEC BATCH SEQ [BATCHES]
//
// Draws BATCHES consecutive training batches of [BATCH, SEQ] from the
// dataset SPEC (docs/data.md) and reads every row of each, inputs and
// labels, as the ranks of a step together do (ids widened to i64 and
// checked against a vocabulary of 2^31). Prints the seconds per batch
// (the best of 5 passes) and the tokens per second. bench/loader.sh sets
// that against a training step of the main job's model.
//
//===----------------------------------------------------------------------===//

#include "bench/Timing.h"
#include "runtime/data/Loader.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace pc::runtime;

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: pc-bench-loader SPEC BATCH SEQ [BATCHES]\n");
    return 2;
  }
  int64_t batch = std::atoll(argv[2]), seq = std::atoll(argv[3]);
  int64_t batches = argc > 4 ? std::atoll(argv[4]) : 200;
  absl::StatusOr<data::DatasetSpec> spec = data::DatasetSpec::parse(argv[1]);
  if (!spec.ok()) {
    std::fprintf(stderr, "%s\n", spec.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<data::Dataset> dataset = data::openDataset(*spec, seq);
  if (!dataset.ok()) {
    std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str());
    return 1;
  }
  data::LoaderOptions o;
  o.batch = batch;
  o.vocabulary = int64_t(1) << 31;
  data::Loader loader(*dataset->train, o);
  bool ok = true;
  double seconds = pc::bench::best(5, [&] {
    for (int64_t b = 0; b < batches; ++b) {
      data::Batch next = loader.next();
      ok &= next.inputs.whole().ok() && next.labels.whole().ok();
    }
  });
  if (!ok) {
    std::fprintf(stderr, "reading a batch failed\n");
    return 1;
  }
  double perBatch = seconds / static_cast<double>(batches);
  std::printf("loader: %.1f us per batch of %lldx%lld, %.3g tokens/s\n",
              perBatch * 1e6, static_cast<long long>(batch),
              static_cast<long long>(seq),
              static_cast<double>(batch * seq) / perBatch);
  std::printf("loader_s_per_batch %.9f\n", perBatch);
  return 0;
}

//===- Loader.h - Batches of a split, sharded, prefetched -------*- C++ -*-===//
//
// The loader turns a split's samples into batches: (inputs, next-token
// labels) pairs of [batch, sequenceLength] ids.
//  - Order: epoch by epoch, a permutation of the split's samples drawn from
//    the seed and the epoch (a keyed bijection, so no table of the samples
//    is ever built), or the split's own order when not shuffled. A batch is
//    named by its position, the count of samples drawn before it, so the
//    whole state is one integer: a resumed run that starts at the saved
//    position sees exactly the batches the uninterrupted run would have.
//  - Sharding: a batch is an Input whose rows point into the mapped files;
//    each rank reads only the box of rows its layout gives it, so under
//    mpirun a process reads the rows of its own ranks and nothing else.
//  - Prefetching: a background thread reads ahead the pages of the next
//    batches' rows (those `wanted` says this process reads), so that a
//    step does not wait on the disk when the disk keeps up.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_DATA_LOADER_H
#define PC_RUNTIME_DATA_LOADER_H

#include "runtime/data/Dataset.h"

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace pc::runtime::data {

/// A bijection of [0, n) keyed by `key`: a four-round Feistel network on
/// the smallest power of two at least n, walked until it lands in range.
class Permutation {
public:
  Permutation(uint64_t n, uint64_t key);
  uint64_t operator()(uint64_t i) const;

private:
  uint64_t n, halfBits, halfMask;
  uint64_t keys[4];
};

struct LoaderOptions {
  int64_t batch = 1;
  uint64_t seed = 0;
  bool shuffle = true;
  /// The types the model's inputs and labels take (i32 or i64).
  CommType inputType = CommType::I64, labelType = CommType::I64;
  /// Ids must be below it (the model's vocabulary).
  int64_t vocabulary = 0;
  /// Batches read ahead; 0 reads nothing ahead.
  int64_t prefetch = 2;
  /// The rows of a batch this process reads (default: all).
  std::function<bool(int64_t row)> wanted;
};

struct Batch {
  Input inputs, labels;
  int64_t position = 0; // of its first sample
};

class Loader {
public:
  /// `split` must outlive the loader.
  Loader(const Split &split, LoaderOptions options);
  ~Loader();
  Loader(const Loader &) = delete;
  Loader &operator=(const Loader &) = delete;

  /// The batch at `position` (any position; epochs follow one another).
  Batch at(int64_t position) const;
  /// The batch at the current position; the position moves past it, and the
  /// prefetcher reads ahead from there.
  Batch next();
  int64_t position() const { return pos; }
  void seek(int64_t position);
  int64_t epochOf(int64_t position) const { return position / split.samples(); }
  const Split &source() const { return split; }
  const LoaderOptions &options() const { return opts; }
  /// Seconds the prefetcher spent reading (so far).
  double prefetchSeconds() const;

private:
  /// The file and first id of the sample at `position`.
  std::pair<const TokenFile *, int64_t> sampleAt(int64_t position) const;
  void prefetchLoop();

  const Split &split;
  LoaderOptions opts;
  int64_t pos = 0;
  mutable std::mutex mu;
  std::condition_variable cv;
  int64_t ahead = 0; // prefetched up to this position
  bool stopping = false;
  double readSeconds = 0;
  std::thread reader;
};

} // namespace pc::runtime::data

#endif // PC_RUNTIME_DATA_LOADER_H

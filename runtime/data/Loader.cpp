//===- Loader.cpp - Batches of a split, sharded, prefetched ---------------===//

#include "runtime/data/Loader.h"

#include <algorithm>
#include <chrono>

namespace pc::runtime::data {

namespace {
uint64_t mix(uint64_t x) {
  // splitmix64's finalizer: a good 64-bit mixer.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
} // namespace

Permutation::Permutation(uint64_t n, uint64_t key) : n(n) {
  uint64_t bits = 2;
  while ((uint64_t(1) << bits) < n)
    ++bits;
  bits += bits & 1; // even, so that the two halves are equal
  halfBits = bits / 2;
  halfMask = (uint64_t(1) << halfBits) - 1;
  for (int r = 0; r < 4; ++r)
    keys[r] = mix(key ^ mix(r + 1));
}

uint64_t Permutation::operator()(uint64_t i) const {
  // Cycle-walking: a bijection on [0, 2^bits) applied until it lands below
  // n restricts to a bijection on [0, n).
  do {
    uint64_t left = i >> halfBits, right = i & halfMask;
    for (uint64_t k : keys) {
      uint64_t next = left ^ (mix(right ^ k) & halfMask);
      left = right;
      right = next;
    }
    i = (left << halfBits) | right;
  } while (i >= n);
  return i;
}

Loader::Loader(const Split &split, LoaderOptions options)
    : split(split), opts(std::move(options)) {
  if (opts.prefetch > 0)
    reader = std::thread([this] { prefetchLoop(); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  cv.notify_all();
  if (reader.joinable())
    reader.join();
}

std::pair<const TokenFile *, int64_t> Loader::sampleAt(int64_t position) const {
  int64_t n = split.samples();
  int64_t epoch = position / n, i = position % n;
  if (opts.shuffle)
    i = static_cast<int64_t>(
        Permutation(n, opts.seed ^ mix(static_cast<uint64_t>(epoch)))(i));
  return split.sample(i);
}

Batch Loader::at(int64_t position) const {
  int64_t rows = opts.batch, seq = split.sequenceLength();
  std::vector<Input::Piece> in, out;
  Input::IdFormat format = split.segments().front().file->idFormat();
  for (int64_t r = 0; r < rows; ++r) {
    auto [file, first] = sampleAt(position + r);
    in.push_back(
        {{r, 0}, {1, seq}, file->at(first), std::nullopt, file->path(), first});
    out.push_back({{r, 0},
                   {1, seq},
                   file->at(first + 1),
                   std::nullopt,
                   file->path(),
                   first + 1});
  }
  // The files live as long as the split, which outlives the batch's runs.
  Batch b{Input::ids({rows, seq}, opts.inputType, format, opts.vocabulary,
                     std::move(in), nullptr),
          Input::ids({rows, seq}, opts.labelType, format, opts.vocabulary,
                     std::move(out), nullptr),
          position};
  return b;
}

Batch Loader::next() {
  Batch b = at(pos);
  {
    std::lock_guard<std::mutex> lock(mu);
    pos += opts.batch;
    ahead = std::max(ahead, pos);
  }
  cv.notify_all();
  return b;
}

void Loader::seek(int64_t position) {
  {
    std::lock_guard<std::mutex> lock(mu);
    pos = position;
    ahead = position;
  }
  cv.notify_all();
}

double Loader::prefetchSeconds() const {
  std::lock_guard<std::mutex> lock(mu);
  return readSeconds;
}

void Loader::prefetchLoop() {
  std::unique_lock<std::mutex> lock(mu);
  while (true) {
    // Up to `prefetch` batches past the position, each once.
    cv.wait(lock, [&] {
      return stopping || ahead < pos + opts.prefetch * opts.batch;
    });
    if (stopping)
      return;
    int64_t from = ahead;
    ahead += opts.batch;
    lock.unlock();
    auto start = std::chrono::steady_clock::now();
    int64_t seq = split.sequenceLength();
    for (int64_t r = 0; r < opts.batch; ++r) {
      if (opts.wanted && !opts.wanted(r))
        continue;
      auto [file, first] = sampleAt(from + r);
      file->prefetch(first, first + seq + 1);
    }
    double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    lock.lock();
    readSeconds += took;
  }
}

} // namespace pc::runtime::data

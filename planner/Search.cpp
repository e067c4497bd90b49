//===- Search.cpp - The best strategies for a model and cluster -----------===//

#include "planner/Search.h"

#include <algorithm>
#include <chrono>

namespace pc::planner {
namespace {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i)
    if (n % i == 0)
      d.push_back(i);
  return d;
}

/// How far a strategy is from the plainest one: the tie-break among equal
/// predictions (fewer parallel dimensions, no ZeRO, no recompute, no
/// offload win).
int64_t complexity(const Strategy &s) {
  return (s.tp > 1) + (s.pp > 1) + s.zero + int64_t(s.recompute) +
         2 * s.offloadOptimizer + s.sequenceParallel + (s.virtualStages > 1);
}

/// Every strategy for `n` devices, passed to `visit`.
template <typename Visit>
void enumerate(const TransformerSpec &m, const ClusterSpec &spec,
               const SearchOptions &o, Visit visit) {
  const int64_t n = spec.devices();
  const bool host = spec.hostAdamRate > 0;
  using pipeline::ScheduleKind;
  for (int64_t tp : divisors(n)) {
    if (tp > spec.devicesPerNode || m.heads % tp)
      continue;
    for (int64_t pp : divisors(n / tp)) {
      if (pp > m.layers)
        continue;
      const int64_t dp = n / tp / pp;
      if (o.globalBatch % dp)
        continue;
      for (int64_t mbs : divisors(o.globalBatch / dp)) {
        if (mbs > o.maxMicroBatchSize)
          continue;
        Strategy s;
        s.dp = dp;
        s.tp = tp;
        s.pp = pp;
        s.microBatchSize = mbs;
        s.microBatches = o.globalBatch / dp / mbs;
        // Schedules, with their virtual stages.
        std::vector<std::pair<ScheduleKind, int64_t>> schedules;
        if (pp == 1)
          schedules = {{ScheduleKind::OneFOneB, 1}};
        else {
          schedules = {{ScheduleKind::OneFOneB, 1},
                       {ScheduleKind::GPipe, 1},
                       {ScheduleKind::ZeroBubbleH1, 1}};
          for (int64_t v : {2, 3, 4, 6, 8})
            if (m.layers % (pp * v) == 0)
              schedules.push_back({ScheduleKind::Interleaved, v});
        }
        for (auto [kind, v] : schedules)
          for (int64_t zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero)
            for (Recompute r :
                 {Recompute::None, Recompute::Selective, Recompute::Full})
              for (bool sp : {false, true}) {
                if (sp && tp == 1)
                  continue;
                for (const std::string &dtype : o.dtypes)
                  for (bool offload : {false, true}) {
                    if (offload && !host)
                      continue;
                    s.schedule = kind;
                    s.virtualStages = v;
                    s.zero = zero;
                    s.recompute = r;
                    s.sequenceParallel = sp;
                    s.dtype = dtype;
                    s.offloadOptimizer = offload;
                    visit(s);
                  }
              }
      }
    }
  }
}

/// The order of the results: what fits first, then by step time, with a
/// penalty of 0.1% per step of complexity so that among near-equal plans
/// the plainer comes first; what does not fit by its memory.
double score(const Simulation &s) {
  return s.stepTime * (1 + 0.001 * double(complexity(s.strategy)));
}

bool better(const Simulation &a, const Simulation &b) {
  if (a.fits != b.fits)
    return a.fits;
  if (!a.fits)
    return a.peakMemory < b.peakMemory;
  return score(a) < score(b);
}

} // namespace

llvm::Expected<SearchResult> search(const TransformerSpec &m, Simulator &sim,
                                    const SearchOptions &o) {
  auto begin = std::chrono::steady_clock::now();
  SearchResult result;
  struct Candidate {
    Strategy s;
    double estimate = 0, memory = 0;
    bool fits = false;
  };
  std::vector<Candidate> candidates;
  const ClusterSpec &spec = sim.getSpec();
  enumerate(m, spec, o, [&](const Strategy &s) {
    ++result.considered;
    if (!sim.check(m, s).empty())
      return;
    ++result.valid;
    Candidate c;
    c.s = s;
    c.fits = sim.fits(sim.memory(m, s), &c.memory);
    result.fitting += c.fits;
    if (c.fits) {
      llvm::Expected<double> t = sim.estimate(m, s);
      if (!t) {
        llvm::consumeError(t.takeError());
        return;
      }
      c.estimate = *t;
    }
    candidates.push_back(std::move(c));
  });
  if (candidates.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "no strategy runs " + m.name + " on " + spec.name + " (" +
            std::to_string(spec.devices()) + " devices) with a global batch " +
            "of " + std::to_string(o.globalBatch) +
            ": the batch must divide by the data-parallel size and the " +
            "heads by the tensor-parallel size");
  // Fitting candidates by estimate; if none fits, the smallest.
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate &a, const Candidate &b) {
              if (a.fits != b.fits)
                return a.fits;
              return a.fits ? a.estimate < b.estimate : a.memory < b.memory;
            });
  size_t keep = std::min<size_t>(candidates.size(), size_t(o.simulate));
  for (size_t i = 0; i < keep; ++i) {
    llvm::Expected<Simulation> s = sim.simulate(m, candidates[i].s);
    if (!s)
      return s.takeError();
    result.best.push_back(std::move(*s));
  }
  std::stable_sort(result.best.begin(), result.best.end(), better);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin)
          .count();
  return result;
}

} // namespace pc::planner

//===- BoxingOptimality.cpp - The planner's bytes against the minimum -----===//
//
//   build/bench/pc-bench-boxing-optimality
//
// For every pair of layouts without partial entries on a 2x2 and a 2x2x2
// mesh (a 64x64 and a 16x16x16 f32 tensor), the bytes the boxing planner's
// plan makes the busiest rank receive, against the least it must receive:
// the elements of its new piece that its old piece lacks (a direct
// redistribution, one all-to-all-v of boxes). Prints how many pairs reach
// the minimum and the largest ratios, with their layouts: first for plans of
// 1-D collectives alone, then with the planner's redistribution step.
//
//===----------------------------------------------------------------------===//

#include "boxing/BoxingPlanner.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace pc;

namespace {

std::vector<std::vector<SbpEntry>> layouts(std::span<const int64_t> shape,
                                           std::span<const int64_t> mesh) {
  std::vector<SbpEntry> alphabet = {SbpEntry::broadcast()};
  for (size_t d = 0; d < shape.size(); ++d)
    alphabet.push_back(SbpEntry::split(d));
  std::vector<std::vector<SbpEntry>> out;
  std::vector<SbpEntry> cur(mesh.size());
  std::function<void(size_t)> rec = [&](size_t a) {
    if (a == mesh.size()) {
      if (!checkNdSbp(shape, mesh, cur))
        out.push_back(cur);
      return;
    }
    for (SbpEntry e : alphabet) {
      cur[a] = e;
      rec(a + 1);
    }
  };
  rec(0);
  return out;
}

void study(std::vector<int64_t> shape, std::vector<int64_t> mesh,
           bool redistribute) {
  const int64_t e = 4;
  boxing::CostParams params;
  params.redistribute = redistribute;
  boxing::Planner planner(params);
  auto all = layouts(shape, mesh);
  int64_t positions = product(mesh), pairs = 0, optimal = 0;
  struct Worst {
    double ratio;
    std::string what;
  };
  std::vector<Worst> worst;
  double sum = 0;
  for (const auto &src : all)
    for (const auto &dst : all) {
      if (src == dst)
        continue;
      const boxing::Plan &plan = planner.plan(shape, e, mesh, src, dst);
      int64_t planned = 0, direct = 0;
      for (int64_t p = 0; p < positions; ++p) {
        std::vector<int64_t> c = delinearize(mesh, p);
        planned = std::max(planned,
                           boxing::planBytes(plan, shape, e, mesh, c).received);
        Box have = localBox(shape, mesh, src, c);
        Box want = localBox(shape, mesh, dst, c);
        direct = std::max(
            direct,
            (product(want.sizes) - boxing::overlapVolume(have, want)) * e);
      }
      ++pairs;
      if (planned <= direct) {
        ++optimal;
        sum += 1;
        continue;
      }
      double ratio = direct ? double(planned) / double(direct) : 1e9;
      sum += direct ? ratio : 1;
      worst.push_back({ratio, formatNdSbp(src) + " -> " + formatNdSbp(dst) +
                                  ": planned " + std::to_string(planned) +
                                  " B, minimum " + std::to_string(direct) +
                                  " B"});
    }
  std::sort(worst.begin(), worst.end(),
            [](const Worst &a, const Worst &b) { return a.ratio > b.ratio; });
  std::string m, s;
  for (int64_t x : mesh)
    m += (m.empty() ? "" : "x") + std::to_string(x);
  for (int64_t x : shape)
    s += (s.empty() ? "" : "x") + std::to_string(x);
  std::printf("mesh %s, tensor %s f32, %s: %lld pairs, %lld at the minimum "
              "(%.1f%%), mean ratio %.3f\n",
              m.c_str(), s.c_str(),
              redistribute ? "with redistribution" : "1-D collectives only",
              (long long)pairs, (long long)optimal,
              100.0 * double(optimal) / double(pairs), sum / double(pairs));
  for (size_t i = 0; i < std::min<size_t>(5, worst.size()); ++i)
    std::printf("  %.2fx  %s\n", worst[i].ratio, worst[i].what.c_str());
}

} // namespace

int main() {
  for (bool redistribute : {false, true}) {
    study({64, 64}, {2, 2}, redistribute);
    study({16, 16, 16}, {2, 2, 2}, redistribute);
  }
  return 0;
}

//===- BoxingCheckerTest.cpp - Executing boxing plans on simulated ranks --===//
//
// The symbolic boxing checker. For random logical shapes (uneven ones
// included) and random source and target nd-SBPs on meshes of up to 3 axes
// and 8 devices, it
//  - builds each rank's data for the source layout from a random integer
//    tensor, decomposing partial entries into random partials;
//  - executes the planned steps with an interpreter that moves data between
//    the simulated ranks by what each step means, not by what the plan says
//    the layout becomes;
//  - checks after every step that each rank holds the piece the plan's next
//    layout assigns it, and at the end that reducing the partials gives
//    exactly the logical tensor;
//  - checks that the bytes each rank received equal the plan's exact bytes,
//    and that no rank receives more than its new piece lacks when neither
//    layout is partial (the byte optimum a redistribution reaches).
// Integers keep every reduction exact, so equality is exact.
//
//===----------------------------------------------------------------------===//

#include "boxing/BoxingPlanner.h"

#include "test/unit/SbpNotation.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <random>

using namespace pc;
using namespace pc::boxing;

namespace {

using namespace pc::sbp_notation;

/// What one simulated rank holds: a box of the logical tensor, densely.
struct Local {
  Box box;
  std::vector<int64_t> data;
};

int64_t at(const Box &box, const std::vector<int64_t> &data, const Shape &idx) {
  Shape local(idx.size());
  for (size_t d = 0; d < idx.size(); ++d)
    local[d] = idx[d] - box.offsets[d];
  return data[linearize(box.sizes, local)];
}

bool contains(const Box &box, const Shape &idx) {
  for (size_t d = 0; d < idx.size(); ++d)
    if (idx[d] < box.offsets[d] || idx[d] >= box.offsets[d] + box.sizes[d])
      return false;
  return true;
}

/// Calls fn(globalIndex) for every element of `box`.
template <typename Fn> void forEach(const Box &box, Fn fn) {
  int64_t n = product(box.sizes);
  for (int64_t e = 0; e < n; ++e) {
    Shape idx = delinearize(box.sizes, e);
    for (size_t d = 0; d < idx.size(); ++d)
      idx[d] += box.offsets[d];
    fn(idx);
  }
}

int64_t reduce(ReduceKind r, const std::vector<int64_t> &xs) {
  int64_t acc = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    switch (r) {
    case ReduceKind::Sum:
    case ReduceKind::Avg:
      acc += xs[i];
      break;
    case ReduceKind::Max:
      acc = std::max(acc, xs[i]);
      break;
    case ReduceKind::Min:
      acc = std::min(acc, xs[i]);
      break;
    }
  }
  if (r == ReduceKind::Avg) {
    EXPECT_EQ(acc % int64_t(xs.size()), 0) << "inexact average";
    acc /= int64_t(xs.size());
  }
  return acc;
}

int64_t identity(ReduceKind r) {
  if (r == ReduceKind::Max)
    return std::numeric_limits<int64_t>::min();
  if (r == ReduceKind::Min)
    return std::numeric_limits<int64_t>::max();
  return 0;
}

class Simulator {
public:
  Simulator(Shape shape, Shape mesh, std::mt19937 &rng)
      : shape(std::move(shape)), mesh(std::move(mesh)), rng(rng) {}

  /// The logical tensor in `src`, with partials decomposed at random.
  void distribute(const NdSbp &src) {
    granule = product(mesh);
    logical.resize(product(shape));
    for (int64_t &x : logical)
      x = std::uniform_int_distribution<int64_t>(-50, 50)(rng) * granule;
    int64_t ranks = product(mesh);
    // Every rank starts from the whole tensor; partial axes are decomposed
    // from the outermost inward, so that reducing from the innermost
    // outward restores it. Ranks that agree on the axes before `a` hold the
    // same values there, and get the same decomposition over axis `a`
    // whatever their later coordinates: those are broadcast, split or
    // decomposed later.
    std::vector<std::vector<int64_t>> full(ranks, logical);
    for (size_t a = 0; a < mesh.size(); ++a) {
      if (!src[a].isPartial())
        continue;
      std::map<Shape, std::vector<std::vector<int64_t>>> parts;
      for (int64_t r = 0; r < ranks; ++r) {
        Shape c = delinearize(mesh, r);
        Shape prefix(c.begin(), c.begin() + a);
        auto it = parts.find(prefix);
        if (it == parts.end())
          it = parts.emplace(prefix, decompose(src[a].reduce, full[r], mesh[a]))
                   .first;
        full[r] = it->second[c[a]];
      }
    }
    locals.assign(ranks, {});
    for (int64_t r = 0; r < ranks; ++r) {
      Box box = localBox(shape, mesh, src, delinearize(mesh, r));
      locals[r].box = box;
      forEach(box, [&](const Shape &idx) {
        locals[r].data.push_back(full[r][linearize(shape, idx)]);
      });
    }
  }

  /// Executes `step` and returns the elements each rank received.
  std::vector<int64_t> execute(const Step &step) {
    int64_t ranks = product(mesh);
    std::vector<Local> next(ranks);
    std::vector<int64_t> received(ranks, 0);
    for (int64_t r = 0; r < ranks; ++r) {
      Shape c = delinearize(mesh, r);
      Shape members = groupMembers(mesh, c, step.axes);
      int64_t self = groupIndex(mesh, c, step.axes);
      // The one thing taken from the plan: which piece a member ends with,
      // for the steps that choose pieces (the op's sizes in the IR).
      Box target = localBox(shape, mesh, step.after, c);
      Local &out = next[r];
      switch (step.kind) {
      case StepKind::AllReduce: {
        out.box = locals[r].box;
        for (int64_t m : members)
          EXPECT_EQ(locals[m].box, out.box) << "all-reduce of unequal pieces";
        out.data.resize(locals[r].data.size());
        for (size_t e = 0; e < out.data.size(); ++e) {
          std::vector<int64_t> xs;
          for (int64_t m : members)
            xs.push_back(locals[m].data[e]);
          out.data[e] = reduce(step.from().reduce, xs);
        }
        // Counted as the ring algorithm moves it: a reduce-scatter and an
        // all-gather over even chunks of the flattened piece.
        int64_t n = members.size(), total = out.data.size();
        auto chunk = [&](int64_t k) { return splitRange(total, n, k).size; };
        received[r] =
            n == 1 ? 0 : 2 * total - chunk((self + n - 1) % n) - chunk(self);
        break;
      }
      case StepKind::AllGather: {
        // The union of the members' pieces, which must tile it.
        out.box = locals[members[0]].box;
        int32_t d = step.from().dim;
        int64_t next = out.box.offsets[d];
        for (int64_t m : members) {
          EXPECT_EQ(locals[m].box.offsets[d], next) << "pieces out of order";
          next += locals[m].box.sizes[d];
        }
        out.box.sizes[d] = next - out.box.offsets[d];
        gather(out, members, r, received[r]);
        break;
      }
      case StepKind::ReduceScatter: {
        out.box = target;
        EXPECT_TRUE(within(target, locals[r].box));
        forEach(out.box, [&](const Shape &idx) {
          std::vector<int64_t> xs;
          for (int64_t m : members)
            xs.push_back(at(locals[m].box, locals[m].data, idx));
          out.data.push_back(reduce(step.from().reduce, xs));
        });
        // The ring brings a partial of every piece but the predecessor's.
        int64_t n = members.size();
        Box prevPiece =
            localBox(shape, mesh, step.after,
                     delinearize(mesh, members[(self + n - 1) % n]));
        received[r] =
            n == 1 ? 0
                   : product(locals[r].box.sizes) - product(prevPiece.sizes);
        break;
      }
      case StepKind::AllToAll:
        out.box = target;
        gather(out, members, r, received[r]);
        break;
      case StepKind::Redistribute:
        // Replicas agree only without partial entries; the group is the
        // whole mesh.
        for (const NdSbp *sbp : {&step.before, &step.after})
          for (SbpEntry e : *sbp)
            EXPECT_FALSE(e.isPartial()) << "redistribution of partials";
        EXPECT_EQ(int64_t(members.size()), ranks);
        out.box = target;
        gather(out, members, r, received[r]);
        break;
      case StepKind::LocalSlice:
        out.box = target;
        EXPECT_TRUE(within(target, locals[r].box)) << "slice outside the piece";
        forEach(out.box, [&](const Shape &idx) {
          out.data.push_back(at(locals[r].box, locals[r].data, idx));
        });
        break;
      case StepKind::LocalPartial: {
        ReduceKind k = step.to().reduce;
        out.box = target;
        bool keep =
            !(step.from().isBroadcast() && k == ReduceKind::Sum && self != 0);
        forEach(out.box, [&](const Shape &idx) {
          out.data.push_back(keep && contains(locals[r].box, idx)
                                 ? at(locals[r].box, locals[r].data, idx)
                                 : identity(k));
        });
        break;
      }
      }
    }
    locals = std::move(next);
    return received;
  }

  /// Checks that every rank holds its piece of `dst` and that the partials
  /// reduce to the logical tensor.
  void expectHolds(const NdSbp &dst) {
    int64_t ranks = product(mesh);
    for (int64_t r = 0; r < ranks; ++r)
      ASSERT_EQ(locals[r].box, localBox(shape, mesh, dst, delinearize(mesh, r)))
          << "rank " << r << " holds the wrong piece of " << formatNdSbp(dst);
    std::vector<Local> v = locals;
    for (size_t a = mesh.size(); a-- > 0;) {
      if (!dst[a].isPartial())
        continue;
      std::vector<Local> reduced = v;
      for (int64_t r = 0; r < ranks; ++r) {
        Shape members =
            groupMembers(mesh, delinearize(mesh, r), Shape{int64_t(a)});
        for (size_t e = 0; e < v[r].data.size(); ++e) {
          std::vector<int64_t> xs;
          for (int64_t m : members)
            xs.push_back(v[m].data[e]);
          reduced[r].data[e] = reduce(dst[a].reduce, xs);
        }
      }
      v = std::move(reduced);
    }
    for (int64_t r = 0; r < ranks; ++r)
      forEach(v[r].box, [&](const Shape &idx) {
        ASSERT_EQ(at(v[r].box, v[r].data, idx), logical[linearize(shape, idx)])
            << "rank " << r << " has a wrong value";
      });
  }

private:
  static bool within(const Box &inner, const Box &outer) {
    for (size_t d = 0; d < inner.sizes.size(); ++d)
      if (inner.offsets[d] < outer.offsets[d] ||
          inner.offsets[d] + inner.sizes[d] > outer.offsets[d] + outer.sizes[d])
        return false;
    return true;
  }

  /// Fills `out` from whichever member holds each element, counting the
  /// elements that came from other members.
  void gather(Local &out, const Shape &members, int64_t self, int64_t &count) {
    forEach(out.box, [&](const Shape &idx) {
      if (contains(locals[self].box, idx)) {
        out.data.push_back(at(locals[self].box, locals[self].data, idx));
        return;
      }
      for (int64_t m : members)
        if (contains(locals[m].box, idx)) {
          out.data.push_back(at(locals[m].box, locals[m].data, idx));
          ++count;
          return;
        }
      ADD_FAILURE() << "no member holds an element";
      out.data.push_back(0);
    });
  }

  /// `n` arrays that reduce by `r` to `target`.
  std::vector<std::vector<int64_t>>
  decompose(ReduceKind r, const std::vector<int64_t> &target, int64_t n) {
    std::uniform_int_distribution<int64_t> noise(-9, 9);
    std::vector<std::vector<int64_t>> out(n, target);
    for (size_t e = 0; e < target.size(); ++e) {
      int64_t exact = std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
      int64_t rest = 0;
      for (int64_t k = 0; k < n; ++k) {
        // Multiples of `granule` keep every average exact.
        int64_t x = noise(rng) * granule;
        int64_t &slot = out[k][e];
        switch (r) {
        case ReduceKind::Sum:
          // Random addends; the last member takes the rest.
          slot = k == n - 1 ? target[e] - rest : x;
          rest += x;
          break;
        case ReduceKind::Avg:
          // The target plus noise summing to zero.
          slot = target[e] + (k == n - 1 ? -rest : x);
          rest += x;
          break;
        case ReduceKind::Max:
          slot = k == exact ? target[e] : target[e] - std::abs(x);
          break;
        case ReduceKind::Min:
          slot = k == exact ? target[e] : target[e] + std::abs(x);
          break;
        }
      }
    }
    return out;
  }

  Shape shape, mesh;
  std::mt19937 &rng;
  /// The product of all mesh axis sizes: every value is a multiple of it,
  /// so that averages over any axes stay integers.
  int64_t granule = 1;
  std::vector<int64_t> logical;
  std::vector<Local> locals;
};

/// Plans src -> dst, executes the plan and checks data and bytes.
void check(const Shape &shape, const Shape &mesh, const NdSbp &src,
           const NdSbp &dst, std::mt19937 &rng, Planner &planner) {
  SCOPED_TRACE("shape " + std::to_string(shape.size()) + "-D, " +
               formatNdSbp(src) + " -> " + formatNdSbp(dst));
  const int64_t elemBytes = 4;
  const Plan &plan = planner.plan(shape, elemBytes, mesh, src, dst);
  Simulator sim(shape, mesh, rng);
  sim.distribute(src);
  int64_t ranks = product(mesh);
  std::vector<int64_t> received(ranks, 0);
  NdSbp state = src;
  for (const Step &step : plan.steps) {
    ASSERT_EQ(step.before, state) << "steps do not chain";
    std::vector<int64_t> got = sim.execute(step);
    for (int64_t r = 0; r < ranks; ++r)
      received[r] += got[r];
    state = step.after;
    sim.expectHolds(state);
  }
  ASSERT_EQ(state, dst);
  sim.expectHolds(dst);
  for (int64_t r = 0; r < ranks; ++r) {
    RankBytes bytes =
        planBytes(plan, shape, elemBytes, mesh, delinearize(mesh, r));
    EXPECT_EQ(bytes.received, received[r] * elemBytes) << "rank " << r;
  }
  auto partial = [](const NdSbp &sbp) {
    return std::any_of(sbp.begin(), sbp.end(),
                       [](SbpEntry e) { return e.isPartial(); });
  };
  if (partial(src) || partial(dst))
    return;
  // The busiest rank receives no more than the most any rank lacks.
  int64_t worst = 0, least = 0;
  for (int64_t r = 0; r < ranks; ++r) {
    worst = std::max(worst, received[r]);
    least = std::max(
        least, lackingElements(shape, mesh, src, dst, delinearize(mesh, r)));
  }
  EXPECT_LE(worst, least) << "the plan moves more than the ranks lack";
}

SbpEntry randomEntry(std::mt19937 &rng, size_t rank) {
  int k = std::uniform_int_distribution<int>(0, rank ? 7 : 4)(rng);
  if (k == 0)
    return B;
  if (k <= 4) {
    static const ReduceKind kinds[] = {ReduceKind::Sum, ReduceKind::Sum,
                                       ReduceKind::Max, ReduceKind::Avg};
    return P(kinds[k - 1]);
  }
  return S(std::uniform_int_distribution<int>(0, rank - 1)(rng));
}

TEST(BoxingChecker, RandomPairsOnMeshesUpToThreeAxes) {
  std::mt19937 rng(20261201);
  Planner planner;
  const std::vector<Shape> meshes = {
      {2}, {3}, {4}, {8}, {2, 2}, {2, 3}, {4, 2}, {2, 2, 2}, {1, 2, 3}};
  for (int iter = 0; iter < 1500; ++iter) {
    Shape mesh = meshes[iter % meshes.size()];
    Shape shape(std::uniform_int_distribution<int>(1, 3)(rng));
    for (int64_t &d : shape)
      d = std::uniform_int_distribution<int64_t>(1, 10)(rng);
    NdSbp src, dst;
    for (size_t a = 0; a < mesh.size(); ++a) {
      src.push_back(randomEntry(rng, shape.size()));
      dst.push_back(randomEntry(rng, shape.size()));
    }
    check(shape, mesh, src, dst, rng, planner);
    if (testing::Test::HasFailure())
      return;
  }
}

TEST(BoxingChecker, TheUpstreamFailures) {
  std::mt19937 rng(7);
  Planner planner;
  // [S(0), S(0)] -> [B, B] on 2x2 (upstream segfaults).
  check({8, 4}, {2, 2}, {S(0), S(0)}, {B, B}, rng, planner);
  check({10, 3}, {2, 2}, {S(0), S(0)}, {B, B}, rng, planner);
  // The axis swap (upstream returns the wrong local shape).
  check({16, 32}, {2, 4}, {S(0), S(1)}, {S(1), S(0)}, rng, planner);
  check({7, 5}, {2, 2}, {S(0), S(1)}, {S(1), S(0)}, rng, planner);
  // 10 rows over 4 (upstream rejects).
  check({10, 6}, {4}, {S(0)}, {B}, rng, planner);
  check({10, 6}, {4}, {B}, {S(0)}, rng, planner);
  check({10, 6}, {4}, {S(0)}, {S(1)}, rng, planner);
  check({10, 6}, {4}, {P()}, {S(0)}, rng, planner);
}

TEST(BoxingChecker, ExhaustivePairsOnTwoByTwoByTwo) {
  // Every pair of layouts without partials: the byte optimum everywhere.
  // (Even pieces: on uneven ones the planner prices a collective by the
  // group of position 0, which need not be the busiest.)
  std::mt19937 rng(5);
  Planner planner;
  std::vector<SbpEntry> entries = {B, S(0), S(1), S(2)};
  for (SbpEntry a : entries)
    for (SbpEntry b : entries)
      for (SbpEntry c : entries)
        for (SbpEntry d : entries)
          for (SbpEntry e : entries)
            for (SbpEntry f : entries)
              check({8, 8, 8}, {2, 2, 2}, {a, b, c}, {d, e, f}, rng, planner);
}

TEST(BoxingChecker, ExhaustivePairsOnTwoByTwo) {
  std::mt19937 rng(99);
  Planner planner;
  std::vector<SbpEntry> entries = {B, P(), P(ReduceKind::Max), S(0), S(1)};
  for (Shape shape : {Shape{4, 6}, Shape{5, 3}})
    for (SbpEntry a : entries)
      for (SbpEntry b : entries)
        for (SbpEntry c : entries)
          for (SbpEntry d : entries)
            check(shape, {2, 2}, {a, b}, {c, d}, rng, planner);
}

} // namespace

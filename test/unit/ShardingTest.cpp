//===- ShardingTest.cpp - The core sharding arithmetic --------------------===//
//
// Exact cases for the documented rules, plus exhaustive and randomized
// properties: the pieces of all mesh positions tile the logical tensor, each
// element held by exactly the positions of the non-split axes.
//
//===----------------------------------------------------------------------===//

#include "dialect/Sharding.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

using namespace pc;

namespace {

using Shape = std::vector<int64_t>;
using NdSbp = std::vector<SbpEntry>;

SbpEntry S(int32_t d) { return SbpEntry::split(d); }
const SbpEntry B = SbpEntry::broadcast();
const SbpEntry P = SbpEntry::partial();

TEST(SplitRange, FirstRemainderPartsGetOneExtra) {
  // 10 rows over 4: the first 10 mod 4 = 2 parts get 3 rows.
  EXPECT_EQ(splitRange(10, 4, 0), (Range{0, 3}));
  EXPECT_EQ(splitRange(10, 4, 1), (Range{3, 3}));
  EXPECT_EQ(splitRange(10, 4, 2), (Range{6, 2}));
  EXPECT_EQ(splitRange(10, 4, 3), (Range{8, 2}));
  // Fewer items than parts: trailing parts are empty, at the end.
  EXPECT_EQ(splitRange(2, 4, 1), (Range{1, 1}));
  EXPECT_EQ(splitRange(2, 4, 2), (Range{2, 0}));
  EXPECT_EQ(splitRange(2, 4, 3), (Range{2, 0}));
  EXPECT_EQ(splitRange(0, 3, 2), (Range{0, 0}));
  EXPECT_EQ(splitRange(12, 4, 3), (Range{9, 3}));
}

TEST(SplitRange, PartsAreContiguousAndCoverTheExtent) {
  for (int64_t n = 0; n <= 40; ++n)
    for (int64_t p = 1; p <= 9; ++p) {
      int64_t next = 0;
      for (int64_t i = 0; i < p; ++i) {
        Range r = splitRange(n, p, i);
        EXPECT_EQ(r.offset, next) << n << "/" << p << " part " << i;
        EXPECT_EQ(r.size, n / p + (i < n % p ? 1 : 0));
        next = r.offset + r.size;
      }
      EXPECT_EQ(next, n);
    }
}

TEST(MeshCoords, RowMajorRoundTrip) {
  Shape mesh = {2, 3, 4};
  EXPECT_EQ(delinearize(mesh, 0), (Shape{0, 0, 0}));
  EXPECT_EQ(delinearize(mesh, 1), (Shape{0, 0, 1}));
  EXPECT_EQ(delinearize(mesh, 4), (Shape{0, 1, 0}));
  EXPECT_EQ(delinearize(mesh, 12), (Shape{1, 0, 0}));
  EXPECT_EQ(delinearize(mesh, 23), (Shape{1, 2, 3}));
  for (int64_t i = 0; i < product(mesh); ++i)
    EXPECT_EQ(linearize(mesh, delinearize(mesh, i)), i);
  EXPECT_EQ(product(Shape{}), 1);
}

TEST(LocalBox, TwoAxesSplitTwoDims) {
  Shape t = {8, 6}, mesh = {2, 2};
  NdSbp sbp = {S(0), S(1)};
  EXPECT_EQ(localBox(t, mesh, sbp, Shape{0, 0}), (Box{{0, 0}, {4, 3}}));
  EXPECT_EQ(localBox(t, mesh, sbp, Shape{1, 0}), (Box{{4, 0}, {4, 3}}));
  EXPECT_EQ(localBox(t, mesh, sbp, Shape{1, 1}), (Box{{4, 3}, {4, 3}}));
}

TEST(LocalBox, AxisSwapGivesTransposedLocalShape) {
  // The case upstream MLIR gets wrong: [S(0), S(1)] -> [S(1), S(0)] on a
  // 2x4 mesh. A 16x32 tensor has local shape 8x8 before and 4x16 after.
  Shape t = {16, 32}, mesh = {2, 4};
  EXPECT_EQ(localShape(t, mesh, NdSbp{S(0), S(1)}, Shape{0, 0}), (Shape{8, 8}));
  EXPECT_EQ(localShape(t, mesh, NdSbp{S(1), S(0)}, Shape{0, 0}),
            (Shape{4, 16}));
}

TEST(LocalBox, TwoAxesSplitOneDimHierarchically) {
  // 10 rows, [S(0), S(0)] on 2x2: axis 0 halves 10 into 5 + 5, then axis 1
  // splits each 5 into 3 + 2.
  Shape t = {10, 3}, mesh = {2, 2};
  NdSbp sbp = {S(0), S(0)};
  EXPECT_EQ(localBox(t, mesh, sbp, Shape{0, 0}), (Box{{0, 0}, {3, 3}}));
  EXPECT_EQ(localBox(t, mesh, sbp, Shape{0, 1}), (Box{{3, 0}, {2, 3}}));
  EXPECT_EQ(localBox(t, mesh, sbp, Shape{1, 0}), (Box{{5, 0}, {3, 3}}));
  EXPECT_EQ(localBox(t, mesh, sbp, Shape{1, 1}), (Box{{8, 0}, {2, 3}}));
  EXPECT_FALSE(isEvenlySplit(t, mesh, sbp));
  EXPECT_TRUE(isEvenlySplit(Shape{12, 3}, mesh, sbp));
}

TEST(LocalBox, TenRowsOverFour) {
  // The case upstream MLIR rejects.
  Shape t = {10}, mesh = {4};
  NdSbp sbp = {S(0)};
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < 4; ++i)
    sizes.push_back(localShape(t, mesh, sbp, Shape{i})[0]);
  EXPECT_EQ(sizes, (Shape{3, 3, 2, 2}));
}

TEST(LocalBox, BroadcastAndPartialHoldTheWholePiece) {
  Shape t = {6, 4}, mesh = {2, 3};
  for (int64_t i = 0; i < 6; ++i) {
    Shape c = delinearize(mesh, i);
    EXPECT_EQ(localBox(t, mesh, NdSbp{B, P}, c), (Box{{0, 0}, {6, 4}}));
    EXPECT_EQ(localBox(t, mesh, NdSbp{P, S(1)}, c),
              (Box{{0, splitRange(4, 3, c[1]).offset},
                   {6, splitRange(4, 3, c[1]).size}}));
  }
}

TEST(LocalBox, ScalarsAreWholeEverywhere) {
  Shape t = {}, mesh = {2, 2};
  EXPECT_EQ(localBox(t, mesh, NdSbp{P, B}, Shape{1, 1}), (Box{{}, {}}));
}

TEST(CheckNdSbp, NamesTheRule) {
  EXPECT_EQ(checkNdSbp(Shape{4, 4}, Shape{2, 2}, NdSbp{S(0), B}), std::nullopt);
  EXPECT_EQ(checkNdSbp(Shape{4, 4}, Shape{2, 2}, NdSbp{S(0), B, B}, "mesh @m"),
            "SBP [S(0), B, B] has 3 entries but mesh @m has 2 axes");
  EXPECT_EQ(checkNdSbp(Shape{4, 4}, Shape{2, 2}, NdSbp{S(3), B}),
            "split dim 3 of entry 0 is out of range for a rank-2 tensor");
  EXPECT_EQ(checkNdSbp(Shape{4}, Shape{2, 0}, NdSbp{B, B}),
            "mesh axis 1 has size 0; sizes must be at least 1");
  EXPECT_EQ(checkNdSbp(Shape{-1}, Shape{2}, NdSbp{B}),
            "the logical shape has a negative or dynamic dim");
}

TEST(SbpEntry, SpellsAsTheIr) {
  EXPECT_EQ(formatNdSbp(NdSbp{S(0), B, P, SbpEntry::partial(ReduceKind::Max),
                              SbpEntry::partial(ReduceKind::Avg)}),
            "[S(0), B, P, P(max), P(avg)]");
  for (const char *name : {"sum", "max", "min", "avg"})
    EXPECT_STREQ(stringifyReduceKind(*symbolizeReduceKind(name)), name);
  EXPECT_EQ(symbolizeReduceKind("prod"), std::nullopt);
}

TEST(Groups, MembersAgreeOnTheOtherAxes) {
  Shape mesh = {2, 3};
  // Position (1, 2) is linear 5.
  EXPECT_EQ(groupMembers(mesh, Shape{1, 2}, Shape{0}), (Shape{2, 5}));
  EXPECT_EQ(groupMembers(mesh, Shape{1, 2}, Shape{1}), (Shape{3, 4, 5}));
  EXPECT_EQ(groupMembers(mesh, Shape{1, 2}, Shape{0, 1}),
            (Shape{0, 1, 2, 3, 4, 5}));
  // Axes in the other order enumerate the group column-major.
  EXPECT_EQ(groupMembers(mesh, Shape{1, 2}, Shape{1, 0}),
            (Shape{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(groupMembers(mesh, Shape{1, 2}, Shape{}), (Shape{5}));
  EXPECT_EQ(groupIndex(mesh, Shape{1, 2}, Shape{1}), 2);
  EXPECT_EQ(groupIndex(mesh, Shape{1, 2}, Shape{1, 0}), 5);
  // The index of a position is its place among the members.
  for (int64_t i = 0; i < 6; ++i) {
    Shape c = delinearize(mesh, i);
    for (Shape axes : {Shape{0}, Shape{1}, Shape{1, 0}}) {
      Shape members = groupMembers(mesh, c, axes);
      EXPECT_EQ(members[groupIndex(mesh, c, axes)], i);
    }
  }
}

TEST(Groups, ExtentsFollowTheUnevenRuleAxisByAxis) {
  // 10 rows over a 2x2 group: 5 + 5, each split 3 + 2.
  EXPECT_EQ(groupExtents(10, Shape{2, 2}, Shape{0, 1}), (Shape{3, 2, 3, 2}));
  EXPECT_EQ(groupExtents(10, Shape{4}, Shape{0}), (Shape{3, 3, 2, 2}));
  EXPECT_EQ(groupExtents(10, Shape{3, 2}, Shape{1}), (Shape{5, 5}));
  // They are the local extents of the members, for any layout whose axes
  // in the group split the dim.
  Shape mesh = {2, 3};
  for (int64_t n : {7, 12, 1}) {
    Shape t = {n, 4};
    NdSbp sbp = {S(0), S(0)};
    Shape extents = groupExtents(n, mesh, Shape{0, 1});
    for (int64_t r = 0; r < 6; ++r)
      EXPECT_EQ(localShape(t, mesh, sbp, delinearize(mesh, r))[0], extents[r]);
  }
}

/// Counts, for every element of the logical tensor, how many mesh positions
/// hold it, and checks that each is held by exactly the product of the sizes
/// of the mesh axes that do not split.
void expectTiling(const Shape &t, const Shape &mesh, const NdSbp &sbp) {
  int64_t numel = product(t);
  std::vector<int64_t> count(numel, 0);
  bool even = true;
  Shape firstSizes;
  for (int64_t r = 0; r < product(mesh); ++r) {
    Box box = localBox(t, mesh, sbp, delinearize(mesh, r));
    if (r == 0)
      firstSizes = box.sizes;
    else if (box.sizes != firstSizes)
      even = false;
    int64_t boxElems = product(box.sizes);
    for (int64_t e = 0; e < boxElems; ++e) {
      Shape local = delinearize(box.sizes, e);
      Shape global(t.size());
      for (size_t d = 0; d < t.size(); ++d) {
        global[d] = box.offsets[d] + local[d];
        ASSERT_LT(global[d], t[d]);
      }
      ++count[linearize(t, global)];
    }
  }
  int64_t replicas = 1;
  for (size_t a = 0; a < mesh.size(); ++a)
    if (!sbp[a].isSplit())
      replicas *= mesh[a];
  for (int64_t e = 0; e < numel; ++e)
    ASSERT_EQ(count[e], replicas)
        << "element " << e << " of " << formatNdSbp(sbp);
  EXPECT_EQ(isEvenlySplit(t, mesh, sbp), even) << formatNdSbp(sbp);
}

TEST(LocalBox, EverySbpOnSmallMeshesTilesTheTensor) {
  // Exhaustive over 1-3 axis meshes and all entries for a rank-2 tensor.
  std::vector<SbpEntry> choices = {S(0), S(1), B, P};
  for (Shape mesh : {Shape{4}, Shape{2, 3}, Shape{2, 2, 2}, Shape{3, 1, 2}})
    for (Shape t : {Shape{10, 7}, Shape{4, 4}, Shape{1, 9}, Shape{0, 3}}) {
      size_t n = mesh.size(), combos = 1;
      for (size_t i = 0; i < n; ++i)
        combos *= choices.size();
      for (size_t c = 0; c < combos; ++c) {
        NdSbp sbp;
        for (size_t i = 0, x = c; i < n; ++i, x /= choices.size())
          sbp.push_back(choices[x % choices.size()]);
        expectTiling(t, mesh, sbp);
      }
    }
}

TEST(LocalBox, RandomShapesTileTheTensor) {
  std::mt19937 rng(1234);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 300; ++iter) {
    Shape mesh(pick(1, 3));
    for (int64_t &m : mesh)
      m = pick(1, 4);
    Shape t(pick(0, 3));
    for (int64_t &d : t)
      d = pick(0, 11);
    NdSbp sbp;
    for (size_t a = 0; a < mesh.size(); ++a) {
      int64_t k = pick(0, t.empty() ? 1 : 2);
      sbp.push_back(k == 0 ? B : k == 1 ? P : S(pick(0, t.size() - 1)));
    }
    ASSERT_EQ(checkNdSbp(t, mesh, sbp), std::nullopt);
    expectTiling(t, mesh, sbp);
  }
}

} // namespace

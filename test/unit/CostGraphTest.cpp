//===- CostGraphTest.cpp - The auto-parallel solver against brute force ---===//
//
// Random cost graphs: chains, trees and graphs with cycles. Whatever the
// solver calls exact must equal the exhaustive minimum; what it leaves to
// local search must never beat it, and on these sizes reaches it.
//
//===----------------------------------------------------------------------===//

#include "planner/CostGraph.h"

#include <gtest/gtest.h>

#include <random>

using pc::planner::CostGraph;

namespace {

CostGraph randomGraph(std::mt19937 &rng, int nodes,
                      const std::vector<std::pair<int, int>> &edges) {
  std::uniform_int_distribution<int> states(1, 4);
  std::uniform_real_distribution<double> cost(0, 10);
  CostGraph g;
  std::vector<int> n;
  for (int i = 0; i < nodes; ++i) {
    std::vector<double> c(states(rng));
    for (double &x : c)
      x = cost(rng);
    n.push_back(int(c.size()));
    g.addNode(std::move(c));
  }
  for (auto [a, b] : edges) {
    std::vector<double> m(size_t(n[a] * n[b]));
    for (double &x : m)
      x = cost(rng);
    g.addEdge(a, b, std::move(m));
  }
  return g;
}

std::vector<std::pair<int, int>> chain(int n) {
  std::vector<std::pair<int, int>> e;
  for (int i = 1; i < n; ++i)
    e.push_back({i - 1, i});
  return e;
}

} // namespace

TEST(CostGraphTest, ChainsAndTreesAreExact) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    int n = 2 + trial % 9;
    std::vector<std::pair<int, int>> edges;
    if (trial % 2 == 0) {
      edges = chain(n);
    } else {
      for (int i = 1; i < n; ++i) // a random tree
        edges.push_back({int(rng() % i), i});
    }
    if (trial % 5 == 0 && n > 2) // a parallel edge
      edges.push_back(edges.front());
    CostGraph g = randomGraph(rng, n, edges);
    CostGraph::Result fast = g.solve(), slow = g.bruteForce();
    EXPECT_TRUE(fast.exact) << trial;
    EXPECT_EQ(fast.remaining, 0) << trial;
    EXPECT_NEAR(fast.cost, slow.cost, 1e-9) << trial;
    EXPECT_NEAR(g.evaluate(fast.choice), fast.cost, 1e-9);
  }
}

TEST(CostGraphTest, CyclesAreExactWhenSmall) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    int n = 4 + trial % 6;
    std::vector<std::pair<int, int>> edges = chain(n);
    // Chords make nodes of degree 3 that elimination cannot fold.
    for (int c = 0; c < 1 + trial % 4; ++c) {
      int a = int(rng() % n), b = int(rng() % n);
      if (a != b)
        edges.push_back({a, b});
    }
    CostGraph g = randomGraph(rng, n, edges);
    CostGraph::Result fast = g.solve(), slow = g.bruteForce();
    EXPECT_TRUE(fast.exact);
    EXPECT_NEAR(fast.cost, slow.cost, 1e-9) << trial;
  }
}

TEST(CostGraphTest, LocalSearchNeverBeatsTheMinimum) {
  std::mt19937 rng(13);
  CostGraph::Options local;
  local.exhaustiveLimit = 0; // force local search on what is left
  int reached = 0, trials = 100;
  for (int trial = 0; trial < trials; ++trial) {
    int n = 6;
    std::vector<std::pair<int, int>> edges;
    for (int a = 0; a < n; ++a) // complete: nothing eliminates
      for (int b = a + 1; b < n; ++b)
        edges.push_back({a, b});
    CostGraph g = randomGraph(rng, n, edges);
    CostGraph::Result fast = g.solve(local), slow = g.bruteForce();
    EXPECT_FALSE(fast.exact);
    EXPECT_GE(fast.cost, slow.cost - 1e-9);
    reached += std::abs(fast.cost - slow.cost) < 1e-9;
  }
  // Two starts and coordinate descent find most minima of these graphs.
  EXPECT_GT(reached, trials / 2);
}

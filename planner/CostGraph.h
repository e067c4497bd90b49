//===- CostGraph.h - Choosing one state per node at least total cost -*- C++
//-*-===//
//
// The combinatorial core of auto-parallel planning: each node (an op, a
// parameter, an input) picks one of its states (its SBP signatures or
// layouts); each node has a cost per state, each edge a cost per pair of
// its ends' states (the boxing between them). solve() minimizes the sum.
//
// The problem is NP-hard in general, so solve() works as OneFlow's SBP
// planner and the compilers after it do: it eliminates what it can exactly
// - a node with one neighbour folds into that neighbour's costs, a node
// with two into an edge between them, parallel edges add up - and then
// solves what is left exactly when its state space is small, else by
// local search (each node in turn takes its best state given its
// neighbours', until none improves). Chains and trees eliminate
// completely, so their answer is exact.
//
//===----------------------------------------------------------------------===//

#ifndef PC_PLANNER_COSTGRAPH_H
#define PC_PLANNER_COSTGRAPH_H

#include <cstdint>
#include <vector>

namespace pc::planner {

class CostGraph {
public:
  /// A node with one cost per state; returns its id.
  int addNode(std::vector<double> costs);
  /// An edge whose cost for states (x of a, y of b) is
  /// costs[x * states(b) + y]; returns its id. Edges between the same
  /// nodes add up.
  int addEdge(int a, int b, std::vector<double> costs);

  /// Replaces a node's costs (same number of states).
  void setNodeCosts(int node, std::vector<double> costs);
  /// Replaces an edge's costs (same shape).
  void setEdgeCosts(int edge, std::vector<double> costs);

  int size() const { return int(nodes.size()); }
  int states(int node) const { return int(nodes[node].size()); }
  /// The total cost of `choice` (one state per node).
  double evaluate(const std::vector<int> &choice) const;

  struct Options {
    /// What is left after elimination is solved exhaustively up to this
    /// many combinations.
    double exhaustiveLimit = 1e6;
    /// Local-search sweeps at most.
    int sweeps = 100;
  };
  struct Result {
    std::vector<int> choice;
    double cost = 0;
    /// The choice is a minimum (nothing was left to local search).
    bool exact = false;
    int eliminated = 0; // nodes folded into others
    int remaining = 0;  // nodes solved after elimination
  };
  Result solve(const Options &options) const;
  Result solve() const { return solve(Options{}); }

  /// Every combination, for tests; fails (empty choice) past `limit`.
  Result bruteForce(double limit = 1e7) const;

private:
  struct Edge {
    int a, b;
    std::vector<double> costs; // states(a) x states(b)
  };
  std::vector<std::vector<double>> nodes;
  std::vector<Edge> edges;
};

} // namespace pc::planner

#endif // PC_PLANNER_COSTGRAPH_H

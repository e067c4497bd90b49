//===- CostGraph.cpp - Choosing one state per node at least total cost ----===//

#include "planner/CostGraph.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>

namespace pc::planner {

int CostGraph::addNode(std::vector<double> costs) {
  assert(!costs.empty() && "a node needs at least one state");
  nodes.push_back(std::move(costs));
  return int(nodes.size()) - 1;
}

void CostGraph::setNodeCosts(int node, std::vector<double> costs) {
  assert(costs.size() == nodes[node].size());
  nodes[node] = std::move(costs);
}

int CostGraph::addEdge(int a, int b, std::vector<double> costs) {
  assert(a != b && costs.size() == nodes[a].size() * nodes[b].size());
  edges.push_back({a, b, std::move(costs)});
  return int(edges.size()) - 1;
}

void CostGraph::setEdgeCosts(int edge, std::vector<double> costs) {
  assert(costs.size() == edges[edge].costs.size());
  edges[edge].costs = std::move(costs);
}

double CostGraph::evaluate(const std::vector<int> &choice) const {
  double total = 0;
  for (size_t n = 0; n < nodes.size(); ++n)
    total += nodes[n][choice[n]];
  for (const Edge &e : edges)
    total += e.costs[size_t(choice[e.a]) * nodes[e.b].size() + choice[e.b]];
  return total;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The graph being reduced: nodes' costs, live edges, adjacency.
struct Work {
  std::vector<std::vector<double>> cost;
  struct Edge {
    int a, b;
    std::vector<double> m;
    bool alive = true;
  };
  std::vector<Edge> edges;
  std::vector<std::map<int, int>> adj; // neighbour -> edge
  std::vector<bool> alive;

  size_t n(int v) const { return cost[v].size(); }

  /// The cost of edge `e` with `u` in state `su` and its other end in `sv`.
  double at(int e, int u, size_t su, size_t sv) const {
    const Edge &x = edges[e];
    return x.a == u ? x.m[su * n(x.b) + sv] : x.m[sv * n(x.b) + su];
  }

  /// Adds `m` (states(u) x states(w)) to the edge between u and w.
  void add(int u, int w, std::vector<double> m) {
    auto it = adj[u].find(w);
    if (it == adj[u].end()) {
      edges.push_back({u, w, std::move(m)});
      int e = int(edges.size()) - 1;
      adj[u][w] = e;
      adj[w][u] = e;
      return;
    }
    Edge &x = edges[it->second];
    for (size_t su = 0; su < n(u); ++su)
      for (size_t sw = 0; sw < n(w); ++sw)
        (x.a == u ? x.m[su * n(w) + sw] : x.m[sw * n(u) + su]) +=
            m[su * n(w) + sw];
  }

  void remove(int v) {
    for (auto [w, e] : adj[v]) {
      adj[w].erase(v);
      edges[e].alive = false;
    }
    adj[v].clear();
    alive[v] = false;
  }
};

/// How an eliminated node's state follows from its neighbours'.
struct Record {
  int v, u = -1, w = -1;
  std::vector<int> table;
};

} // namespace

CostGraph::Result CostGraph::solve(const Options &options) const {
  const int N = size();
  Work g;
  g.cost = nodes;
  g.adj.resize(N);
  g.alive.assign(N, true);
  for (const Edge &e : edges)
    g.add(e.a, e.b, e.costs);

  // Elimination of nodes of degree 0, 1 and 2.
  std::vector<Record> records;
  std::vector<int> work;
  for (int v = N - 1; v >= 0; --v)
    work.push_back(v);
  while (!work.empty()) {
    int v = work.back();
    work.pop_back();
    if (!g.alive[v] || g.adj[v].size() > 2)
      continue;
    Record r{v};
    const size_t sv = g.n(v);
    if (g.adj[v].empty()) {
      r.table = {int(std::min_element(g.cost[v].begin(), g.cost[v].end()) -
                     g.cost[v].begin())};
    } else if (g.adj[v].size() == 1) {
      auto [u, e] = *g.adj[v].begin();
      r.u = u;
      r.table.resize(g.n(u));
      for (size_t su = 0; su < g.n(u); ++su) {
        double best = kInf;
        for (size_t x = 0; x < sv; ++x) {
          double c = g.at(e, u, su, x) + g.cost[v][x];
          if (c < best) {
            best = c;
            r.table[su] = int(x);
          }
        }
        g.cost[u][su] += best;
      }
      work.push_back(u);
    } else {
      auto it = g.adj[v].begin();
      auto [u, eu] = *it++;
      auto [w, ew] = *it;
      // Bounded, so that a pair of wide neighbours never stalls a plan.
      if (double(g.n(u)) * double(sv) * double(g.n(w)) > 4e6)
        continue;
      r.u = u;
      r.w = w;
      std::vector<double> m(g.n(u) * g.n(w), kInf);
      r.table.assign(m.size(), 0);
      for (size_t su = 0; su < g.n(u); ++su)
        for (size_t x = 0; x < sv; ++x) {
          double left = g.at(eu, u, su, x) + g.cost[v][x];
          for (size_t sw = 0; sw < g.n(w); ++sw) {
            double c = left + g.at(ew, w, sw, x);
            if (c < m[su * g.n(w) + sw]) {
              m[su * g.n(w) + sw] = c;
              r.table[su * g.n(w) + sw] = int(x);
            }
          }
        }
      g.remove(v);
      g.add(u, w, std::move(m));
      records.push_back(std::move(r));
      work.push_back(u);
      work.push_back(w);
      continue;
    }
    g.remove(v);
    records.push_back(std::move(r));
  }

  Result result;
  result.choice.assign(N, 0);
  result.eliminated = int(records.size());
  std::vector<int> rest;
  for (int v = 0; v < N; ++v)
    if (g.alive[v])
      rest.push_back(v);
  result.remaining = int(rest.size());

  // The cost of what is left, with each node's state in `c`.
  auto local = [&](int v, size_t s, const std::vector<int> &c) {
    double total = g.cost[v][s];
    for (auto [w, e] : g.adj[v])
      total += g.at(e, v, s, size_t(c[w]));
    return total;
  };
  double combos = 1;
  for (int v : rest)
    combos *= double(g.n(v));
  if (combos <= options.exhaustiveLimit) {
    // Exhaustive over what is left: each edge once (from its lower end).
    std::vector<int> c(N, 0), best;
    double bestCost = kInf;
    for (;;) {
      double total = 0;
      for (int v : rest) {
        total += g.cost[v][c[v]];
        for (auto [w, e] : g.adj[v])
          if (w > v)
            total += g.at(e, v, size_t(c[v]), size_t(c[w]));
      }
      if (best.empty() || total < bestCost) {
        bestCost = total;
        best = c;
      }
      size_t i = 0;
      for (; i < rest.size(); ++i) {
        if (++c[rest[i]] < int(g.n(rest[i])))
          break;
        c[rest[i]] = 0;
      }
      if (i == rest.size())
        break;
    }
    result.choice = best;
    result.exact = true;
  } else {
    // Local search from two starts: each node's own best; each node's best
    // given the nodes before it.
    auto descend = [&](std::vector<int> c) {
      for (int sweep = 0; sweep < options.sweeps; ++sweep) {
        bool changed = false;
        for (int v : rest) {
          size_t best = size_t(c[v]);
          double bestCost = local(v, best, c);
          for (size_t s = 0; s < g.n(v); ++s) {
            double x = local(v, s, c);
            if (x < bestCost - 1e-12 * std::abs(bestCost)) {
              bestCost = x;
              best = s;
            }
          }
          if (int(best) != c[v]) {
            c[v] = int(best);
            changed = true;
          }
        }
        if (!changed)
          break;
      }
      return c;
    };
    std::vector<int> own(N, 0), greedy(N, 0);
    std::vector<bool> placed(N, false);
    for (int v : rest) {
      own[v] = int(std::min_element(g.cost[v].begin(), g.cost[v].end()) -
                   g.cost[v].begin());
      double bestCost = kInf;
      for (size_t s = 0; s < g.n(v); ++s) {
        double x = g.cost[v][s];
        for (auto [w, e] : g.adj[v])
          if (placed[w])
            x += g.at(e, v, s, size_t(greedy[w]));
        if (x < bestCost) {
          bestCost = x;
          greedy[v] = int(s);
        }
      }
      placed[v] = true;
    }
    auto score = [&](const std::vector<int> &c) {
      double total = 0;
      for (int v : rest)
        total += local(v, size_t(c[v]), c) + g.cost[v][c[v]];
      return total; // every edge twice, every node twice: the same order
    };
    std::vector<int> a = descend(own), b = descend(greedy);
    result.choice = score(a) <= score(b) ? a : b;
  }

  // The eliminated nodes, last first.
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    const Record &r = *it;
    if (r.u < 0)
      result.choice[r.v] = r.table[0];
    else if (r.w < 0)
      result.choice[r.v] = r.table[result.choice[r.u]];
    else
      result.choice[r.v] =
          r.table[size_t(result.choice[r.u]) * nodes[r.w].size() +
                  result.choice[r.w]];
  }
  result.cost = evaluate(result.choice);
  return result;
}

CostGraph::Result CostGraph::bruteForce(double limit) const {
  Result result;
  double combos = 1;
  for (const auto &n : nodes)
    combos *= double(n.size());
  if (combos > limit)
    return result;
  std::vector<int> c(nodes.size(), 0);
  result.cost = kInf;
  for (;;) {
    double total = evaluate(c);
    if (result.choice.empty() || total < result.cost) {
      result.cost = total;
      result.choice = c;
    }
    size_t i = 0;
    for (; i < c.size(); ++i) {
      if (++c[i] < int(nodes[i].size()))
        break;
      c[i] = 0;
    }
    if (i == c.size())
      break;
  }
  result.exact = true;
  return result;
}

} // namespace pc::planner

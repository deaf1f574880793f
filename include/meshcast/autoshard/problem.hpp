// The optimisation problem automatic sharding solves, in solver-neutral form: a pairwise cost
// graph. Every node takes one of its choices (a tensor's spec, or an op's strategy, which fixes
// the spec of the tensor it produces); a node's choice has a cost and a per-device memory; an
// edge (a tensor between its producer and a consumer) has a cost for every pair of choices (the
// reshard between the produced spec and the spec the consumer needs). Minimise the total cost with
// the memory summed over nodes under the limit. Infinite costs mark impossible choices.
//
// Reductions tie nodes together: node v follows representative rep[v] through map[v] (the choice
// of v for each choice of its representative, -1 where none fits). `reduce` builds the smaller
// problem over representatives; `expand` maps its solution back.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../core/detail/deadline.hpp"
#include "../core/detail/number_text.hpp"
#include "../core/error.hpp"

namespace meshcast::autoshard {

inline constexpr double infinite_cost = std::numeric_limits<double>::infinity();

struct factor_graph {
  struct edge {
    int u = 0, v = 0;           ///< u < v not required; cost is k_u x k_v, row-major (u's choice major)
    std::vector<double> cost;
  };
  std::vector<std::vector<double>> cost;    ///< per node, per choice
  std::vector<std::vector<double>> memory;  ///< per node, per choice: bytes per device
  std::vector<edge> edges;
  double memory_limit = std::numeric_limits<double>::infinity();

  int nodes() const noexcept { return static_cast<int>(cost.size()); }
  int choices(int v) const noexcept { return static_cast<int>(cost[static_cast<std::size_t>(v)].size()); }
  double edge_cost(const edge& e, int i, int j) const noexcept {
    return e.cost[static_cast<std::size_t>(i) * cost[static_cast<std::size_t>(e.v)].size() + static_cast<std::size_t>(j)];
  }
  double objective(const std::vector<int>& choice) const {
    double t = 0;
    for (int v = 0; v < nodes(); ++v) t += cost[v][choice[v]];
    for (const edge& e : edges) t += edge_cost(e, choice[e.u], choice[e.v]);
    return t;
  }
  double memory_of(const std::vector<int>& choice) const {
    double b = 0;
    for (int v = 0; v < nodes(); ++v) b += memory[v][choice[v]];
    return b;
  }
  bool fits(const std::vector<int>& choice) const { return memory_of(choice) <= memory_limit * (1 + 1e-12); }
  /// Binary and continuous variables of the ILP in Alpa's form (one per choice, one per edge pair).
  std::size_t ilp_columns() const {
    std::size_t n = 0;
    for (const auto& c : cost) n += c.size();
    for (const edge& e : edges) n += e.cost.size();
    return n;
  }
};

/// Node v follows rep[v] through map[v] (identity for its own representative).
struct reduction {
  std::vector<int> rep;
  std::vector<std::vector<int>> map;
  bool lossy = false;  ///< whether the tied problem may miss the optimum of the full one

  static reduction identity(const factor_graph& p) {
    reduction r;
    r.rep.resize(static_cast<std::size_t>(p.nodes()));
    r.map.resize(r.rep.size());
    for (int v = 0; v < p.nodes(); ++v) {
      r.rep[v] = v;
      for (int i = 0; i < p.choices(v); ++i) r.map[v].push_back(i);
    }
    return r;
  }
  /// Ties node v to node r (a representative) through m (v's choice per choice of r).
  void tie(int v, int r, const std::vector<int>& m) {
    rep[v] = r;
    map[v] = m;
    lossy = true;
  }
  int representatives() const {
    int n = 0;
    for (std::size_t v = 0; v < rep.size(); ++v) n += rep[v] == static_cast<int>(v);
    return n;
  }
};

/// The problem over representatives; `index[v]` is the reduced node of representative v (-1 else).
struct reduced_problem {
  factor_graph graph;
  std::vector<int> index;
};

inline reduced_problem reduce(const factor_graph& p, const reduction& r) {
  reduced_problem out;
  out.index.assign(static_cast<std::size_t>(p.nodes()), -1);
  for (int v = 0; v < p.nodes(); ++v)
    if (r.rep[v] == v) {
      out.index[v] = out.graph.nodes();
      out.graph.cost.emplace_back(static_cast<std::size_t>(p.choices(v)), 0.0);
      out.graph.memory.emplace_back(static_cast<std::size_t>(p.choices(v)), 0.0);
    }
  out.graph.memory_limit = p.memory_limit;
  auto pick = [&](int v, int i) { return r.map[v][static_cast<std::size_t>(i)]; };
  for (int v = 0; v < p.nodes(); ++v) {
    const int n = out.index[r.rep[v]];
    for (int i = 0; i < out.graph.choices(n); ++i) {
      const int c = pick(v, i);
      out.graph.cost[n][i] += c < 0 ? infinite_cost : p.cost[v][c];
      if (c >= 0) out.graph.memory[n][i] += p.memory[v][c];
    }
  }
  std::vector<int> slot;  // reduced edge of each (a, b) pair, found through a per-node list
  std::vector<std::vector<std::pair<int, int>>> by_node(static_cast<std::size_t>(out.graph.nodes()));
  for (const auto& e : p.edges) {
    int a = out.index[r.rep[e.u]], b = out.index[r.rep[e.v]];
    if (a == b) {
      for (int i = 0; i < out.graph.choices(a); ++i) {
        const int cu = pick(e.u, i), cv = pick(e.v, i);
        out.graph.cost[a][i] += cu < 0 || cv < 0 ? infinite_cost : p.edge_cost(e, cu, cv);
      }
      continue;
    }
    const bool flip = a > b;
    const int x = flip ? b : a, y = flip ? a : b;
    int found = -1;
    for (auto [other, idx] : by_node[x])
      if (other == y) found = idx;
    if (found < 0) {
      found = static_cast<int>(out.graph.edges.size());
      by_node[x].push_back({y, found});
      out.graph.edges.push_back({x, y, std::vector<double>(static_cast<std::size_t>(out.graph.choices(x)) *
                                                               static_cast<std::size_t>(out.graph.choices(y)),
                                                           0.0)});
    }
    auto& m = out.graph.edges[found].cost;
    const int kx = out.graph.choices(x), ky = out.graph.choices(y);
    const int nx = flip ? e.v : e.u, ny = flip ? e.u : e.v;  // original nodes on the x and y sides
    for (int i = 0; i < kx; ++i) {
      const int ci = pick(nx, i);
      for (int j = 0; j < ky; ++j) {
        const int cj = pick(ny, j);
        double c = infinite_cost;
        if (ci >= 0 && cj >= 0) c = flip ? p.edge_cost(e, cj, ci) : p.edge_cost(e, ci, cj);
        m[static_cast<std::size_t>(i) * ky + j] += c;
      }
    }
  }
  return out;
}

/// The full problem's choices from the reduced problem's (-1 where a tie has no fitting choice).
inline std::vector<int> expand(const reduction& r, const reduced_problem& rp, const std::vector<int>& reduced_choice) {
  std::vector<int> c(r.rep.size());
  for (std::size_t v = 0; v < c.size(); ++v)
    c[v] = r.map[v][static_cast<std::size_t>(reduced_choice[rp.index[r.rep[v]]])];
  return c;
}

/// Thrown when a time limit runs out before any answer exists (core/error.hpp).
using meshcast::time_limit_reached;

/// A point in time that searches check against: the library's one deadline
/// (core/detail/deadline.hpp), with automatic sharding's names. A limit beyond the longest the
/// library accepts (max_time_limit_s, about 11.6 days) means no limit.
struct deadline : meshcast::detail::deadline {
  double limit_s = 0;
  deadline(double seconds, double limit) : meshcast::detail::deadline(seconds, "a time limit"), limit_s(limit) {}
  static deadline after(double seconds) { return {std::clamp(seconds, 0.0, max_time_limit_s), seconds}; }
  bool passed() const { return expired(); }
  double left_s() const { return remaining_s(); }
  /// Throws `time_limit_reached` naming `doing` once the deadline has passed.
  void check(const char* doing) const {
    if (passed())
      throw time_limit_reached("time limit of " + meshcast::detail::number(limit_s) + " s reached while " + doing);
  }
};

}  // namespace meshcast::autoshard

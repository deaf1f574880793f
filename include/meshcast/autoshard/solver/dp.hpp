// dp: exact dynamic programming for graphs whose tensors form chains and trees.
//
// Nodes with a single choice (tensors with a fixed spec) are folded into their neighbours first,
// so a graph whose only cycles pass through fixed tensors still qualifies. On the remaining
// forest, costs flow from the leaves to a root (min over the child's choices for every choice of
// its parent), then choices flow back: O(sum over edges of k_u x k_v), no recursion. The memory
// limit is not part of the recursion: the answer is exact when the unconstrained optimum fits,
// and refused otherwise.
#pragma once

#include <numeric>

#include "../solver.hpp"
#include "../../core/detail/number_text.hpp"

namespace meshcast::autoshard {

struct dp {
  static constexpr std::string_view name = "dp";

  const char* supports(const sharding_problem& sp) const {
    return forest(sp.full) ? nullptr
                           : "the graph has a cycle through tensors that are not fixed (a tensor used twice, a "
                             "residual connection): the dp solver handles chains and trees; use ilp or greedy";
  }

  solve_result solve(const sharding_problem& sp) const {
    const factor_graph& p = sp.full;
    if (const char* why = supports(sp)) throw error(std::string("dp: ") + why);
    const int n = p.nodes();
    std::vector<std::vector<double>> unary = p.cost;
    std::vector<int> choice(static_cast<std::size_t>(n), -1);
    // Fold fixed nodes.
    std::vector<std::vector<std::pair<int, bool>>> adj(static_cast<std::size_t>(n));  // (edge, this is u)
    for (std::size_t e = 0; e < p.edges.size(); ++e) {
      const auto& x = p.edges[e];
      const bool fu = p.choices(x.u) == 1, fv = p.choices(x.v) == 1;
      if (fu && fv) continue;
      if (fu) {
        for (int j = 0; j < p.choices(x.v); ++j) unary[x.v][j] += p.edge_cost(x, 0, j);
      } else if (fv) {
        for (int i = 0; i < p.choices(x.u); ++i) unary[x.u][i] += p.edge_cost(x, i, 0);
      } else {
        adj[x.u].push_back({static_cast<int>(e), true});
        adj[x.v].push_back({static_cast<int>(e), false});
      }
    }
    // Breadth-first order of every tree, parents before children.
    std::vector<int> order, parent(static_cast<std::size_t>(n), -1), parent_edge(static_cast<std::size_t>(n), -1);
    std::vector<char> seen(static_cast<std::size_t>(n), 0);
    std::vector<char> up_is_u(static_cast<std::size_t>(n), 0);  // node is the u side of its parent edge
    for (int root = 0; root < n; ++root) {
      if (seen[root]) continue;
      seen[root] = 1;
      std::size_t head = order.size();
      order.push_back(root);
      while (head < order.size()) {
        const int v = order[head++];
        for (auto [e, is_u] : adj[v]) {
          const int w = is_u ? p.edges[e].v : p.edges[e].u;
          if (seen[w]) continue;
          seen[w] = 1;
          parent[w] = v;
          parent_edge[w] = e;
          up_is_u[w] = !is_u;  // w is u when v is the edge's v side
          order.push_back(w);
        }
      }
    }
    // Leaves to roots: fold each node's table into its parent, remembering the best child choice.
    std::vector<std::vector<int>> best_child(static_cast<std::size_t>(n));
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      sp.limit.check("running the dynamic program");
      const int v = *it, pv = parent[v];
      if (pv < 0) continue;
      const auto& x = p.edges[parent_edge[v]];
      best_child[v].assign(static_cast<std::size_t>(p.choices(pv)), 0);
      for (int j = 0; j < p.choices(pv); ++j) {
        double best = infinite_cost;
        int pick = 0;
        for (int i = 0; i < p.choices(v); ++i) {
          const double c = unary[v][i] + (up_is_u[v] ? p.edge_cost(x, i, j) : p.edge_cost(x, j, i));
          if (c < best) best = c, pick = i;
        }
        unary[pv][j] += best;
        best_child[v][j] = pick;
      }
    }
    for (int v : order) {
      if (parent[v] < 0) {
        int pick = 0;
        for (int i = 1; i < p.choices(v); ++i)
          if (unary[v][i] < unary[v][pick]) pick = i;
        choice[v] = pick;
      } else {
        choice[v] = best_child[v][choice[parent[v]]];
      }
    }
    if (!p.fits(choice))
      throw error("dp: its optimum needs " + meshcast::detail::number(p.memory_of(choice)) +
                  " bytes per device, over the memory limit of " + meshcast::detail::number(p.memory_limit) +
                  " (the dp solver does not trade cost for memory: use ilp)");
    solve_result r;
    r.choice = std::move(choice);
    r.proven_optimal = p.objective(r.choice) < infinite_cost;
    r.bound = r.proven_optimal ? p.objective(r.choice) : 0;
    r.nodes = n;
    for (int v = 0; v < n; ++v) r.variables += static_cast<std::size_t>(p.choices(v));
    for (const auto& e : p.edges) r.nonzeros += e.cost.size();
    return r;
  }

  /// Whether the edges between nodes with more than one choice form a forest (union-find).
  static bool forest(const factor_graph& p) {
    std::vector<int> up(static_cast<std::size_t>(p.nodes()));
    std::iota(up.begin(), up.end(), 0);
    auto find = [&](int x) {
      while (up[x] != x) x = up[x] = up[up[x]];
      return x;
    };
    for (const auto& e : p.edges) {
      if (p.choices(e.u) == 1 || p.choices(e.v) == 1) continue;
      const int a = find(e.u), b = find(e.v);
      if (a == b) return false;
      up[a] = b;
    }
    return true;
  }
};

}  // namespace meshcast::autoshard

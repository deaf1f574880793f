// greedy: the baseline. Ops in topological order each take the choice that is cheapest against
// what is already placed (an input or parameter not yet placed takes its best spec for that
// choice), then single-node moves improve it while they can. Over the memory limit, it gives up
// cost for memory where that is cheapest per byte.
#pragma once

#include <limits>

#include "../solver.hpp"
#include "../../core/detail/number_text.hpp"

namespace meshcast::autoshard {

struct greedy {
  static constexpr std::string_view name = "greedy";
  const char* supports(const sharding_problem&) const { return nullptr; }

  solve_result solve(const sharding_problem& sp) const {
    const factor_graph& p = sp.full;
    const auto inc = detail::incidence(p);
    std::vector<int> choice(static_cast<std::size_t>(p.nodes()), -1);
    // Nodes without edges to earlier nodes first appear as someone's neighbour: visit the nodes
    // that have an edge from an earlier node (op outputs) in order; the rest are placed on demand.
    for (int v = 0; v < p.nodes(); ++v) {
      sp.limit.check("placing ops greedily");
      bool is_op = false;
      for (auto [e, is_u] : inc[v]) is_op |= !is_u;
      if (!is_op) continue;
      double best = infinite_cost;
      int pick = 0;
      for (int j = 0; j < p.choices(v); ++j) {
        if (j % 16 == 15) sp.limit.check("placing ops greedily");
        double c = detail::local_cost(p, inc, choice, v, j);
        for (auto [e, is_u] : inc[v]) {
          const auto& x = p.edges[e];
          if (is_u || choice[x.u] >= 0) continue;
          double m = infinite_cost;
          for (int i = 0; i < p.choices(x.u); ++i) m = std::min(m, p.cost[x.u][i] + p.edge_cost(x, i, j));
          c += m;
        }
        if (c < best) best = c, pick = j;
      }
      choice[v] = pick;
      for (auto [e, is_u] : inc[v]) {
        const auto& x = p.edges[e];
        if (is_u || choice[x.u] >= 0) continue;
        double m = infinite_cost;
        for (int i = 0; i < p.choices(x.u); ++i)
          if (double c = p.cost[x.u][i] + p.edge_cost(x, i, pick); c < m) m = c, choice[x.u] = i;
        if (choice[x.u] < 0) choice[x.u] = 0;
      }
    }
    for (int v = 0; v < p.nodes(); ++v)
      if (choice[v] < 0) {
        int pick = 0;
        for (int j = 1; j < p.choices(v); ++j)
          if (p.cost[v][j] < p.cost[v][pick]) pick = j;
        choice[v] = pick;
      }
    fit_memory(p, inc, choice, sp.limit);
    detail::improve(p, choice, sp.limit);
    solve_result r;
    r.choice = std::move(choice);
    r.nodes = p.nodes();
    r.variables = static_cast<std::size_t>(p.nodes());
    return r;
  }

  /// Moves nodes to choices with less memory, the cheapest per byte saved first, until it fits.
  static void fit_memory(const factor_graph& p, const std::vector<std::vector<std::pair<int, bool>>>& inc,
                         std::vector<int>& choice, const deadline& limit) {
    double memory = p.memory_of(choice);
    while (memory > p.memory_limit * (1 + 1e-12)) {
      limit.check("fitting the memory limit");
      double best = infinite_cost;
      int bv = -1, bj = -1;
      for (int v = 0; v < p.nodes(); ++v) {
        if (v % 8 == 7) limit.check("fitting the memory limit");
        const double now = detail::local_cost(p, inc, choice, v, choice[v]);
        for (int j = 0; j < p.choices(v); ++j) {
          const double saved = p.memory[v][choice[v]] - p.memory[v][j];
          if (saved <= 0) continue;
          const double extra = detail::local_cost(p, inc, choice, v, j) - now;
          if (extra == infinite_cost) continue;
          if (extra / saved < best) best = extra / saved, bv = v, bj = j;
        }
      }
      if (bv < 0)
        throw error("no assignment found within the memory limit of " + meshcast::detail::number(p.memory_limit) +
                    " bytes per device (the smallest the greedy reached needs " + meshcast::detail::number(memory) + ")");
      memory += p.memory[bv][bj] - p.memory[bv][choice[bv]];
      choice[bv] = bj;
    }
  }
};

}  // namespace meshcast::autoshard

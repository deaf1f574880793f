// The sharding-solver concept: a policy that picks one choice per node of a pairwise cost graph
// (problem.hpp), honouring the memory limit and the deadline. Built in: `ilp` (CBC, Alpa's form;
// solver/ilp.hpp, needs CBC), `dp` (exact on chains and trees), `greedy` (baseline). A user's
// own solver only has to satisfy `sharding_solver` to run through `auto_shard` (plan.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "problem.hpp"

namespace meshcast::autoshard {

/// What a solver sees: the full problem, the tied (merged and coalesced) form it may solve
/// instead, and the time left.
struct sharding_problem {
  const factor_graph& full;
  const reduction& tied;
  deadline limit;
};

struct solve_result {
  std::vector<int> choice;      ///< per node of the full problem
  bool proven_optimal = false;  ///< optimal for the full problem (not only a tied one)
  double bound = 0;             ///< a proven lower bound on the full problem's optimum (0 if none)
  // Size of the program or table the solver worked on.
  int nodes = 0;
  std::size_t variables = 0, constraints = 0, nonzeros = 0;
  bool tied = false;            ///< solved the tied problem
  std::string note;
};

template <class S>
concept sharding_solver = requires(const S& s, const sharding_problem& p) {
  { S::name } -> std::convertible_to<std::string_view>;
  { s.supports(p) } -> std::convertible_to<const char*>;
  { s.solve(p) } -> std::same_as<solve_result>;
};

namespace detail {
/// Per node: (edge index, whether the node is the edge's u side).
inline std::vector<std::vector<std::pair<int, bool>>> incidence(const factor_graph& p) {
  std::vector<std::vector<std::pair<int, bool>>> inc(static_cast<std::size_t>(p.nodes()));
  for (std::size_t e = 0; e < p.edges.size(); ++e) {
    inc[p.edges[e].u].push_back({static_cast<int>(e), true});
    inc[p.edges[e].v].push_back({static_cast<int>(e), false});
  }
  return inc;
}

/// Cost of node v taking choice j against its neighbours' current choices (-1: ignored).
inline double local_cost(const factor_graph& p, const std::vector<std::vector<std::pair<int, bool>>>& inc,
                         const std::vector<int>& choice, int v, int j) {
  double c = p.cost[v][j];
  for (auto [e, is_u] : inc[v]) {
    const auto& x = p.edges[e];
    const int other = is_u ? choice[x.v] : choice[x.u];
    if (other < 0) continue;
    c += is_u ? p.edge_cost(x, j, other) : p.edge_cost(x, other, j);
  }
  return c;
}

/// Moves single nodes to their best choice until nothing improves, the memory limit holding, or
/// the deadline passes. Returns whether it finished (a local optimum).
inline bool improve(const factor_graph& p, std::vector<int>& choice, const deadline& limit) {
  const auto inc = incidence(p);
  double memory = p.memory_of(choice);
  for (bool changed = true; changed;) {
    changed = false;
    for (int v = 0; v < p.nodes(); ++v) {
      if (limit.passed()) return false;
      const int cur = choice[v];
      double best = local_cost(p, inc, choice, v, cur);
      int pick = cur;
      for (int j = 0; j < p.choices(v); ++j) {
        if (j == cur) continue;
        if (j % 16 == 15 && limit.passed()) return false;
        if (memory - p.memory[v][cur] + p.memory[v][j] > p.memory_limit * (1 + 1e-12)) continue;
        const double c = local_cost(p, inc, choice, v, j);
        if (c < best - 1e-15 * std::max(1.0, std::abs(best))) best = c, pick = j;
      }
      if (pick != cur) {
        memory += p.memory[v][pick] - p.memory[v][cur];
        choice[v] = pick;
        changed = true;
      }
    }
  }
  return true;
}
}  // namespace detail

}  // namespace meshcast::autoshard

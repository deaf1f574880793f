// Automatic sharding in one call: builds the cost model of a graph on a mesh, runs a solver, and
// reports its answer through `evaluate`, so that the objective is the cost model's value of the
// specs returned (what `evaluate` gives for them too).
//
// The plan is ordered for execution: for each op in `graph::order()`, the reshards of its inputs
// (report.reshards with consumer == op, forward), its strategy (which mesh axes split which
// iteration dims: every device computes its local block), and its collectives (report.collectives
// with that op, forward); then the deliveries of graph outputs; then, when training, the backward
// entries in reverse order.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "cost_model.hpp"
#include "evaluate.hpp"
#include "solver.hpp"

namespace meshcast::autoshard {

struct shard_options {
  double time_limit_s = 60;  ///< for everything: cost tables, solver, report
};

struct sharding_plan {
  assignment_report report;
  std::vector<op_strategy> op_strategies;  ///< per op (graph order)
  std::string solver;
  bool proven_optimal = false;
  double solve_seconds = 0;           ///< wall time of the whole call
  double tables_seconds = 0;          ///< of which building the cost tables
  solve_result stats;                 ///< what the solver reported (its size, its note)
  std::size_t full_nodes = 0, full_columns = 0;  ///< size of the untied problem
  int tied_nodes = 0;
  std::size_t meshcast_reshards = 0;  ///< distinct reshards costed by meshcast's planner
};

/// The plan of an assignment already known (the specs of every tensor, canonical).
inline sharding_plan plan_of(cost_model& cm, const std::vector<spec_value>& specs) {
  sharding_plan p;
  p.report = evaluate(cm, specs);
  const graph& g = cm.source();
  for (std::size_t o = 0; o < g.ops().size(); ++o)
    p.op_strategies.push_back(cm.strategies(cm.node_of(g.ops()[o].output))[p.report.strategy[o]]);
  p.meshcast_reshards = cm.reshards().meshcast_plans();
  return p;
}

/// Chooses a spec for every tensor of `g` on mesh `m` with solver `s`.
template <sharding_solver S>
sharding_plan auto_shard(const graph& g, const mesh_model& m, const S& s, const shard_options& o = {}) {
  checked_real(o.time_limit_s, 0, true, "time limit");
  const auto begin = std::chrono::steady_clock::now();
  const deadline limit = deadline::after(o.time_limit_s);
  cost_model cm(g, m, limit);
  const double tables = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  const reduction tied = cm.merging_and_coalescing();
  const sharding_problem sp{cm.problem(), tied, limit};
  if (const char* why = s.supports(sp)) throw error("solver '" + std::string(S::name) + "': " + why);
  solve_result r = s.solve(sp);
  if (r.choice.size() != static_cast<std::size_t>(cm.problem().nodes()))
    throw error("solver '" + std::string(S::name) + "' returned no choice for some tensors");
  std::vector<spec_value> specs(g.tensors().size());
  for (int v = 0; v < cm.problem().nodes(); ++v) {
    if (r.choice[v] < 0 || r.choice[v] >= cm.problem().choices(v))
      throw error("solver '" + std::string(S::name) + "' returned an impossible choice");
    specs[cm.tensor_of(v)] = cm.spec(v, r.choice[v]);
  }
  sharding_plan p = plan_of(cm, specs);
  p.solver = std::string(S::name);
  p.proven_optimal = r.proven_optimal;
  p.stats = std::move(r);
  p.full_nodes = static_cast<std::size_t>(cm.problem().nodes());
  p.full_columns = cm.problem().ilp_columns();
  p.tied_nodes = tied.representatives();
  p.tables_seconds = tables;
  p.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return p;
}

}  // namespace meshcast::autoshard

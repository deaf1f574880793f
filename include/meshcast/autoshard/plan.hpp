// Automatic sharding in one call: builds the cost model of a graph on a mesh, runs a solver, and
// reports its answer through `evaluate`, so that the objective is the cost model's value of the
// specs returned (what `evaluate` gives for them too).
//
// The plan is ordered for execution (`execution_order`): for each op in `graph::order()`, the
// reshards of its inputs (report.reshards with consumer == op, forward), its strategy (which mesh
// axes split which iteration dims: every device computes its local block), and its collectives
// (report.collectives with that op, forward); then the deliveries of graph outputs; then, when
// training, the backward entries in reverse order.
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

/// One step of running a plan, in `execution_order`.
struct plan_step {
  enum class kind { reshard, compute, collective };
  kind what = kind::compute;
  bool backward = false;
  int op = -1;             ///< the op computed, reduced, or fed by the reshard (-1: a graph output's delivery)
  std::size_t index = 0;   ///< into report.reshards or report.collectives
};

/// The plan as a sequence of steps: forward, for each op in `graph::order()`, the reshards of its
/// inputs, its local compute, its collectives; the deliveries of graph outputs; then, when
/// training, the outputs' gradients back and, for each op in reverse order, the gather of its
/// output gradient, its backward compute, the reduction of its input gradients and their
/// reshards back to the inputs' specs.
inline std::vector<plan_step> execution_order(const graph& g, const assignment_report& r) {
  // Entries bucketed by op (index op + 1, so that graph-output deliveries, op -1, come first).
  const std::size_t buckets = g.ops().size() + 1;
  std::vector<std::vector<std::size_t>> reshards[2], collectives[2];
  for (auto* b : {&reshards[0], &reshards[1], &collectives[0], &collectives[1]}) b->resize(buckets);
  for (std::size_t i = 0; i < r.reshards.size(); ++i)
    reshards[r.reshards[i].backward][static_cast<std::size_t>(r.reshards[i].consumer + 1)].push_back(i);
  for (std::size_t i = 0; i < r.collectives.size(); ++i)
    collectives[r.collectives[i].backward][static_cast<std::size_t>(r.collectives[i].op + 1)].push_back(i);
  std::vector<plan_step> steps;
  auto reshards_for = [&](int op, bool backward) {
    for (std::size_t i : reshards[backward][static_cast<std::size_t>(op + 1)])
      steps.push_back({plan_step::kind::reshard, backward, op, i});
  };
  auto collectives_for = [&](int op, bool backward, bool gathers) {
    for (std::size_t i : collectives[backward][static_cast<std::size_t>(op + 1)])
      if ((r.collectives[i].step.kind == collective::all_gather) == gathers)
        steps.push_back({plan_step::kind::collective, backward, op, i});
  };
  for (int o : g.order()) {
    reshards_for(o, false);
    steps.push_back({plan_step::kind::compute, false, o, 0});
    collectives_for(o, false, false);
    collectives_for(o, false, true);
  }
  reshards_for(-1, false);
  if (g.training) {
    reshards_for(-1, true);
    for (auto it = g.order().rbegin(); it != g.order().rend(); ++it) {
      collectives_for(*it, true, true);
      steps.push_back({plan_step::kind::compute, true, *it, 0});
      collectives_for(*it, true, false);
      reshards_for(*it, true);
    }
  }
  return steps;
}

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
  const reduction tied = cm.merging_and_coalescing(limit);
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

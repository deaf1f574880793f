// Running a policy on a pipeline: its lists with their simulated times, the makespan, the bubble
// fraction, and what the policy proved.
#pragma once

#include <chrono>
#include <string>

#include "lower_bound.hpp"
#include "policy.hpp"
#include "simulate.hpp"

namespace meshcast::pipeline {

struct timeline {
  std::string policy;
  lists stages;                 ///< every stage's list, with start and end set by `simulate`
  double makespan = 0;          ///< when every stage has finished
  double compute = 0;           ///< total compute time over all stages
  double bubble_fraction = 0;   ///< 1 - compute / (stages x makespan); 0 when the makespan is 0
  double lower_bound = 0;       ///< the best lower bound known (the policy's, or `lower_bound`)
  double solve_ms = 0;          ///< wall time of the policy
  bool proven_optimal = false;  ///< the policy proved no lists finish sooner
};

/// 1 - (total compute) / (stages x makespan): the share of the stages' time not spent computing
/// (idle or communicating). 0 for a makespan of 0 or no stages. Divided one factor at a time:
/// stages x makespan overflows a double for makespans near its largest (the fraction read 1).
inline double bubble_fraction(double compute, index_t stages, double makespan) noexcept {
  return makespan > 0 && stages > 0 ? 1 - compute / makespan / static_cast<double>(stages) : 0;
}

/// Orders the transfers of `d` with policy `p` and simulates the lists; throws `meshcast::error`
/// for a bad description, `deadlock_error` if the policy returned lists that deadlock.
template <policy P>
timeline order(const description& d, const P& p, const policy_options& options = {}) {
  const graph g(d);
  const auto begin = std::chrono::steady_clock::now();
  policy_result r = p.order(g, options);
  const auto end = std::chrono::steady_clock::now();
  timeline out;
  out.policy = std::string(P::name);
  out.solve_ms = std::chrono::duration<double, std::milli>(end - begin).count();
  out.stages = std::move(r.stages);
  const simulation s = simulate(g, out.stages);
  if (s.deadlock) throw deadlock_error("policy '" + out.policy + "' returned lists that deadlock: " + s.problem);
  out.makespan = s.makespan;
  for (graph::id c = 0; c < g.compute_count(); ++c) out.compute += g.duration(c);
  out.bubble_fraction = bubble_fraction(out.compute, g.stages(), out.makespan);
  out.proven_optimal = r.proven_optimal;
  out.lower_bound = std::max(r.bound, lower_bound(g));
  return out;
}

}  // namespace meshcast::pipeline

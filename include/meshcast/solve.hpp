// Running a solver on an instance: the schedule, its simulated makespan and the lower bound.
#pragma once

#include <chrono>
#include <string>

#include "detail/deadline.hpp"
#include "lower_bound.hpp"
#include "simulate.hpp"
#include "solver.hpp"
#include "validate.hpp"

namespace meshcast {

/// Solves `in` with solver `S`; throws `meshcast::error` if the solver does not apply to it, if
/// the options are out of range, or if what the solver returns is not a valid schedule of `in`
/// (see validate.hpp).
template <solver S>
schedule solve(const instance& in, const S& s, const solver_options& options = {}) {
  detail::checked_seconds(options.time_limit_s, "the solver time limit");
  if (const char* why = s.supports(in))
    throw error("solver '" + std::string(S::name) + "' does not apply to strategy '" + in.strategy + "': " + why);
  const auto begin = std::chrono::steady_clock::now();
  solver_result r = s.solve(in, options);
  const auto end = std::chrono::steady_clock::now();
  validate_solution(in, r.ops, S::name);
  schedule out;
  out.solver = std::string(S::name);
  out.strategy = in.strategy;
  out.ops = std::move(r.ops);
  out.solve_ms = std::chrono::duration<double, std::milli>(end - begin).count();
  out.proven_optimal = r.proven_optimal;
  out.lower_bound_s = lower_bound(in).value();
  out.solver_bound_s = std::max(r.bound_s, out.lower_bound_s);
  simulate_ordered(out, in.resources);
  return out;
}

}  // namespace meshcast

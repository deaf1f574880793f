// Running a solver on an instance: the schedule, its predicted makespan under the instance's
// execution mode, that mode's lower bound and the network's physical bound.
#pragma once

#include <chrono>
#include <cmath>
#include <map>
#include <string>

#include "../core/detail/deadline.hpp"
#include "../core/detail/number_text.hpp"
#include "lower_bound.hpp"
#include "../model/simulate.hpp"
#include "solver.hpp"
#include "validate.hpp"

namespace meshcast {

/// Turns a validated answer into a schedule: transfers and their models side by side, a forward
/// waiting for every piece of the transfer it passes on.
inline schedule make_schedule(const instance& in, std::vector<op> ops) {
  schedule s;
  s.strategy = in.strategy;
  s.mode = in.mode;
  std::map<std::pair<index_t, int>, std::vector<std::int32_t>> pieces;  // (unit, part) -> positions
  for (std::size_t i = 0; i < ops.size(); ++i) pieces[{ops[i].unit, ops[i].part}].push_back(static_cast<std::int32_t>(i));
  s.transfers.reserve(ops.size());
  s.model.reserve(ops.size());
  for (op& o : ops) {
    transfer t = static_cast<transfer&&>(o);
    if (o.after >= 0) t.waits_for = pieces.at({o.unit, o.after});
    s.transfers.push_back(std::move(t));
    s.model.push_back(static_cast<transfer_model&&>(o));
  }
  return s;
}

/// Solves `in` with solver `S`; throws `meshcast::error` if the solver does not apply to it, if
/// the options are out of range, or if what the solver returns is not a valid schedule of `in`
/// (see validate.hpp: its transfers keep the instance's model) with a finite bound.
template <solver S>
schedule solve(const instance& in, const S& s, const solver_options& options = {}) {
  detail::checked_seconds(options.time_limit_s, "the solver time limit");
  if (const char* why = s.supports(in))
    throw error("solver '" + std::string(S::name) + "' does not apply to strategy '" + in.strategy + "': " + why);
  const auto begin = std::chrono::steady_clock::now();
  solver_result r = s.solve(in, options);
  const auto end = std::chrono::steady_clock::now();
  validate_solution(in, r.ops, S::name);
  if (!(std::isfinite(r.bound_s) && r.bound_s >= 0))
    throw error("solver '" + std::string(S::name) + "' returned a lower bound of " + detail::number(r.bound_s) +
                " s: a bound must be a finite number of seconds, at least 0");
  schedule out = make_schedule(in, std::move(r.ops));
  out.solver = std::string(S::name);
  out.solve_ms = std::chrono::duration<double, std::milli>(end - begin).count();
  out.proven_optimal = r.proven_optimal;
  out.lower_bound_s = lower_bound(in).value();
  out.solver_bound_s = std::max(r.bound_s, out.lower_bound_s);
  out.physical_bound_s = physical_bound(in);
  simulate(out, *in.net, in.resources);
  // A lower bound above the schedule it bounds is a false claim, printed as solver_bound_s.
  if (r.bound_s > out.makespan_s * (1 + 1e-6) + 1e-12)
    throw error("solver '" + std::string(S::name) + "' returned a lower bound of " + detail::number(r.bound_s) +
                " s, above the makespan of its own schedule, " + detail::number(out.makespan_s) + " s");
  return out;
}

}  // namespace meshcast

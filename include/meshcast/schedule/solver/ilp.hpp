// ilp: a time-indexed integer program solved by COIN-OR CBC through its C interface.
//
// Time is cut into slots of length delta (the shortest op when the horizon allows it); op
// durations are rounded up to whole slots. Binary x[u,k,j,t] says op j of option k of unit u
// starts in slot t, binary y[u,k] that unit u uses option k. Every op of the chosen option starts
// once; no resource (NIC direction or device stream) carries two ops in one slot; an op waits for
// the op named by its `after`; C >= every end; minimise C. The greedy schedule is the MIP start.
// A resource an op frees early (a chain's sender) is held for its own whole slots. When every
// such time is a whole number of slots, the optimum is the ordered model's optimum.
// The model is built only when it stays small (`max_nonzeros`) and time is left; otherwise, and
// whenever CBC ends without a complete solution, the answer is the greedy schedule.
//
// Needs CBC (Debian: coinor-libcbc-dev; link with `pkg-config --libs cbc`).
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "../../core/detail/deadline.hpp"
#include "../../core/detail/mip.hpp"
#include "../solver.hpp"
#include "../solvers.hpp"
#include "greedy.hpp"
#include "ilp/model.hpp"

namespace meshcast {

struct ilp {
  static constexpr std::string_view name = "ilp";
  int max_slots = 64;  ///< horizon length in slots, at most
  /// Largest constraint matrix built. CBC's root LP does not look at the clock, so the model is
  /// kept to what it solves well within the limit: at most this, and at most
  /// `nonzeros_per_second` times the seconds left.
  std::size_t max_nonzeros = 150'000;
  double nonzeros_per_second = 150'000;

  const char* supports(const instance&) const { return nullptr; }

  /// The parts of the program are in ilp/model.hpp; their order here is the order of its
  /// columns and rows.
  solver_result solve(const instance& in, const solver_options& options) const {
    namespace model = detail::reshard_ilp;
    const detail::deadline stop(options.time_limit_s);
    solver_options seed_options = options;
    seed_options.time_limit_s = options.time_limit_s / 4;
    const greedy::outcome seed = greedy{}.search(in, seed_options);
    auto fallback = [&] {
      solver_result r;
      r.ops = greedy::ops_of(in, seed.order, seed.choice);
      return r;
    };
    const std::optional<model::grid> grid = model::fit_grid(in, seed, max_slots);
    if (!grid) return fallback();
    {
      const double nonzeros = model::nonzeros(in, *grid);
      const double cap = std::min(static_cast<double>(max_nonzeros), nonzeros_per_second * stop.remaining_s());
      if (nonzeros > cap || stop.expired()) return fallback();
    }
    const bool exact = model::exact(in, *grid);

    detail::mip program;
    const model::variables vars = model::add_variables(program, in, *grid);
    const model::used_resources used = model::used_resources_of(in);
    model::add_unit_rows(program, in, *grid, vars);
    model::add_load_rows(program, in, *grid, vars, used);
    model::add_no_overlap_rows(program, in, *grid, vars, used);
    if (stop.expired()) return fallback();

    const std::vector<double> initial = model::mip_start(in, *grid, seed, vars, program.columns());
    // Column 0 is C, continuous; every other column is a binary.
    const detail::mip::answer answer =
        program.solve({.seconds = stop.remaining_s(), .integer_from = 1, .start = &initial});
    if (answer.values.empty() || answer.saved_solutions < 1) return fallback();
    std::optional<std::vector<op>> ops = model::read_solution(in, vars, answer.values);
    if (!ops) return fallback();
    solver_result r;
    r.ops = std::move(*ops);
    r.proven_optimal = exact && answer.proven_optimal;
    if (exact) r.bound_s = std::max(0.0, answer.best_bound) * grid->delta;
    return r;
  }
};

/// The built-in solvers and ilp: what a program built with CBC offers by name.
using solvers_with_ilp = append_t<builtin_solvers, ilp>;

}  // namespace meshcast

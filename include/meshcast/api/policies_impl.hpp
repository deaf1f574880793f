// The definitions behind policies.hpp: solving a batch under the solver and strategy the caller
// chose, as the one call's options say. Header-only mode includes this from the front ends; in
// compiled mode libmeshcast instantiates it for the default pair, and a program that names other
// policies includes it (or <meshcast/meshcast.hpp>, which does).
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

#include "../model/network.hpp"
#include "../model/schedule.hpp"
#include "../plan/plan.hpp"
#include "../schedule/solve_batch.hpp"
#include "../schedule/solver.hpp"
#include "../schedule/solver/greedy.hpp"
#include "../schedule/strategy.hpp"
#include "../schedule/strategy/auto.hpp"
#include "policies.hpp"
#include "reshard_options.hpp"

namespace meshcast::detail {

template <class Solver, class Strategy>
void solve_erased(const erased_policies& p, std::span<const plan> plans, const network& net, const reshard_options& o,
                  schedule& out) {
  static_assert(solver<Solver>, "The Solver of a reshard must model meshcast::solver (schedule/solver.hpp).");
  static_assert(strategy<Strategy>, "The Strategy of a reshard must model meshcast::strategy (schedule/strategy.hpp).");
  // Past a failed assertion, compile nothing more: the sentence above is then the only error.
  if constexpr (solver<Solver> && strategy<Strategy>) {
    // A front end passes no object only for policies that can be default-constructed (it checks).
    std::optional<Solver> own_solver;
    std::optional<Strategy> own_strategy;
    if constexpr (std::is_default_constructible_v<Solver>)
      if (!p.solver) own_solver.emplace();
    if constexpr (std::is_default_constructible_v<Strategy>)
      if (!p.strategy) own_strategy.emplace();
    const Solver& sv = p.solver ? *static_cast<const Solver*>(p.solver) : *own_solver;
    const Strategy& st = p.strategy ? *static_cast<const Strategy*>(p.strategy) : *own_strategy;
    out = solve_batch(plans, net, st, sv,
                      {.split_replicas = o.split_replicas, .mode = o.mode,
                       .bucket_bytes = o.buckets ? instance_options::auto_bucket_bytes : 0,
                       .max_staging_bytes = o.max_staging_bytes},
                      {.time_limit_s = o.time_limit_s, .seed = o.seed});
  }
}

template <class Solver, class Strategy>
std::string_view policy_name(bool of_strategy) {
  if constexpr (solver<Solver> && strategy<Strategy>)  // else solve_erased's assertion says why
    return of_strategy ? std::string_view(Strategy::name) : std::string_view(Solver::name);
  else
    return {};
}

}  // namespace meshcast::detail

// The built-in sharding solvers and the choice of one by name at run time (command-line tools).
// The ilp solver needs COIN-OR CBC: it is included, and visited, when MESHCAST_HAS_CBC is set.
#pragma once

#include <string_view>

#include "solver/dp.hpp"
#include "solver/greedy.hpp"
#if MESHCAST_HAS_CBC
#include "solver/ilp.hpp"
#endif

namespace meshcast::autoshard {

/// Calls `f(Solver{})` for the built-in solver named `name`; returns false if there is none.
template <class F>
bool visit_sharding_solver(std::string_view name, F&& f) {
#if MESHCAST_HAS_CBC
  if (name == ilp::name) return f(ilp{}), true;
#endif
  if (name == dp::name) return f(dp{}), true;
  if (name == greedy::name) return f(greedy{}), true;
  return false;
}

/// Names visit_sharding_solver knows, for messages.
inline constexpr const char* sharding_solver_names =
#if MESHCAST_HAS_CBC
    "ilp, dp, greedy";
#else
    "dp, greedy (ilp needs CBC, which this build lacks)";
#endif

}  // namespace meshcast::autoshard

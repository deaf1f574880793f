// All built-in solvers that need nothing beyond the standard library, and the choice of one by
// name at run time (for command-line tools). The ILP solver needs COIN-OR CBC: see solver/ilp.hpp.
#pragma once

#include <string>
#include <string_view>

#include "error.hpp"
#include "solver/alpa_dfs.hpp"
#include "solver/alpa_greedy.hpp"
#include "solver/alpa_least_loaded.hpp"
#include "solver/branch_and_bound.hpp"
#include "solver/greedy.hpp"
#include "solver/naive.hpp"
#include "solver/open_shop.hpp"

namespace meshcast {

/// Calls `f(Solver{})` for the built-in solver named `name`; returns false if there is none.
template <class F>
bool visit_solver(std::string_view name, F&& f) {
  if (name == naive::name) return f(naive{}), true;
  if (name == alpa_least_loaded::name) return f(alpa_least_loaded{}), true;
  if (name == alpa_greedy::name) return f(alpa_greedy{}), true;
  if (name == alpa_dfs::name) return f(alpa_dfs{}), true;
  if (name == greedy::name) return f(greedy{}), true;
  if (name == branch_and_bound::name) return f(branch_and_bound{}), true;
  if (name == open_shop::name) return f(open_shop{}), true;
  return false;
}

}  // namespace meshcast

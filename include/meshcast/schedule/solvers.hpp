// The built-in solvers that need nothing beyond the standard library, as a type list, and the
// choice of one by name at run time. The ILP solver needs COIN-OR CBC: solver/ilp.hpp adds
// `solvers_with_ilp`. A user's solver joins by appending: `append_t<builtin_solvers, mine>`.
#pragma once

#include <string_view>

#include "../core/registry.hpp"
#include "solver/alpa_dfs.hpp"
#include "solver/alpa_greedy.hpp"
#include "solver/alpa_least_loaded.hpp"
#include "solver/branch_and_bound.hpp"
#include "solver/greedy.hpp"
#include "solver/naive.hpp"
#include "solver/open_shop.hpp"

namespace meshcast {

using builtin_solvers =
    type_list<naive, alpa_least_loaded, alpa_greedy, alpa_dfs, greedy, branch_and_bound, open_shop>;

/// Calls `f(S{})` for the solver of `List` named `name` and returns what it returns; throws
/// `meshcast::error` "unknown solver 'x' (expected ...)" when there is none.
template <class List = builtin_solvers, class F>
decltype(auto) visit_solver(std::string_view name, F&& f) {
  return visit_by_name<List>("solver", name, static_cast<F&&>(f));
}

}  // namespace meshcast

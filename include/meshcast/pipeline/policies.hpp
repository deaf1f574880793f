// The built-in policies as a type list, and the choice of one by name at run time. A user adds a
// policy by appending it to the list:
//
//   struct mine { static constexpr std::string_view name = "mine"; policy_result order(...) const; };
//   using my_policies = with_policies<builtin_policies, mine>;
//   visit_policy<my_policies>(name, [&](auto p) { ... });   // accepts "mine" too
#pragma once

#include <string>
#include <string_view>

#include "../core/registry.hpp"
#include "later_first.hpp"
#include "list_scheduling.hpp"
#include "optimal.hpp"
#include "policy.hpp"
#include "prior_first.hpp"
#include "rounds.hpp"

namespace meshcast::pipeline {

/// A list of pipeline policies: meshcast's registry type list (registry.hpp), constrained.
template <policy... P>
using policy_list = type_list<P...>;

/// `List` with `More...` appended.
template <class List, policy... More>
using with_policies = append_t<List, More...>;

/// The built-in policies; the first is the default.
using builtin_policies = policy_list<list_scheduling, prior_first, later_first, rounds, optimal>;
using default_policy = list_scheduling;

/// "list_scheduling, prior_first, later_first, rounds or optimal" for the built-in list.
template <class List = builtin_policies>
std::string policy_names() {
  return names_text<List>();
}

/// Whether `List` has a policy named `name`.
template <class List = builtin_policies>
bool has_policy(std::string_view name) {
  return has_name<List>(name);
}

/// Calls `f(P{})` for the policy of `List` named `name` and returns what it returns (every
/// policy's call must return the same type); throws `meshcast::error` ("unknown policy 'x'
/// (expected list_scheduling, prior_first, later_first, rounds or optimal)") when `List` has none of that name.
template <class List = builtin_policies, class F>
decltype(auto) visit_policy(std::string_view name, F&& f) {
  return visit_by_name<List>("policy", name, static_cast<F&&>(f));
}

}  // namespace meshcast::pipeline

// The built-in policies as a type list, and the choice of one by name at run time. A user adds a
// policy by appending it to the list:
//
//   struct mine { static constexpr std::string_view name = "mine"; policy_result order(...) const; };
//   using my_policies = with_policies<builtin_policies, mine>;
//   visit_policy<my_policies>(name, [&](auto p) { ... });   // accepts "mine" too
#pragma once

#include <string>
#include <string_view>

#include "../error.hpp"
#include "later_first.hpp"
#include "list_scheduling.hpp"
#include "optimal.hpp"
#include "policy.hpp"
#include "prior_first.hpp"
#include "rounds.hpp"

namespace meshcast::pipeline {

template <policy... P>
struct policy_list {};

namespace detail {
template <class List, class... More>
struct append_policies;
template <class... P, class... More>
struct append_policies<policy_list<P...>, More...> {
  using type = policy_list<P..., More...>;
};
}  // namespace detail

/// `List` with `More...` appended.
template <class List, policy... More>
using with_policies = typename detail::append_policies<List, More...>::type;

/// The built-in policies; the first is the default.
using builtin_policies = policy_list<list_scheduling, prior_first, later_first, rounds, optimal>;
using default_policy = list_scheduling;

namespace detail {
template <class... P>
std::string names(policy_list<P...>) {
  std::string out;
  std::size_t k = 0;
  ((out += (k++ == 0 ? "" : k == sizeof...(P) ? " or " : ", ") + std::string(P::name)), ...);
  return out;
}
inline std::string printable_name(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (out.size() >= 60) return out + "...";
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  }
  return out;
}
}  // namespace detail

/// "list_scheduling, prior_first, later_first, rounds or optimal" for the built-in list.
template <class List = builtin_policies>
std::string policy_names() {
  return detail::names(List{});
}

namespace detail {
template <class... P>
bool has_policy(policy_list<P...>, std::string_view name) {
  return ((name == P::name) || ...);
}
template <class F, class First, class... Rest>
decltype(auto) dispatch(policy_list<First, Rest...>, std::string_view name, F& f) {
  if constexpr (sizeof...(Rest) == 0) {
    return f(First{});  // the caller checked that the name is in the list
  } else {
    if (name == First::name) return f(First{});
    return dispatch(policy_list<Rest...>{}, name, f);
  }
}
}  // namespace detail

/// Whether `List` has a policy named `name`.
template <class List = builtin_policies>
bool has_policy(std::string_view name) {
  return detail::has_policy(List{}, name);
}

/// Calls `f(P{})` for the policy of `List` named `name` and returns what it returns (every
/// policy's call must return the same type); throws `meshcast::error` ("unknown policy 'x'
/// (expected list_scheduling, prior_first, later_first, rounds or optimal)") when `List` has none of that name.
template <class List = builtin_policies, class F>
decltype(auto) visit_policy(std::string_view name, F&& f) {
  if (!has_policy<List>(name))
    throw error("unknown policy '" + detail::printable_name(name) + "' (expected " + policy_names<List>() + ")");
  return detail::dispatch(List{}, name, f);
}

}  // namespace meshcast::pipeline

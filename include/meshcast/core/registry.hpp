// Open registries: policies listed as type lists, chosen by name at run time with one error
// contract. The built-in solvers, strategies and pipeline policies are such lists; a user appends
// their own and every tool that takes a list accepts the new names:
//
//   using my_solvers = meshcast::append_t<meshcast::builtin_solvers, largest_first>;
//   meshcast::visit_by_name<my_solvers>("solver", name, [&](auto s) { ... });
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "error.hpp"

namespace meshcast {

/// A list of policy types, each with a `static constexpr std::string_view name`.
template <class... Ts>
struct type_list {
  static constexpr std::size_t size = sizeof...(Ts);
};

namespace detail {
template <class List, class... More>
struct append_types;
template <class... Ts, class... More>
struct append_types<type_list<Ts...>, More...> {
  using type = type_list<Ts..., More...>;
};
template <class... Ts>
constexpr bool names_distinct() {
  constexpr std::array<std::string_view, sizeof...(Ts)> n{Ts::name...};
  for (std::size_t i = 0; i < n.size(); ++i)
    for (std::size_t j = i + 1; j < n.size(); ++j)
      if (n[i] == n[j]) return false;
  return true;
}
}  // namespace detail

/// `List` with `More...` appended.
template <class List, class... More>
using append_t = typename detail::append_types<List, More...>::type;

/// The names of a list's types, in order.
template <class... Ts>
constexpr std::array<std::string_view, sizeof...(Ts)> names_of(type_list<Ts...>) {
  return {Ts::name...};
}

/// "a, b or c": the names of `List` as an error message or a usage text lists them.
template <class List>
std::string names_text(std::string_view last_joiner = " or ") {
  const auto n = names_of(List{});
  std::string out;
  for (std::size_t k = 0; k < n.size(); ++k) {
    if (k > 0) out += k + 1 == n.size() ? std::string(last_joiner) : std::string(", ");
    out += n[k];
  }
  return out;
}

/// Whether `List` has a type named `name`.
template <class List>
constexpr bool has_name(std::string_view name) {
  for (std::string_view n : names_of(List{}))
    if (n == name) return true;
  return false;
}

namespace detail {
template <class F, class First, class... Rest>
decltype(auto) dispatch_by_name(type_list<First, Rest...>, std::string_view name, F& f) {
  if constexpr (sizeof...(Rest) == 0) {
    return f(First{});  // the caller checked that the name is in the list
  } else {
    if (name == First::name) return f(First{});
    return dispatch_by_name(type_list<Rest...>{}, name, f);
  }
}
}  // namespace detail

/// Calls `f(T{})` for the type of `List` named `name` and returns what it returns (every call
/// must return the same type). Throws `meshcast::error` "unknown <what> 'x' (expected a, b or c)"
/// when `List` has no type of that name; control characters in `name` are escaped (\xNN).
template <class List, class F>
decltype(auto) visit_by_name(std::string_view what, std::string_view name, F&& f) {
  static_assert(List::size > 0, "A registry must list at least one policy.");
  static_assert([]<class... Ts>(type_list<Ts...>) { return detail::names_distinct<Ts...>(); }(List{}),
                "Two policies of one registry have the same name; names must be distinct to be chosen by name.");
  if (!has_name<List>(name))
    throw error("unknown " + std::string(what) + " '" + detail::printable(std::string(name)) + "' (expected " +
                names_text<List>() + ")");
  return detail::dispatch_by_name(List{}, name, f);
}

}  // namespace meshcast

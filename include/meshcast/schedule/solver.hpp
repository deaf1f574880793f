// The solver concept: a policy that picks a sender (option) for every unit of an instance and
// an order for all the ops.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "instance.hpp"
#include "../model/schedule.hpp"

namespace meshcast {

struct solver_options {
  double time_limit_s = 1.0;  ///< for the searching solvers; heuristics stay well below it
  std::uint64_t seed = 1;     ///< for the randomised ones
};

/// What a solver hands back: ops in issue order, and what it proved.
struct solver_result {
  std::vector<op> ops;
  bool proven_optimal = false;
  double bound_s = 0;  ///< a lower bound the solver proved (0 if none)
};

/// `supports(in)` returns nullptr when the solver applies to the instance, else a sentence saying
/// why not; `solve(in, options)` must then return every op of one option of every unit, each op
/// after the op named by its `after`.
template <class S>
concept solver = requires(const S& s, const instance& in, const solver_options& o) {
  { S::name } -> std::convertible_to<std::string_view>;
  requires !std::is_member_object_pointer_v<decltype(&S::name)>;  // static: an object's breaks the library's uses
  { s.supports(in) } -> std::convertible_to<const char*>;
  { s.solve(in, o) } -> std::same_as<solver_result>;
};

namespace detail {
/// Appends the ops of option `k` of unit `u` in their listed order (which respects `after`).
inline void emit(const instance& in, std::size_t u, std::size_t k, std::vector<op>& out) {
  for (const op& o : in.units[u].options[k].ops) out.push_back(o);
}

/// Bytes the chosen sender pushes through its NIC under an option.
inline double sender_nic_bytes(const instance& in, const option& o) {
  double b = 0;
  const int port = in.resources.egress(in.net->port_of(o.sender));
  for (const op& x : o.ops)
    for (int r : x.resources)
      if (r == port) b += static_cast<double>(x.bytes);
  return b;
}
}  // namespace detail

}  // namespace meshcast

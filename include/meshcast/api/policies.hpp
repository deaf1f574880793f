// A batch's solver and strategy with their types erased. The front ends' code (planning,
// agreement, sharing the schedule, executing) does not depend on them, so it is written and, in
// compiled mode, compiled once; only the call into the solver is a template. The default pair
// (greedy under auto) is compiled into libmeshcast and libmeshcast-nccl, so the one call needs no
// solver's code.
#pragma once

#include <span>
#include <string_view>
#include <type_traits>

#include "../core/compiled.hpp"
#include "reshard_options.hpp"

namespace meshcast {

struct plan;
struct schedule;
class network;
struct greedy;
struct auto_strategy;

namespace detail {

struct erased_policies {
  const void* solver = nullptr;    ///< the Solver object; null: a default-constructed one
  const void* strategy = nullptr;  ///< the Strategy object; null: likewise
  /// Solves the batch `plans` on `net` under the options into `out` (policies_impl.hpp).
  void (*solve)(const erased_policies&, std::span<const plan> plans, const network& net, const reshard_options& o,
                schedule& out) = nullptr;
  /// The strategy's name if `strategy`, else the solver's (part of what every rank must agree on).
  std::string_view (*name)(bool strategy) = nullptr;
};

template <class Solver, class Strategy>
void solve_erased(const erased_policies& p, std::span<const plan> plans, const network& net, const reshard_options& o,
                  schedule& out);
template <class Solver, class Strategy>
std::string_view policy_name(bool strategy);

template <class Solver, class Strategy>
erased_policies erase_policies(const Solver* solver = nullptr, const Strategy* strategy = nullptr) {
  return {solver, strategy, &solve_erased<Solver, Strategy>, &policy_name<Solver, Strategy>};
}

/// The front ends build the policies they are not given: those must be default-constructible.
/// (The default pair is; in compiled mode its types are only declared here.)
template <class Solver, class Strategy>
constexpr void check_default_policies() {
  if constexpr (!(std::is_same_v<Solver, greedy> && std::is_same_v<Strategy, auto_strategy>))
    static_assert(std::is_default_constructible_v<Solver> && std::is_default_constructible_v<Strategy>,
                  "A reshard given no Solver or Strategy object builds one: pass the objects of policies that have no "
                  "default constructor.");
}

#if defined(MESHCAST_COMPILED) || defined(MESHCAST_COMPILED_NCCL)  // libmeshcast and libmeshcast-nccl hold it
extern template void solve_erased<greedy, auto_strategy>(const erased_policies&, std::span<const plan>, const network&,
                                                         const reshard_options&, schedule&);
extern template std::string_view policy_name<greedy, auto_strategy>(bool);
#endif

}  // namespace detail
}  // namespace meshcast

// The custom solver and strategy of examples/custom_policies.cpp (docs/policies.md), in a header
// of their own so that the command-line tools built with them (custom_reshard.cpp,
// custom_plan.cpp) accept their names.
#pragma once

#include <algorithm>
#include <span>
#include <string_view>
#include <vector>

#include <meshcast/meshcast.hpp>

namespace custom {
using namespace meshcast;

// 1. A solver: any type with a name, `supports` and `solve` (the `solver` concept). This one
//    takes every unit's first option and issues the units largest first. `solve()` checks
//    whatever a solver returns, so a mistake here is an error, not a wrong result.
struct largest_first {
  static constexpr std::string_view name = "largest_first";
  const char* supports(const instance&) const { return nullptr; }  // nullptr: applies to any instance
  solver_result solve(const instance& in, const solver_options&) const {
    std::vector<std::size_t> order(in.units.size());
    for (std::size_t u = 0; u < order.size(); ++u) order[u] = u;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return in.units[a].bytes > in.units[b].bytes; });
    solver_result r;
    for (std::size_t u : order)
      for (const op& o : in.units[u].options[0].ops) r.ops.push_back(o);
    return r;
  }
};
static_assert(solver<largest_first>);

// 2. A strategy: a name, whether its ops are point to point, and `remote_ops`, which appends the
//    ops that move a region from a chosen sender to the receivers on other hosts, each saying
//    what it is (`make_transfer` fills in the model: resources, duration). Being an object, it
//    can carry run-time state: here a cap on the bytes of one message, above which the region is
//    cut into slices sent one after another.
struct capped_send_recv {
  static constexpr std::string_view name = "capped_send_recv";
  static constexpr bool point_to_point = true;
  index_t max_message_bytes = 64 << 10;
  void remote_ops(const network& net, const resource_space& rs, index_t task, const box& region, index_t bytes,
                  index_t sender, std::span<const index_t> remote, std::vector<op>& out) const {
    const index_t element_bytes = region.volume() > 0 ? bytes / region.volume() : 1;
    const index_t pieces = (bytes + max_message_bytes - 1) / max_message_bytes;
    for (const box& slice : slice_region(region, pieces))
      for (index_t r : remote) out.push_back(make_transfer(net, rs, task, slice, slice.volume() * element_bytes, sender, r));
  }
};
static_assert(strategy<capped_send_recv>);

/// The tools' lists with these two appended.
template <class Solvers>
using solvers = append_t<Solvers, largest_first>;
using strategies = append_t<builtin_strategies, capped_send_recv>;

}  // namespace custom

// naive (Alpa's "no_loadbalance"): the first replica sends every task, in plan order.
#pragma once

#include "../solver.hpp"

namespace meshcast {

struct naive {
  static constexpr std::string_view name = "naive";
  const char* supports(const instance&) const { return nullptr; }
  solver_result solve(const instance& in, const solver_options&) const {
    solver_result r;
    for (std::size_t u = 0; u < in.units.size(); ++u) detail::emit(in, u, 0, r.ops);
    return r;
  }
};

}  // namespace meshcast

// alpa_least_loaded (Alpa's default): in plan order, each task goes to the replica whose host has
// sent the fewest bytes so far.
#pragma once

#include <vector>

#include "../solver.hpp"

namespace meshcast {

struct alpa_least_loaded {
  static constexpr std::string_view name = "alpa_least_loaded";
  const char* supports(const instance&) const { return nullptr; }
  solver_result solve(const instance& in, const solver_options&) const {
    solver_result r;
    std::vector<double> load(static_cast<std::size_t>(in.net->host_count()), 0.0);
    for (std::size_t u = 0; u < in.units.size(); ++u) {
      const unit& un = in.units[u];
      std::size_t best = 0;
      if (un.has_choice()) {
        for (std::size_t k = 1; k < un.options.size(); ++k)
          if (load[in.net->host_of(un.options[k].sender)] < load[in.net->host_of(un.options[best].sender)]) best = k;
        load[in.net->host_of(un.options[best].sender)] += detail::sender_nic_bytes(in, un.options[best]);
      }
      detail::emit(in, u, best, r.ops);
    }
    return r;
  }
};

}  // namespace meshcast

// Sender assignments from the egress bound's flow (lower_bound.hpp), rounded to one sender per
// unit. greedy and open_shop start from them.
#pragma once

#include <cstddef>
#include <vector>

#include "instance.hpp"
#include "lower_bound.hpp"

namespace meshcast {

/// An integral sender assignment from the egress bound's flow: every sender port gets a quota of
/// bytes (its share of the flow); units, in the given order (longest first is best), take the
/// option whose port has the most quota left. Returns the option of each unit.
inline std::vector<int> quota_senders(const instance& in, const std::vector<std::size_t>& order) {
  egress_split split = egress_bound(in, false, 1e-3);  // quotas need no more precision
  std::vector<double> quota(static_cast<std::size_t>(in.resources.ports), 0.0);
  for (std::size_t u = 0; u < in.units.size(); ++u)
    for (std::size_t k = 0; k < in.units[u].options.size(); ++k)
      if (in.units[u].options[k].sender >= 0)
        quota[in.net->port_of(in.units[u].options[k].sender)] += split.fraction[u][k] * static_cast<double>(in.units[u].bytes);
  std::vector<int> chosen(in.units.size(), 0);
  for (std::size_t u : order) {
    const unit& un = in.units[u];
    if (!un.has_choice()) continue;
    int best = 0;
    for (std::size_t k = 1; k < un.options.size(); ++k)
      if (quota[in.net->port_of(un.options[k].sender)] > quota[in.net->port_of(un.options[best].sender)])
        best = static_cast<int>(k);
    chosen[u] = best;
    quota[in.net->port_of(un.options[best].sender)] -= static_cast<double>(un.bytes);
  }
  return chosen;
}

}  // namespace meshcast

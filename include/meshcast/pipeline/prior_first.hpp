// prior_first: the fixed rule "deal with the prior stage first, whether send or recv" (the
// baseline of the seed discussion). Each stage sends what a compute produced right after the
// phase of that compute, and orders the transfers of a phase by the other stage's index,
// ascending: first the earlier stages it receives from, then the later stages it sends to. On a
// chain, stage i's send to i + 1 then waits for its receive from i - 1, which waits for stage
// i - 1's own receive: the transfers of a phase run one after another.
#pragma once

#include <algorithm>
#include <string_view>

#include "detail/phases.hpp"
#include "policy.hpp"

namespace meshcast::pipeline {

struct prior_first {
  static constexpr std::string_view name = "prior_first";

  policy_result order(const graph& g, const policy_options& = {}) const {
    // One global key: (lower stage, higher stage) ascending orders every stage's transfers of a
    // phase by its peer, ascending, on every stage at once.
    auto key = [&](graph::id t) -> detail::phase_key {
      const index_t a = g.sender(t), b = g.receiver(t);
      return {std::min(a, b), std::max(a, b), g.pass_of(t) == pass_kind::forward ? 0 : 1, g.mb(t)};
    };
    return {detail::phase_lists(g, detail::compute_steps(g), key), false, 0};
  }
};

}  // namespace meshcast::pipeline

// later_first: the mirror of prior_first, "deal with the later stage first, whether send or
// recv": each stage sends what a compute produced right after the phase of that compute, and
// orders the transfers of a phase by the other stage's index, descending (first the later stages
// it sends to, then the earlier stages it receives from). The seed discussion finds it better
// than prior_first on a 4-stage U-Net and worse than another order on a 6-stage one: no fixed
// rule is right for every pipeline.
#pragma once

#include <algorithm>
#include <string_view>

#include "detail/phases.hpp"
#include "policy.hpp"

namespace meshcast::pipeline {

struct later_first {
  static constexpr std::string_view name = "later_first";

  policy_result order(const graph& g, const policy_options& = {}) const {
    // One global key: (higher stage, lower stage) descending orders every stage's transfers of a
    // phase by its peer, descending, on every stage at once.
    auto key = [&](graph::id t) -> detail::phase_key {
      const index_t a = g.sender(t), b = g.receiver(t);
      return {-std::max(a, b), -std::min(a, b), g.pass_of(t) == pass_kind::forward ? 0 : 1, g.mb(t)};
    };
    return {detail::phase_lists(g, detail::compute_steps(g), key), false, 0};
  }
};

}  // namespace meshcast::pipeline

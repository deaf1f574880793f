// rounds: the transfers of each phase are grouped into rounds in which no stage appears twice (an
// edge colouring of the phase's multigraph of stages), and every stage takes its transfers round
// by round. On a chain, c01, c23, c45, ... form one round and c12, c34, ... the next, so a phase
// takes 2 rounds whatever the number of stages. A bipartite phase graph (every chain, and every
// skip between stages of different parity) is coloured with as many colours as its largest
// degree (Koenig); other graphs first-fit (at most 2 * degree - 1 colours). Past the time limit,
// the phases left take one transfer a round, in order.
#pragma once

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/detail/deadline.hpp"
#include "../core/detail/edge_colour.hpp"
#include "detail/phases.hpp"
#include "policy.hpp"

namespace meshcast::pipeline {


struct rounds {
  static constexpr std::string_view name = "rounds";

  policy_result order(const graph& g, const policy_options& options = {}) const {
    const meshcast::detail::deadline stop(options.time_limit_s, "policy_options::time_limit_s");
    const std::vector<index_t> step = detail::compute_steps(g);
    // Transfers grouped by phase, each group coloured on its own.
    std::vector<graph::id> ts;
    ts.reserve(static_cast<std::size_t>(g.transfer_count()));
    for (graph::id t = g.compute_count(); t < g.size(); ++t) ts.push_back(t);
    std::stable_sort(ts.begin(), ts.end(),
                     [&](graph::id a, graph::id b) { return step[g.producer(a)] < step[g.producer(b)]; });
    std::vector<int> colour(static_cast<std::size_t>(g.transfer_count()), 0);
    std::vector<int> local(static_cast<std::size_t>(g.stages()), -1);
    std::vector<index_t> used;
    std::vector<std::pair<int, int>> ends;
    for (std::size_t lo = 0; lo < ts.size();) {
      std::size_t hi = lo;
      while (hi < ts.size() && step[g.producer(ts[hi])] == step[g.producer(ts[lo])]) ++hi;
      ends.clear();
      used.clear();
      auto vertex = [&](index_t s) {
        if (local[s] < 0) local[s] = static_cast<int>(used.size()), used.push_back(s);
        return local[s];
      };
      for (std::size_t k = lo; k < hi; ++k) ends.emplace_back(vertex(g.sender(ts[k])), vertex(g.receiver(ts[k])));
      std::vector<int> c = meshcast::detail::edge_colouring(ends, static_cast<int>(used.size()), &stop);
      for (std::size_t k = lo; k < hi; ++k) colour[ts[k] - g.compute_count()] = c[k - lo];
      for (index_t s : used) local[s] = -1;
      lo = hi;
    }
    auto key = [&](graph::id t) -> detail::phase_key {
      return {colour[t - g.compute_count()], g.edge_of(t), g.pass_of(t) == pass_kind::forward ? 0 : 1, g.mb(t)};
    };
    return {detail::phase_lists(g, step, key), false, 0};
  }
};

}  // namespace meshcast::pipeline

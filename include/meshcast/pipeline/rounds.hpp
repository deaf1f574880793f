// rounds: the transfers of each phase are grouped into rounds in which no stage appears twice (an
// edge colouring of the phase's multigraph of stages), and every stage takes its transfers round
// by round. On a chain, c01, c23, c45, ... form one round and c12, c34, ... the next, so a phase
// takes 2 rounds whatever the number of stages. A bipartite phase graph (every chain, and every
// skip between stages of different parity) is coloured with as many colours as its largest
// degree (Koenig); other graphs first-fit (at most 2 * degree - 1 colours).
#pragma once

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/phases.hpp"
#include "policy.hpp"

namespace meshcast::pipeline {

namespace detail {
/// Colours the edges (u, v) of a multigraph on vertices 0..V-1 so that no two edges of one colour
/// share a vertex; edges are coloured in the order given. No recursion; memory V * colours.
inline std::vector<int> edge_colouring(const std::vector<std::pair<int, int>>& ends, int vertices) {
  std::vector<int> degree(static_cast<std::size_t>(vertices), 0);
  std::vector<std::vector<int>> adj(static_cast<std::size_t>(vertices));
  for (std::size_t i = 0; i < ends.size(); ++i) {
    ++degree[ends[i].first], ++degree[ends[i].second];
    adj[ends[i].first].push_back(ends[i].second);
    adj[ends[i].second].push_back(ends[i].first);
  }
  const int delta = ends.empty() ? 0 : *std::max_element(degree.begin(), degree.end());
  // Two-colour the vertices (breadth first) to see whether the graph is bipartite.
  std::vector<int> side(static_cast<std::size_t>(vertices), -1);
  bool bipartite = true;
  std::vector<int> queue;
  for (int v0 = 0; v0 < vertices && bipartite; ++v0) {
    if (side[v0] >= 0) continue;
    side[v0] = 0;
    queue.assign(1, v0);
    for (std::size_t k = 0; k < queue.size() && bipartite; ++k)
      for (int w : adj[queue[k]]) {
        if (side[w] < 0) side[w] = 1 - side[queue[k]], queue.push_back(w);
        else if (side[w] == side[queue[k]]) bipartite = false;
      }
  }
  const int colours = bipartite ? delta : std::max(1, 2 * delta - 1);
  std::vector<int> at(static_cast<std::size_t>(vertices) * static_cast<std::size_t>(std::max(colours, 1)), -1);
  auto slot = [&](int v, int c) -> int& { return at[static_cast<std::size_t>(v) * colours + c]; };
  std::vector<int> colour(ends.size(), -1);
  auto free_at = [&](int v) {
    int c = 0;
    while (slot(v, c) >= 0) ++c;
    return c;
  };
  std::vector<int> path;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    const auto [u, v] = ends[i];
    int c = 0;
    if (!bipartite) {
      while (slot(u, c) >= 0 || slot(v, c) >= 0) ++c;
    } else {
      const int a = free_at(u), b = free_at(v);
      c = a;
      if (slot(v, a) >= 0) {
        // Swap a and b along the path that leaves v on colour a; in a bipartite graph it never
        // reaches u, and afterwards a is free at both ends.
        path.clear();
        int x = v, col = a;
        while (slot(x, col) >= 0) {
          const int e = slot(x, col);
          path.push_back(e);
          x = ends[e].first == x ? ends[e].second : ends[e].first;
          col = col == a ? b : a;
        }
        for (int e : path) slot(ends[e].first, colour[e]) = slot(ends[e].second, colour[e]) = -1;
        for (int e : path) {
          colour[e] = colour[e] == a ? b : a;
          slot(ends[e].first, colour[e]) = slot(ends[e].second, colour[e]) = e;
        }
      }
    }
    colour[i] = c;
    slot(u, c) = slot(v, c) = static_cast<int>(i);
  }
  return colour;
}
}  // namespace detail

struct rounds {
  static constexpr std::string_view name = "rounds";

  policy_result order(const graph& g, const policy_options& = {}) const {
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
      std::vector<int> c = detail::edge_colouring(ends, static_cast<int>(used.size()));
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

// Edge colouring of a multigraph: no two edges of one colour share a vertex. On a bipartite
// multigraph, as many colours as its largest degree (Koenig's theorem), by alternating-path
// recolouring; on any other, first fit (at most 2 x degree - 1 colours). Solvers use it to cut
// transfers into rounds in which no NIC port is used twice, pipeline ordering to group transfers
// into rounds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "deadline.hpp"

namespace meshcast::detail {

/// Colours the edges `ends` (pairs of vertices in [0, vertices), left and right sides disjoint)
/// with `colours` >= max degree colours so that no two edges of one colour share a vertex.
/// Returns the colour of every edge, or nothing if `stop` expires first. Memory is linear in the
/// edges: the (vertex, colour) table is dense only while that is small. Each edge takes, at each
/// end, the free colour found first: searching on from where that vertex's last search ended, or,
/// with `lowest_free`, the lowest.
inline std::vector<int> edge_colour(const std::vector<std::pair<int, int>>& ends, int vertices, int colours,
                                    const deadline* stop = nullptr, bool lowest_free = false) {
  std::vector<int> colour(ends.size(), -1);
  if (ends.empty()) return colour;
  const auto cells = static_cast<std::uint64_t>(vertices) * static_cast<std::uint64_t>(colours);
  const bool dense = cells <= (std::uint64_t{1} << 24) || cells <= 8 * ends.size();
  std::vector<int> table(dense ? cells : 0, -1);
  std::unordered_map<std::uint64_t, int> sparse;
  auto key = [&](int v, int c) { return static_cast<std::uint64_t>(v) * static_cast<std::uint64_t>(colours) + static_cast<std::uint64_t>(c); };
  auto get = [&](int v, int c) -> int {
    if (dense) return table[key(v, c)];
    auto it = sparse.find(key(v, c));
    return it == sparse.end() ? -1 : it->second;
  };
  auto set = [&](int v, int c, int e) {
    if (dense) table[key(v, c)] = e;
    else if (e < 0) sparse.erase(key(v, c));
    else sparse[key(v, c)] = e;
  };
  std::vector<int> next_free(static_cast<std::size_t>(vertices), 0);
  auto free_colour = [&](int v) {
    int& c = next_free[v];
    if (lowest_free) c = 0;
    while (get(v, c) >= 0) c = (c + 1) % colours;
    return c;
  };
  auto other = [&](int e, int v) { return ends[e].first == v ? ends[e].second : ends[e].first; };
  std::vector<int> path;
  for (std::size_t e = 0; e < ends.size(); ++e) {
    if (stop && (e & 63) == 63 && stop->expired()) return {};
    auto [u, v] = ends[e];
    int a = free_colour(u), b = free_colour(v);
    if (get(v, a) >= 0) {
      // Swap a and b along the path from v that alternates a, b, a, ...; it cannot reach u.
      path.clear();
      int w = v, c = a;
      while (get(w, c) >= 0) {
        int f = get(w, c);
        path.push_back(f);
        w = other(f, w);
        c = c == a ? b : a;
      }
      for (int f : path) {
        set(ends[f].first, colour[f], -1);
        set(ends[f].second, colour[f], -1);
      }
      for (int f : path) {
        colour[f] = colour[f] == a ? b : a;
        set(ends[f].first, colour[f], f);
        set(ends[f].second, colour[f], f);
      }
    }
    colour[e] = a;
    set(u, a, static_cast<int>(e));
    set(v, a, static_cast<int>(e));
  }
  return colour;
}

/// Colours the edges (u, v) of any multigraph on vertices 0..V-1, in the order given: with as
/// many colours as the largest degree where the graph is bipartite (edge_colour, lowest free
/// colour first), else first fit. Once `stop` expires, each edge its own colour in the order given
/// (valid, found in time linear in the edges: a dense phase of 2 million edges took minutes).
inline std::vector<int> edge_colouring(const std::vector<std::pair<int, int>>& ends, int vertices,
                                       const deadline* stop = nullptr) {
  auto one_each = [&] {
    std::vector<int> colour(ends.size());
    for (std::size_t i = 0; i < colour.size(); ++i) colour[i] = static_cast<int>(i);
    return colour;
  };
  std::vector<int> degree(static_cast<std::size_t>(vertices), 0);
  std::vector<std::vector<int>> adj(static_cast<std::size_t>(vertices));
  for (const auto& [u, v] : ends) {
    ++degree[u], ++degree[v];
    adj[u].push_back(v), adj[v].push_back(u);
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
  if (bipartite) {
    std::vector<int> colour = edge_colour(ends, vertices, std::max(delta, 1), stop, true);
    return colour.size() == ends.size() ? colour : one_each();
  }
  const int colours = std::max(1, 2 * delta - 1);
  std::vector<int> at(static_cast<std::size_t>(vertices) * static_cast<std::size_t>(colours), -1);
  auto slot = [&](int v, int c) -> int& { return at[static_cast<std::size_t>(v) * colours + c]; };
  std::vector<int> colour(ends.size(), -1);
  for (std::size_t i = 0; i < ends.size(); ++i) {
    if (stop && (i & 63) == 63 && stop->expired()) return one_each();
    const auto [u, v] = ends[i];
    int c = 0;
    while (slot(u, c) >= 0 || slot(v, c) >= 0) ++c;
    colour[i] = c;
    slot(u, c) = slot(v, c) = static_cast<int>(i);
  }
  return colour;
}

}  // namespace meshcast::detail

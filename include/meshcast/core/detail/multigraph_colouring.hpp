// Edge colouring of a multigraph: no two edges of one colour share a vertex. Koenig's bound (as
// many colours as the largest degree) on bipartite graphs, by alternating-path swaps; first fit
// (at most 2 * degree - 1 colours) on others. Used to group transfers into rounds.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

namespace meshcast {

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

}  // namespace meshcast

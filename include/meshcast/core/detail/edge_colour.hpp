// Edge colouring of a bipartite multigraph with as many colours as its largest degree (Koenig's
// theorem), by alternating-path recolouring. Solvers use it to cut transfers into rounds in which
// no NIC port is used twice.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "deadline.hpp"

namespace meshcast::detail {

/// Colours the edges `ends` (pairs of vertices in [0, vertices), left and right sides disjoint)
/// with `colours` >= max degree colours so that no two edges of one colour share a vertex.
/// Returns the colour of every edge, or nothing if `stop` expires first. Memory is linear in the
/// edges: the (vertex, colour) table is dense only while that is small.
inline std::vector<int> edge_colour(const std::vector<std::pair<int, int>>& ends, int vertices, int colours,
                                    const deadline* stop = nullptr) {
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

}  // namespace meshcast::detail

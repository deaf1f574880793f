// Dinic's maximum flow on a small graph with real capacities.
#pragma once

#include <algorithm>
#include <limits>
#include <queue>
#include <vector>

namespace meshcast::detail {

class max_flow {
 public:
  explicit max_flow(int nodes) : adj_(static_cast<std::size_t>(nodes)) {}
  /// Adds edge u -> v; returns its index for `flow_on`.
  int add_edge(int u, int v, double capacity) {
    adj_[u].push_back(static_cast<int>(edges_.size()));
    edges_.push_back({v, capacity, 0});
    adj_[v].push_back(static_cast<int>(edges_.size()));
    edges_.push_back({u, 0, 0});
    return static_cast<int>(edges_.size()) - 2;
  }
  double flow_on(int edge) const { return edges_[edge].flow; }
  double run(int s, int t) {
    double total = 0;
    while (levels(s, t)) {
      next_.assign(adj_.size(), 0);
      while (double pushed = push(s, t, std::numeric_limits<double>::infinity())) total += pushed;
    }
    return total;
  }

 private:
  struct edge {
    int to;
    double capacity, flow;
  };
  static constexpr double eps = 1e-12;
  bool levels(int s, int t) {
    level_.assign(adj_.size(), -1);
    std::queue<int> q;
    level_[s] = 0;
    q.push(s);
    while (!q.empty()) {
      int u = q.front();
      q.pop();
      for (int e : adj_[u])
        if (edges_[e].capacity - edges_[e].flow > eps && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[u] + 1;
          q.push(edges_[e].to);
        }
    }
    return level_[t] >= 0;
  }
  double push(int u, int t, double limit) {
    if (u == t) return limit;
    for (int& i = next_[u]; i < static_cast<int>(adj_[u].size()); ++i) {
      int e = adj_[u][i];
      edge& ed = edges_[e];
      if (ed.capacity - ed.flow <= eps || level_[ed.to] != level_[u] + 1) continue;
      if (double got = push(ed.to, t, std::min(limit, ed.capacity - ed.flow)); got > eps) {
        ed.flow += got;
        edges_[e ^ 1].flow -= got;
        return got;
      }
    }
    return 0;
  }
  std::vector<std::vector<int>> adj_;
  std::vector<edge> edges_;
  std::vector<int> level_, next_;
};

}  // namespace meshcast::detail

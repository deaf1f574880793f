// alpa_dfs: Alpa's depth-first search over (task order x sender), kept faithful as a baseline.
//
// Every remaining unit, with every sender, may come next; the unit's ops are appended in the
// ordered model. A branch is pruned when Alpa's estimate reaches the best schedule found: the
// current busy time of each port plus the remaining work on it, where remaining units are given to
// senders greedily (least loaded first). That estimate is not a lower bound (the greedy assignment
// can load a port more than the best assignment would), so the search can cut away an optimum.
#pragma once

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include "../solver.hpp"

namespace meshcast {

struct alpa_dfs {
  static constexpr std::string_view name = "alpa_dfs";
  /// Off: the same search without Alpa's estimate (exhaustive), to show what the estimate cuts.
  bool prune = true;

  const char* supports(const instance&) const { return nullptr; }

  solver_result solve(const instance& in, const solver_options& options) const {
    state s(in, options.time_limit_s, prune);
    s.dfs(0.0, 0);
    solver_result r;
    for (auto [u, k] : s.best_order) detail::emit(in, u, k, r.ops);
    return r;
  }

 private:
  struct state {
    state(const instance& i, double limit_s, bool use_estimate)
        : in(i),
          prune(use_estimate),
          deadline(std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(limit_s))),
          free(static_cast<std::size_t>(i.resources.size()), 0.0),
          used(i.units.size(), 0) {}
    const instance& in;
    bool prune;
    std::chrono::steady_clock::time_point deadline;
    std::vector<double> free;
    std::vector<char> used;
    std::vector<std::pair<std::size_t, std::size_t>> order, best_order;
    double best = std::numeric_limits<double>::infinity();
    long long nodes = 0;
    bool timed_out = false;

    double estimate(double makespan) const {
      std::vector<double> busy = free;
      for (std::size_t u = 0; u < in.units.size(); ++u) {
        if (used[u]) continue;
        const unit& un = in.units[u];
        std::size_t pick = 0;
        if (un.has_choice()) {
          auto port_of = [&](std::size_t k) { return in.resources.egress(in.net->port_of(un.options[k].sender)); };
          for (std::size_t k = 1; k < un.options.size(); ++k)
            if (busy[port_of(k)] < busy[port_of(pick)]) pick = k;
        }
        for (const op& x : un.options[pick].ops)
          for (int r : x.resources)
            if (in.resources.is_port(r)) busy[r] += x.duration;
      }
      double e = makespan;
      for (int r = 0; r < 2 * in.resources.ports; ++r) e = std::max(e, busy[r]);
      return e;
    }

    void dfs(double makespan, std::size_t placed) {
      if ((++nodes & 255) == 0 && std::chrono::steady_clock::now() > deadline) timed_out = true;
      if (timed_out && !best_order.empty()) return;  // the first dive always completes
      if (placed == in.units.size()) {
        if (makespan < best) best = makespan, best_order = order;
        return;
      }
      if (!prune && makespan >= best) return;  // still exact: the makespan only grows
      if (prune && estimate(makespan) >= best) return;
      std::vector<std::pair<int, double>> saved;
      for (std::size_t u = 0; u < in.units.size(); ++u) {
        if (used[u]) continue;
        for (std::size_t k = 0; k < in.units[u].options.size(); ++k) {
          saved.clear();
          double end_all = makespan;
          for (const op& x : in.units[u].options[k].ops) {
            double start = 0;
            for (int r : x.resources) start = std::max(start, free[r]);
            for (int r : x.resources) saved.push_back({r, free[r]}), free[r] = start + x.duration;
            end_all = std::max(end_all, start + x.duration);
          }
          used[u] = 1;
          order.push_back({u, k});
          dfs(end_all, placed + 1);
          order.pop_back();
          used[u] = 0;
          for (auto it = saved.rbegin(); it != saved.rend(); ++it) free[it->first] = it->second;
          if (timed_out && !best_order.empty()) return;
        }
      }
    }
  };
};

}  // namespace meshcast

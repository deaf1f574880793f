// alpa_dfs: Alpa's depth-first search over (task order x sender), kept faithful as a baseline.
//
// Every remaining unit, with every sender, may come next; the unit's ops are appended in the
// ordered model. A branch is pruned when Alpa's estimate reaches the best schedule found: the
// current busy time of each port plus the remaining work on it, where remaining units are given to
// senders greedily (least loaded first). That estimate is not a lower bound (the greedy assignment
// can load a port more than the best assignment would), so the search can cut away an optimum.
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

#include "../../core/detail/deadline.hpp"
#include "../../model/ordered_engine.hpp"
#include "../solver.hpp"

namespace meshcast {

struct alpa_dfs {
  static constexpr std::string_view name = "alpa_dfs";
  /// Off: the same search without Alpa's estimate (exhaustive), to show what the estimate cuts.
  bool prune = true;

  const char* supports(const instance&) const { return nullptr; }

  solver_result solve(const instance& in, const solver_options& options) const {
    search s(in, options.time_limit_s, prune);
    s.run();
    solver_result r;
    for (auto [u, k] : s.best_order) detail::emit(in, u, k, r.ops);
    return r;
  }

 private:
  // The search keeps its own stack (one frame per placed unit), so its depth is not bounded by
  // the thread's stack; at the time limit it returns the best complete order found, completing
  // the first dive, if need be, with the remaining units in plan order and their first option.
  struct search {
    struct frame {
      std::size_t u = 0, k = 0;  // next child to try
      double makespan = 0;       // of the placed prefix
      resource_clock::undo_log saved;  // what the placed child overwrote
      bool placed = false;
      bool entered = false;  // the node's own test (complete? cut?) is done on first entry only
    };

    search(const instance& i, double limit_s, bool use_estimate)
        : in(i), prune(use_estimate), stop(limit_s), clock(i.resources.size()), used(i.units.size(), 0) {}
    const instance& in;
    bool prune;
    detail::deadline stop;
    resource_clock clock;
    std::vector<char> used;
    std::vector<std::pair<std::size_t, std::size_t>> order, best_order;
    double best = std::numeric_limits<double>::infinity();
    long long nodes = 0;

    double estimate(double makespan) const {
      std::vector<double> busy = clock.free_times();
      for (std::size_t u = 0; u < in.units.size(); ++u) {
        // One estimate walks every unit: on a large instance it looks at the clock on the way.
        if ((u & 4095) == 4095 && stop.expired()) return std::numeric_limits<double>::infinity();
        if (used[u]) continue;
        const unit& un = in.units[u];
        std::size_t pick = 0;
        if (un.has_choice()) {
          auto port_of = [&](std::size_t k) { return in.resources.egress(in.net->port_of(un.options[k].sender)); };
          for (std::size_t k = 1; k < un.options.size(); ++k)
            if (busy[port_of(k)] < busy[port_of(pick)]) pick = k;
        }
        for (const op& x : un.options[pick].ops)
          for (std::size_t j = 0; j < x.resources.size(); ++j)
            if (in.resources.is_port(x.resources[j])) busy[x.resources[j]] += x.held_for(j);
      }
      double e = makespan;
      for (int r = 0; r < in.resources.port_directions(); ++r) e = std::max(e, busy[r]);
      return e;
    }

    // Places option k of unit u after the prefix; returns the new makespan.
    double place(std::size_t u, std::size_t k, resource_clock::undo_log& saved) {
      clock.mark(saved);
      clock.place_option(in.units[u].options[k].ops, &saved);
      used[u] = 1;
      order.push_back({u, k});
      return clock.makespan();
    }
    void unplace(frame& f) {
      order.pop_back();
      used[f.u] = 0;
      clock.undo(f.saved);
      f.placed = false;
    }

    void run() {
      const std::size_t n = in.units.size();
      std::vector<frame> stack(1);
      while (!stack.empty()) {
        frame& f = stack.back();
        if (f.placed) {  // back from the child placed last: undo it and move to the next child
          unplace(f);
          if (++f.k >= in.units[f.u].options.size()) f.k = 0, ++f.u;
        }
        ++nodes;
        if (stop.expired()) break;  // every node: one node costs far more than reading the clock
        if (!f.entered) {
          f.entered = true;
          if (order.size() == n) {  // a complete order
            if (f.makespan < best) best = f.makespan, best_order = order;
            stack.pop_back();
            continue;
          }
          // Alpa's estimate; without it the search is exact (the makespan only grows).
          if (prune ? estimate(f.makespan) >= best : f.makespan >= best) {
            stack.pop_back();
            continue;
          }
        }
        while (f.u < n && used[f.u]) ++f.u;
        if (f.u >= n) {
          stack.pop_back();
          continue;
        }
        frame child;
        child.makespan = place(f.u, f.k, f.saved);
        f.placed = true;
        stack.push_back(std::move(child));
      }
      if (best_order.empty()) {  // out of time in the first dive: finish it in plan order
        for (std::size_t u = 0; u < n; ++u)
          if (!used[u]) order.push_back({u, 0}), used[u] = 1;
        best_order = order;
      }
    }
  };
};

}  // namespace meshcast

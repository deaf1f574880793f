// branch_and_bound: exact search over the schedules of the ordered model.
//
// Each step places one op (choosing the unit's sender with its first op) where all its resources
// are free. Only sequences whose (start, unit, op) keys increase are explored: sorting any
// schedule by start time and replaying it never delays an op, so an optimal schedule of that form
// exists, and each schedule is met once. A node is cut when an admissible bound (per resource:
// work that must still run there after max(its free time, the last start); per set of sender
// ports: the same on average) reaches the incumbent, which starts as the greedy schedule.
// The search recurses once per placed op, so it runs only on instances of at most
// `max_search_ops` ops; larger ones get the greedy schedule (not proven optimal).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "../../core/detail/deadline.hpp"
#include "../../model/ordered_engine.hpp"
#include "../solver.hpp"
#include "greedy.hpp"

namespace meshcast {

struct branch_and_bound {
  static constexpr std::string_view name = "branch_and_bound";

  const char* supports(const instance& in) const {
    for (const unit& u : in.units)
      for (const option& o : u.options)
        if (o.ops.size() > 64) return "an option has more than 64 ops, more than the search tracks";
    return nullptr;
  }

  /// Most ops (summed over units, each unit's largest option) the exact search takes on.
  static constexpr std::size_t max_search_ops = 512;

  solver_result solve(const instance& in, const solver_options& options) const {
    const detail::deadline stop(options.time_limit_s);
    solver_options seed_options = options;
    seed_options.time_limit_s = options.time_limit_s / 2;  // the search gets the rest
    std::size_t ops = 0;
    for (const unit& u : in.units) {
      std::size_t most = 0;
      for (const option& o : u.options) most = std::max(most, o.ops.size());
      ops += most;
    }
    if (ops > max_search_ops) return greedy{}.solve(in, seed_options);
    search s(in, stop);
    return s.run(seed_options);
  }

 private:
  struct search {
    const instance& in;
    const std::size_t n_units;
    const int n_res;
    const detail::deadline& deadline;
    bool timed_out = false;
    std::uint64_t nodes = 0;
    // per unit and option: resource -> total time held
    std::vector<std::vector<std::vector<std::pair<int, double>>>> load;
    resource_clock clock;  // the ops placed so far
    std::vector<int> chosen;
    std::vector<std::uint64_t> done;
    std::vector<double> ends;  // [unit * 64 + op]: when a placed op ends (what waits for it starts then)
    struct step {
      std::size_t u, k, j;
    };
    std::vector<step> path, best_path;
    double best = std::numeric_limits<double>::infinity();

    search(const instance& i, const detail::deadline& stop)
        : in(i), n_units(i.units.size()), n_res(i.resources.size()), deadline(stop), clock(n_res) {
      load.resize(n_units);
      for (std::size_t u = 0; u < n_units; ++u)
        for (const option& o : in.units[u].options) {
          std::vector<std::pair<int, double>> m;
          for (const op& x : o.ops)
            for (std::size_t j = 0; j < x.resources.size(); ++j) {
              const int r = x.resources[j];
              auto it = std::find_if(m.begin(), m.end(), [&](auto& p) { return p.first == r; });
              if (it == m.end()) m.push_back({r, x.held_for(j)});
              else it->second += x.held_for(j);
            }
          load[u].push_back(std::move(m));
        }
    }

    solver_result run(const solver_options& options) {
      // Incumbent: the greedy schedule, replayed so that its order is the one we return.
      solver_result seed = greedy{}.solve(in, options);
      std::vector<op> ops = seed.ops;
      resource_clock c(n_res);
      ends.assign(n_units * 64, 0.0);
      for (op& o : ops) {
        const std::size_t at = static_cast<std::size_t>(o.unit) * 64;
        const double ready = o.after >= 0 && o.after < 64 ? ends[at + static_cast<std::size_t>(o.after)] : 0.0;
        c.place(o, ready);
        if (o.part >= 0 && o.part < 64) ends[at + static_cast<std::size_t>(o.part)] = o.end;
      }
      best = c.makespan();
      solver_result out;
      out.ops = ops;
      clock.reset();
      chosen.assign(n_units, -1);
      done.assign(n_units, 0);
      double root = bound(0, 0);
      dfs(0.0, 0.0, -1);
      if (!best_path.empty()) {
        out.ops.clear();
        for (const step& s : best_path) out.ops.push_back(in.units[s.u].options[s.k].ops[s.j]);
      }
      // The search lists schedules by start time; with the connection rule (transfers that wait
      // for, or start with, the other direction's) that may not be all of them: no proof then.
      out.proven_optimal = !timed_out && !uses_connections();
      out.bound_s = out.proven_optimal ? best : std::min(root, best);
      // The search and its bounds are the ordered model's. In concurrent mode messages share a
      // NIC's bandwidth and may end sooner than any ordered schedule: neither carries over.
      if (in.mode != execution::ordered) out.proven_optimal = false, out.bound_s = 0;
      return out;
    }

    bool uses_connections() const {
      for (const unit& u : in.units)
        for (const option& o : u.options)
          for (const op& x : o.ops)
            if (x.connection >= 0) return true;
      return false;
    }

    bool complete(std::size_t u) const {
      if (chosen[u] < 0) return false;
      std::size_t n = in.units[u].options[chosen[u]].ops.size();
      return done[u] == (n == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << n) - 1));
    }

    // Admissible bound on any completion of the current node.
    double bound(double makespan, double last_start) const {
      std::vector<double> demand(static_cast<std::size_t>(n_res), 0.0);
      std::vector<char> flexible_port(static_cast<std::size_t>(in.resources.ports), 0);
      double flexible = 0;
      for (std::size_t u = 0; u < n_units; ++u) {
        if (chosen[u] >= 0) {
          const auto& ops = in.units[u].options[chosen[u]].ops;
          for (std::size_t j = 0; j < ops.size(); ++j)
            if (!(done[u] >> j & 1))
              for (std::size_t q = 0; q < ops[j].resources.size(); ++q) demand[ops[j].resources[q]] += ops[j].held_for(q);
          continue;
        }
        // Unchosen: what every option puts on a resource is certain; the sender's extra is not,
        // but it lands on one of the unit's sender ports.
        for (const auto& [r, d] : load[u][0]) demand[r] += certain_share(u, r);
        if (in.units[u].has_choice()) {
          double least_extra = std::numeric_limits<double>::infinity();
          for (std::size_t k = 0; k < load[u].size(); ++k) {
            int p = in.resources.egress(in.net->port_of(in.units[u].options[k].sender));
            flexible_port[p] = 1;
            double mine = 0;
            for (const auto& [r, d] : load[u][k])
              if (r == p) mine = d;
            least_extra = std::min(least_extra, mine - certain_share(u, p));
          }
          flexible += std::max(0.0, least_extra);
        }
      }
      double b = makespan;
      double sum_base = 0;
      int count = 0;
      for (int r = 0; r < n_res; ++r) {
        double base = std::max(clock.free_at(r), last_start);
        if (demand[r] > 0) b = std::max(b, base + demand[r]);
        if (in.resources.is_egress(r) && flexible_port[in.resources.port_of(r)]) sum_base += base + demand[r], ++count;
      }
      if (count > 0 && flexible > 0) b = std::max(b, (sum_base + flexible) / count);
      return b;
    }

    // The part of unit u's load on resource p that every option carries.
    double certain_share(std::size_t u, int p) const {
      double least = std::numeric_limits<double>::infinity();
      for (const auto& m : load[u]) {
        double mine = 0;
        for (const auto& [r, d] : m)
          if (r == p) mine = d;
        least = std::min(least, mine);
      }
      return least;
    }

    void dfs(double makespan, double last_start, long long last_key) {
      if ((++nodes & 1023) == 0 && deadline.expired()) timed_out = true;
      if (timed_out) return;
      bool all_done = true;
      for (std::size_t u = 0; u < n_units && all_done; ++u) all_done = complete(u);
      if (all_done) {
        if (makespan < best - 1e-12) {
          best = makespan;
          best_path = path;
        }
        return;
      }
      if (bound(makespan, last_start) >= best - 1e-12) return;
      struct candidate {
        std::size_t u, k, j;
        double start;
      };
      std::vector<candidate> cands;
      for (std::size_t u = 0; u < n_units; ++u) {
        if (complete(u)) continue;
        std::size_t k0 = chosen[u] >= 0 ? static_cast<std::size_t>(chosen[u]) : 0;
        std::size_t k1 = chosen[u] >= 0 ? k0 + 1 : in.units[u].options.size();
        for (std::size_t k = k0; k < k1; ++k) {
          const auto& ops = in.units[u].options[k].ops;
          for (std::size_t j = 0; j < ops.size(); ++j) {
            if (done[u] >> j & 1) continue;
            if (ops[j].after >= 0 && !(done[u] >> ops[j].after & 1)) continue;
            const double start = clock.earliest_start(ops[j], ops[j].after >= 0 ? ends[u * 64 + static_cast<std::size_t>(ops[j].after)] : 0.0);
            long long key = static_cast<long long>(u) * 64 + static_cast<long long>(j);
            if (start < last_start - 1e-12 || (start <= last_start + 1e-12 && key <= last_key)) continue;
            cands.push_back({u, k, j, start});
          }
        }
      }
      // Earliest-finishing first, so good schedules are met early.
      std::sort(cands.begin(), cands.end(), [&](const candidate& a, const candidate& b) {
        return a.start + in.units[a.u].options[a.k].ops[a.j].duration <
               b.start + in.units[b.u].options[b.k].ops[b.j].duration;
      });
      resource_clock::undo_log saved;
      for (const candidate& c : cands) {
        const op& x = in.units[c.u].options[c.k].ops[c.j];
        const double end = c.start + x.duration;
        if (end >= best - 1e-12) continue;
        clock.mark(saved);
        clock.place(x, saved, c.start);  // at c.start: the clock is as it was when the candidates were listed
        ends[c.u * 64 + c.j] = end;
        int was = chosen[c.u];
        chosen[c.u] = static_cast<int>(c.k);
        done[c.u] |= std::uint64_t{1} << c.j;
        path.push_back({c.u, c.k, c.j});
        dfs(std::max(makespan, end), c.start, static_cast<long long>(c.u) * 64 + static_cast<long long>(c.j));
        path.pop_back();
        done[c.u] &= ~(std::uint64_t{1} << c.j);
        chosen[c.u] = was;
        clock.undo(saved);
        if (timed_out) return;
      }
    }
  };
};

}  // namespace meshcast

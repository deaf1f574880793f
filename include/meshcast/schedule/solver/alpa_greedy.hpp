// alpa_greedy: Alpa's greedy load-balancing algorithm. Work proceeds in rounds; in each round 100
// seeded random trials build a set of transfers in which no receiving host is busy twice and
// every sending host is free, drawing the sender of each transfer with weight
// (max_load - load + 1); the largest set wins, ties going to the smallest spread of host loads.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "../../core/detail/deadline.hpp"
#include "../../core/detail/mersenne_twister.hpp"
#include "../../core/detail/weighted_draw.hpp"
#include "../solver.hpp"

namespace meshcast {

struct alpa_greedy {
  static constexpr std::string_view name = "alpa_greedy";
  int trials = 100;

  const char* supports(const instance&) const { return nullptr; }

  solver_result solve(const instance& in, const solver_options& options) const {
    // No trial places no unit: it spun until the time limit, then read an emptied vector.
    if (trials < 1) throw error("alpa_greedy::trials is " + std::to_string(trials) + "; it needs at least 1");
    const detail::deadline stop(options.time_limit_s);
    const network& net = *in.net;
    solver_result r;
    std::vector<std::size_t> pending;
    for (std::size_t u = 0; u < in.units.size(); ++u) {
      if (in.units[u].has_choice() || uses_network(in, u)) pending.push_back(u);
      else detail::emit(in, u, 0, r.ops);  // local work needs no round
    }
    const auto hosts = static_cast<std::size_t>(net.host_count());
    std::vector<double> load(hosts, 0.0);
    detail::mt19937_64 rng(options.seed);
    while (!pending.empty()) {
      if (stop.expired()) {
        std::sort(pending.begin(), pending.end());
        for (std::size_t u : pending) {
          const unit& un = in.units[u];
          std::size_t k = 0;
          for (std::size_t c = 1; c < un.options.size(); ++c)
            if (load[net.host_of(un.options[c].sender)] < load[net.host_of(un.options[k].sender)]) k = c;
          load[net.host_of(un.options[k].sender)] += static_cast<double>(un.bytes);
          detail::emit(in, u, k, r.ops);
        }
        break;
      }
      std::vector<std::pair<std::size_t, std::size_t>> best;  // (unit, option)
      std::vector<double> best_load;
      double best_spread = 0;
      for (int trial = 0; trial < trials && (trial == 0 || !stop.expired()); ++trial) {
        std::vector<std::size_t> order = pending;
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<char> sending(hosts, 0), receiving(hosts, 0);
        std::vector<double> trial_load = load;
        std::vector<std::pair<std::size_t, std::size_t>> chosen;
        std::size_t looked = 0;
        for (std::size_t u : order) {
          if ((++looked & 4095) == 0 && stop.expired()) break;  // a trial on a large instance looks at the clock
          const unit& un = in.units[u];
          std::vector<index_t> into = receiving_hosts(un.options[0]);
          if (std::any_of(into.begin(), into.end(), [&](index_t h) { return receiving[h]; })) continue;
          std::vector<std::size_t> free;
          for (std::size_t k = 0; k < un.options.size(); ++k)
            if (!sending[net.host_of(un.options[k].sender)]) free.push_back(k);
          if (free.empty()) continue;
          double max_load = 0;
          for (std::size_t k : free) max_load = std::max(max_load, trial_load[net.host_of(un.options[k].sender)]);
          std::vector<double> weight;
          for (std::size_t k : free) weight.push_back(max_load - trial_load[net.host_of(un.options[k].sender)] + 1);
          std::size_t k = free[detail::weighted_index(weight, rng)];
          index_t h = net.host_of(un.options[k].sender);
          sending[h] = 1;
          for (index_t x : into) receiving[x] = 1;
          trial_load[h] += static_cast<double>(un.bytes);
          chosen.push_back({u, k});
        }
        auto [lo, hi] = std::minmax_element(trial_load.begin(), trial_load.end());
        double spread = *hi - *lo;
        if (chosen.size() > best.size() || (chosen.size() == best.size() && spread < best_spread)) {
          best = std::move(chosen);
          best_load = std::move(trial_load);
          best_spread = spread;
        }
      }
      load = best_load;
      std::vector<char> placed(in.units.size(), 0);
      for (auto [u, k] : best) {
        detail::emit(in, u, k, r.ops);
        placed[u] = 1;
      }
      std::erase_if(pending, [&](std::size_t u) { return placed[u] != 0; });
    }
    return r;
  }

 private:
  static bool uses_network(const instance& in, std::size_t u) {
    for (const op& o : in.units[u].options[0].ops)
      if (o.uses_nic(in.resources)) return true;
    return false;
  }
  static std::vector<index_t> receiving_hosts(const option& o) {
    std::vector<index_t> h;
    for (const op& x : o.ops)
      for (index_t r : x.ingress_hosts)
        if (std::find(h.begin(), h.end(), r) == h.end()) h.push_back(r);
    return h;
  }
};

}  // namespace meshcast

// greedy: list scheduling in the ordered model. Three orders are tried: (a) rounds: each unit goes
// to the first round in which none of its NIC ports is taken yet (first-fit colouring, the
// diagonal rounds of an open shop), longest first within a round; (b) the unit that can finish
// earliest goes next (small instances only: it re-evaluates units as resources fill); (c)
// longest unit first. Each unit takes the option (sender) that finishes it earliest given what is
// already placed. A short local search then moves units earlier in the best list while that does
// not lengthen the schedule.
#pragma once

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
#include <queue>
#include <tuple>
#include <random>
#include <vector>

#include "../solver.hpp"

namespace meshcast {

struct greedy {
  static constexpr std::string_view name = "greedy";
  /// Time after which the local search stops (counted from the start, construction included).
  double search_limit_s = 0.03;
  /// Largest instance (in units) for the earliest-finish order, whose cost grows faster than linearly.
  std::size_t earliest_finish_limit = 256;

  const char* supports(const instance&) const { return nullptr; }

  solver_result solve(const instance& in, const solver_options& options) const {
    solver_result r;
    outcome best = search(in, options);
    r.ops = ops_of(in, best.order, best.choice);
    return r;
  }

  /// The best list found: unit order, option of each unit, and its makespan.
  struct outcome {
    std::vector<std::size_t> order, choice;
    double makespan = 0;
  };

  outcome search(const instance& in, const solver_options& options) const {
    const auto begin = std::chrono::steady_clock::now();
    const double limit = std::min(options.time_limit_s, search_limit_s);
    std::vector<double> weight(in.units.size(), 0.0);
    for (std::size_t u = 0; u < in.units.size(); ++u)
      for (const option& o : in.units[u].options) {
        double w = 0;
        for (const op& x : o.ops) w += x.duration;
        weight[u] = std::max(weight[u], w);
      }
    outcome best;
    best.order = round_order(in, weight);
    best.makespan = list_schedule(in, best.order, &best.choice);
    outcome trial;
    if (in.units.size() <= earliest_finish_limit) {
      trial.order = earliest_finish_order(in, weight);
      trial.makespan = list_schedule(in, trial.order, &trial.choice);
      if (trial.makespan < best.makespan) std::swap(best, trial);
    }
    trial.order.resize(in.units.size());
    std::iota(trial.order.begin(), trial.order.end(), 0);
    std::stable_sort(trial.order.begin(), trial.order.end(),
                     [&](std::size_t a, std::size_t b) { return weight[a] > weight[b]; });
    trial.makespan = list_schedule(in, trial.order, &trial.choice);
    if (trial.makespan < best.makespan) std::swap(best, trial);
    std::mt19937_64 rng(options.seed);
    for (int it = 0; best.order.size() > 1; ++it) {
      if ((it & 7) == 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() > limit) break;
      trial.order = best.order;
      std::size_t i = rng() % trial.order.size(), j = rng() % trial.order.size();
      if (i == j) continue;
      if (i > j) std::swap(i, j);
      std::rotate(trial.order.begin() + i, trial.order.begin() + j, trial.order.begin() + j + 1);  // j before i
      trial.makespan = list_schedule(in, trial.order, &trial.choice);
      if (trial.makespan <= best.makespan) std::swap(best, trial);
    }
    return best;
  }

  /// Places the units in the given order, each with its earliest-finishing option; returns the
  /// makespan and, with `choice`, the option taken by every unit.
  static double list_schedule(const instance& in, const std::vector<std::size_t>& order,
                              std::vector<std::size_t>* choice = nullptr) {
    if (choice) choice->assign(in.units.size(), 0);
    std::vector<double> free(static_cast<std::size_t>(in.resources.size()), 0.0);
    scratch touched(in.resources.size());
    double makespan = 0;
    for (std::size_t u : order) {
      const unit& un = in.units[u];
      std::size_t best = best_option(in, un, free, touched);
      if (choice) (*choice)[u] = best;
      for (const op& x : un.options[best].ops) {
        double start = 0;
        for (int r : x.resources) start = std::max(start, free[r]);
        for (int r : x.resources) free[r] = start + x.duration;
        makespan = std::max(makespan, start + x.duration);
      }
    }
    return makespan;
  }

  /// The ops of a list schedule, in issue order.
  static std::vector<op> ops_of(const instance& in, const std::vector<std::size_t>& order,
                                const std::vector<std::size_t>& choice) {
    std::vector<op> out;
    for (std::size_t u : order) detail::emit(in, u, choice[u], out);
    return out;
  }

 private:
  struct scratch {
    explicit scratch(int resources) : stamp(static_cast<std::size_t>(resources), 0), time(static_cast<std::size_t>(resources), 0.0) {}
    std::vector<std::uint64_t> stamp;
    std::vector<double> time;
    std::uint64_t epoch = 0;
  };

  // First-fit rounds: a unit (with the sender whose port is free earliest among the rounds) takes
  // the first round where none of its ports is used; units are then sorted by round, longest first.
  static std::vector<std::size_t> round_order(const instance& in, const std::vector<double>& weight) {
    const resource_space& rs = in.resources;
    std::vector<std::vector<char>> used(static_cast<std::size_t>(2 * rs.ports));
    auto taken = [&](int port, std::size_t r) { return r < used[port].size() && used[port][r]; };
    std::vector<std::size_t> by_weight(in.units.size());
    std::iota(by_weight.begin(), by_weight.end(), 0);
    std::stable_sort(by_weight.begin(), by_weight.end(), [&](std::size_t a, std::size_t b) { return weight[a] > weight[b]; });
    std::vector<std::size_t> round(in.units.size(), 0);
    std::vector<int> ports;
    for (std::size_t u : by_weight) {
      std::size_t best_round = std::numeric_limits<std::size_t>::max(), best_k = 0;
      for (std::size_t k = 0; k < in.units[u].options.size(); ++k) {
        ports.clear();
        for (const op& x : in.units[u].options[k].ops)
          for (int r : x.resources)
            if (rs.is_port(r) && std::find(ports.begin(), ports.end(), r) == ports.end()) ports.push_back(r);
        std::size_t r = 0;
        while (std::any_of(ports.begin(), ports.end(), [&](int p) { return taken(p, r); })) ++r;
        if (r < best_round) best_round = r, best_k = k;
      }
      for (const op& x : in.units[u].options[best_k].ops)
        for (int r : x.resources)
          if (rs.is_port(r)) {
            if (used[r].size() <= best_round) used[r].resize(best_round + 1, 0);
            used[r][best_round] = 1;
          }
      round[u] = best_round;
    }
    std::vector<std::size_t> order = by_weight;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return round[a] < round[b]; });
    return order;
  }

  // The order in which units are met when the one that can finish earliest always goes next.
  // Finish times only grow as resources fill up, so a stale heap entry is re-evaluated when popped.
  static std::vector<std::size_t> earliest_finish_order(const instance& in, const std::vector<double>& weight) {
    std::vector<double> free(static_cast<std::size_t>(in.resources.size()), 0.0);
    scratch touched(in.resources.size());
    auto finish_of = [&](std::size_t u) {
      double best = std::numeric_limits<double>::infinity();
      for (const option& o : in.units[u].options) best = std::min(best, try_option(o, free, touched));
      return best;
    };
    using entry = std::tuple<double, double, std::size_t>;  // finish, -weight, unit
    std::priority_queue<entry, std::vector<entry>, std::greater<entry>> heap;
    for (std::size_t u = 0; u < in.units.size(); ++u) heap.push({finish_of(u), -weight[u], u});
    std::vector<std::size_t> order;
    order.reserve(in.units.size());
    while (!heap.empty()) {
      auto [finish, w, u] = heap.top();
      heap.pop();
      if (double now = finish_of(u); now > finish + 1e-15) {
        heap.push({now, w, u});
        continue;
      }
      order.push_back(u);
      // Place it exactly as list_schedule will.
      const unit& un = in.units[u];
      std::size_t pick = best_option(in, un, free, touched);
      for (const op& x : un.options[pick].ops) {
        double start = 0;
        for (int r : x.resources) start = std::max(start, free[r]);
        for (int r : x.resources) free[r] = start + x.duration;
      }
    }
    return order;
  }

  static std::size_t best_option(const instance& in, const unit& un, const std::vector<double>& free,
                                 scratch& touched) {
    std::size_t best = 0;
    double best_finish = 0, best_tie = 0;
    for (std::size_t k = 0; k < un.options.size(); ++k) {
      double finish = try_option(un.options[k], free, touched);
      double tie = un.options[k].sender >= 0 ? free[in.resources.egress(in.net->port_of(un.options[k].sender))] : 0;
      if (k == 0 || finish < best_finish - 1e-15 || (finish <= best_finish + 1e-15 && tie < best_tie)) {
        best = k;
        best_finish = finish;
        best_tie = tie;
      }
    }
    return best;
  }

  // Finish time of an option appended now, without changing `free` (scratch holds the option's
  // own updates, found in O(1) by stamping the resources it touched).
  static double try_option(const option& o, const std::vector<double>& free, scratch& tmp) {
    ++tmp.epoch;
    double finish = 0;
    for (const op& x : o.ops) {
      double start = 0;
      for (int r : x.resources) start = std::max(start, tmp.stamp[r] == tmp.epoch ? tmp.time[r] : free[r]);
      double end = start + x.duration;
      for (int r : x.resources) tmp.stamp[r] = tmp.epoch, tmp.time[r] = end;
      finish = std::max(finish, end);
    }
    return finish;
  }
};

}  // namespace meshcast

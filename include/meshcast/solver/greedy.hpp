// greedy: list scheduling in the ordered model. Units go longest first; each takes the option
// (sender) that finishes it earliest given what is already placed. A short local search then
// moves units earlier in the list while that does not lengthen the schedule.
#pragma once

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>
#include <vector>

#include "../solver.hpp"

namespace meshcast {

struct greedy {
  static constexpr std::string_view name = "greedy";
  /// Upper limit on the local search (the construction itself is not limited).
  double search_limit_s = 0.03;

  const char* supports(const instance&) const { return nullptr; }

  solver_result solve(const instance& in, const solver_options& options) const {
    solver_result r;
    r.ops = search(in, options).ops;
    return r;
  }

  /// The best list found: unit order, option of each unit, and the ops in issue order.
  struct outcome {
    std::vector<std::size_t> order, choice;
    std::vector<op> ops;
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
    best.order.resize(in.units.size());
    std::iota(best.order.begin(), best.order.end(), 0);
    std::vector<std::size_t> plain = best.order;
    std::stable_sort(best.order.begin(), best.order.end(),
                     [&](std::size_t a, std::size_t b) { return weight[a] > weight[b]; });
    best.makespan = list_schedule(in, best.order, best.ops, &best.choice);
    outcome trial;
    trial.makespan = list_schedule(in, plain, trial.ops, &trial.choice);  // plan order as a second start
    if (trial.makespan < best.makespan) {
      trial.order = plain;
      std::swap(best, trial);
    }
    std::mt19937_64 rng(options.seed);
    for (int it = 0; best.order.size() > 1; ++it) {
      if ((it & 7) == 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() > limit) break;
      trial.order = best.order;
      std::size_t i = rng() % trial.order.size(), j = rng() % trial.order.size();
      if (i == j) continue;
      if (i > j) std::swap(i, j);
      std::rotate(trial.order.begin() + i, trial.order.begin() + j, trial.order.begin() + j + 1);  // j before i
      trial.makespan = list_schedule(in, trial.order, trial.ops, &trial.choice);
      if (trial.makespan <= best.makespan) std::swap(best, trial);
    }
    return best;
  }

  /// Places the units in the given order, each with its earliest-finishing option.
  static double list_schedule(const instance& in, const std::vector<std::size_t>& order, std::vector<op>& out,
                              std::vector<std::size_t>* choice = nullptr) {
    out.clear();
    if (choice) choice->assign(in.units.size(), 0);
    std::vector<double> free(static_cast<std::size_t>(in.resources.size()), 0.0);
    std::vector<std::pair<int, double>> touched;
    double makespan = 0;
    for (std::size_t u : order) {
      const unit& un = in.units[u];
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
      if (choice) (*choice)[u] = best;
      for (const op& x : un.options[best].ops) {
        op& placed = out.emplace_back(x);
        double start = 0;
        for (int r : placed.resources) start = std::max(start, free[r]);
        placed.start = start;
        placed.end = start + placed.duration;
        for (int r : placed.resources) free[r] = placed.end;
        makespan = std::max(makespan, placed.end);
      }
    }
    return makespan;
  }

 private:
  // Finish time of an option appended now, without changing `free`.
  static double try_option(const option& o, const std::vector<double>& free, std::vector<std::pair<int, double>>& touched) {
    touched.clear();
    auto at = [&](int r) {
      for (auto& [res, t] : touched)
        if (res == r) return t;
      return free[r];
    };
    double finish = 0;
    for (const op& x : o.ops) {
      double start = 0;
      for (int r : x.resources) start = std::max(start, at(r));
      double end = start + x.duration;
      for (int r : x.resources) {
        auto it = std::find_if(touched.begin(), touched.end(), [&](auto& p) { return p.first == r; });
        if (it == touched.end()) touched.push_back({r, end});
        else it->second = end;
      }
      finish = std::max(finish, end);
    }
    return finish;
  }
};

}  // namespace meshcast

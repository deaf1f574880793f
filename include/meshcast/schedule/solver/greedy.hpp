// greedy: list scheduling in the ordered model. Each unit takes, unless told otherwise, the
// option (sender) that finishes it earliest given what is already placed. Orders tried:
// (a) first-fit rounds: a unit goes to the first round where none of its NIC ports is taken yet;
// (b) the unit that can finish earliest next (small instances: it re-evaluates units as resources
//     fill up); (c) longest first; (d) longest first with senders fixed beforehand to balance the
//     sender ports; (e) senders from the egress bound's optimal flow (rounded by quotas), units in
//     the Koenig colour classes of the (sender port, receiving port) multigraph.
// A local search then moves units earlier, or gives one another sender, while that does not
// lengthen the schedule. Last, the chosen options are dispatched op by op (solver/dispatch.hpp),
// kept where that ends sooner than the list. All of it reads the instance's packed timing
// (schedule/op_timing.hpp), made once per solve: a list places every option of every unit.
#pragma once

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
#include <queue>
#include <tuple>
#include <vector>

#include "../../core/detail/deadline.hpp"
#include "../../core/detail/edge_colour.hpp"
#include "../../core/detail/mersenne_twister.hpp"
#include "../../model/ordered_engine.hpp"
#include "../op_timing.hpp"
#include "../senders.hpp"
#include "dispatch.hpp"
#include "../solver.hpp"

namespace meshcast {

struct greedy {
  static constexpr std::string_view name = "greedy";
  /// The local search's work, in op placements (a list schedule places every op once): a count,
  /// not a time, so that the answer is the same however loaded the machine is. It makes at least
  /// 8 and at most 4096 moves, and stops after `search_patience` moves in a row that shorten
  /// nothing (on a whole model's batch it rarely finds anything: the list is within a percent of
  /// the bound).
  std::size_t search_placements = std::size_t{1} << 19;
  std::size_t search_patience = 32;
  /// Time after which the local search stops whatever is left of its work (counted from the
  /// start, construction included; 0: no local search).
  double search_limit_s = 0.25;
  /// Largest instance (in units) for the earliest-finish order, whose cost grows faster than linearly.
  std::size_t earliest_finish_limit = 256;

  const char* supports(const instance&) const { return nullptr; }

  solver_result solve(const instance& in, const solver_options& options) const {
    solver_result r;
    const instance_timing timing(in);
    outcome best = search(in, timing, options);
    // The same choices, op by op (solver/dispatch.hpp), where that ends sooner.
    const detail::dispatched d = detail::dispatch_sequence(in, timing, best.order, best.choice, detail::dispatch_looks);
    r.ops = d.done && !d.sequence.empty() && d.makespan < best.makespan * (1 - 1e-12) ? d.materialize()
                                                                                   : ops_of(in, best.order, best.choice);
    return r;
  }

  /// The best list found: unit order, option of each unit, and its makespan.
  struct outcome {
    std::vector<std::size_t> order, choice;
    std::vector<int> forced;  ///< option imposed on a unit (-1: the list picks it)
    double makespan = 0;
  };

  outcome search(const instance& in, const solver_options& options) const { return search(in, instance_timing(in), options); }
  /// The same over the instance's timing made beforehand.
  outcome search(const instance& in, const instance_timing& timing, const solver_options& options) const {
    const auto begin = std::chrono::steady_clock::now();
    // Everything, constructions included, stops at the time limit; the plain list (units in plan
    // order, each with its earliest-finishing sender) is the answer if nothing else fits in it.
    const detail::deadline stop(options.time_limit_s);
    const double limit = std::min(options.time_limit_s, search_limit_s);
    std::vector<double> weight(in.units.size(), 0.0);
    for (std::size_t u = 0; u < in.units.size(); ++u)
      for (std::size_t k = 0; k < in.units[u].options.size(); ++k) {
        double w = 0;
        for (const op_timing& x : timing.ops(u, k)) w += x.duration;
        weight[u] = std::max(weight[u], w);
      }
    outcome best;
    best.order.resize(in.units.size());
    std::iota(best.order.begin(), best.order.end(), 0);
    best.makespan = list_schedule(in, timing, best.order, &best.choice);
    outcome trial;
    auto consider = [&](std::vector<std::size_t> order, std::vector<int> forced) {
      if (order.empty() && !in.units.empty()) return;  // the construction ran out of time
      trial.order = std::move(order);
      trial.forced = std::move(forced);
      trial.makespan = list_schedule(in, timing, trial.order, &trial.choice, trial.forced.empty() ? nullptr : &trial.forced);
      if (trial.makespan < best.makespan) std::swap(best, trial);
    };
    if (!stop.expired()) consider(round_order(in, timing, weight, stop), {});
    if (in.units.size() <= earliest_finish_limit && !stop.expired()) consider(earliest_finish_order(in, timing, weight), {});
    std::vector<std::size_t> lpt(in.units.size());
    std::iota(lpt.begin(), lpt.end(), 0);
    std::stable_sort(lpt.begin(), lpt.end(), [&](std::size_t a, std::size_t b) { return weight[a] > weight[b]; });
    const bool large = in.units.size() > earliest_finish_limit * 8;
    if (!large) {
      // (c) longest first; (d) senders chosen first to balance the sender ports, then longest first.
      // On large instances (a) and (e) do their job at a lower cost.
      if (!stop.expired()) consider(lpt, {});
      if (!stop.expired()) consider(lpt, balanced_senders(in, lpt));
    }
    // (e) senders from the egress bound's optimal flow, then the units as the edges of a bipartite
    // multigraph (sender port, receiving port) in Koenig colour classes.
    if (!stop.expired()) {
      std::vector<int> forced = quota_senders(in, lpt);
      for (std::size_t u = 0; u < in.units.size(); ++u)
        if (!in.units[u].has_choice()) forced[u] = -1;
      if (!stop.expired())
        if (std::vector<std::size_t> rounds = colour_order(in, timing, forced, weight, stop); !rounds.empty())
          consider(std::move(rounds), std::move(forced));
    }
    if (best.forced.empty()) best.forced.assign(in.units.size(), -1);
    // Local search: move a unit earlier, or impose another sender on one.
    detail::mt19937_64 rng(options.seed);
    std::vector<std::size_t> with_choice;
    for (std::size_t u = 0; u < in.units.size(); ++u)
      if (in.units[u].has_choice()) with_choice.push_back(u);
    // A move costs one list schedule.
    std::size_t placed = 1;
    for (std::size_t u = 0; u < in.units.size(); ++u) placed += in.units[u].options[best.choice[u]].ops.size();
    const std::size_t moves = std::clamp<std::size_t>(search_placements / placed, 8, 4096);
    if (best.order.size() <= 1 || limit <= 0 || search_patience == 0) return best;
    // A move changes the list from some position on: it starts from the best list's clock stored
    // at or before that position, and gives up once its makespan passes the best (it only grows).
    // Both keep every choice and time a move placed from scratch would have. Up to 64 clocks are
    // stored, fewer where a clock is large beside the list (connection slots of a 256-device
    // batch: copying the clocks would cost more than the placements they save); about 64 bytes of
    // clock per op placed.
    const std::size_t n = in.units.size();
    const std::size_t clock_bytes = sizeof(double) * static_cast<std::size_t>(in.resources.size()) +
                                    sizeof(connection_use) * static_cast<std::size_t>(in.connections.slots()) + 1;
    const std::size_t stored = std::clamp<std::size_t>(placed * 64 / clock_bytes, 1, 64);
    const std::size_t every = std::max<std::size_t>(1, (n + stored - 1) / stored);
    list_clocks at_best{every, std::vector<resource_clock>(n / every + 1, resource_clock(in.resources.size()))}, at_trial = at_best;
    {
      const std::vector<int> chosen(best.choice.begin(), best.choice.end());
      resource_clock clock(in.resources.size());
      place_units(in, timing, best.order, 0, clock, nullptr, &chosen, &at_best);
    }
    std::vector<std::size_t> where(n);  // position of each unit in best.order
    for (std::size_t p = 0; p < n; ++p) where[best.order[p]] = p;
    std::size_t stale = 0;
    for (std::size_t it = 0; it < moves && stale < search_patience; ++it) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() > limit) break;
      trial.order = best.order;
      trial.forced = best.forced;
      std::size_t from = 0;  // the first position where the move's list may differ from the best
      if (!with_choice.empty() && (it & 1)) {
        std::size_t u = with_choice[rng() % with_choice.size()];
        for (std::size_t v = 0; v < in.units.size(); ++v)
          if (trial.forced[v] < 0) trial.forced[v] = static_cast<int>(best.choice[v]);
        trial.forced[u] = static_cast<int>(rng() % in.units[u].options.size());
        from = where[u];
      } else {
        std::size_t i = rng() % trial.order.size(), j = rng() % trial.order.size();
        if (i == j) continue;
        if (i > j) std::swap(i, j);
        std::rotate(trial.order.begin() + i, trial.order.begin() + j, trial.order.begin() + j + 1);  // j before i
        from = i;
      }
      const std::size_t k = from / every;
      resource_clock clock = at_best.clocks[k];
      trial.choice = best.choice;
      trial.makespan = place_units(in, timing, trial.order, k * every, clock, &trial.choice, &trial.forced, &at_trial, best.makespan);
      stale = trial.makespan < best.makespan ? 0 : stale + 1;
      if (trial.makespan <= best.makespan) {
        for (std::size_t c = 0; c < k; ++c) at_trial.clocks[c] = at_best.clocks[c];
        std::swap(best, trial);
        std::swap(at_best, at_trial);
        for (std::size_t p = 0; p < n; ++p) where[best.order[p]] = p;
      }
    }
    return best;
  }

  /// Places the units in the given order, each with its earliest-finishing option; returns the
  /// makespan and, with `choice`, the option taken by every unit.
  static double list_schedule(const instance& in, const std::vector<std::size_t>& order,
                              std::vector<std::size_t>* choice = nullptr, const std::vector<int>* forced = nullptr) {
    return list_schedule(in, instance_timing(in), order, choice, forced);
  }
  /// The same over the instance's timing made beforehand (a search places its units many times).
  static double list_schedule(const instance& in, const instance_timing& timing, const std::vector<std::size_t>& order,
                              std::vector<std::size_t>* choice = nullptr, const std::vector<int>* forced = nullptr) {
    if (choice) choice->assign(in.units.size(), 0);
    resource_clock clock(in.resources.size());
    return place_units(in, timing, order, 0, clock, choice, forced);
  }

  /// The ops of a list schedule, in issue order.
  static std::vector<op> ops_of(const instance& in, const std::vector<std::size_t>& order,
                                const std::vector<std::size_t>& choice) {
    std::vector<op> out;
    std::size_t n = 0;
    for (std::size_t u : order) n += in.units[u].options[choice[u]].ops.size();
    out.reserve(n);
    for (std::size_t u : order) detail::emit(in, u, choice[u], out);
    return out;
  }

 private:
  /// The clock of a list before every `every`-th position (clocks[k]: before position k * every).
  struct list_clocks {
    std::size_t every = 1;
    std::vector<resource_clock> clocks;
  };

  // Places order[from...] on `clock` (the list's clock before position `from`), each unit with
  // its forced option or else its earliest-finishing one; with `keep`, stores the clock at the
  // positions it names. Stops once the makespan passes `give_up_above` and returns it (the list
  // could only end later). Returns the makespan.
  static double place_units(const instance& in, const instance_timing& timing, const std::vector<std::size_t>& order,
                            std::size_t from, resource_clock& clock, std::vector<std::size_t>* choice,
                            const std::vector<int>* forced, list_clocks* keep = nullptr,
                            double give_up_above = std::numeric_limits<double>::infinity()) {
    trial_clock trial(in.resources.size());
    for (std::size_t p = from; p < order.size(); ++p) {
      if (keep && p % keep->every == 0) keep->clocks[p / keep->every] = clock;
      const std::size_t u = order[p];
      std::size_t best = forced && (*forced)[u] >= 0 ? static_cast<std::size_t>((*forced)[u])
                                                     : best_option(in.units[u], u, timing, clock, trial);
      if (choice) (*choice)[u] = best;
      clock.place_option(timing.ops(u, best));
      if (clock.makespan() > give_up_above) break;
    }
    return clock.makespan();
  }

  // When every unit (with its forced option) crosses exactly one egress and one ingress port, the
  // units are edges of a bipartite multigraph; its Koenig colouring gives rounds with no port
  // twice. Returns the units by round (longest first within one), or nothing if it does not apply.
  static std::vector<std::size_t> colour_order(const instance& in, const instance_timing& timing, const std::vector<int>& forced,
                                               const std::vector<double>& weight, const detail::deadline& stop) {
    const resource_space& rs = in.resources;
    std::vector<std::pair<int, int>> ends;
    std::vector<std::size_t> nic_units, local_units;
    for (std::size_t u = 0; u < in.units.size(); ++u) {
      int out = -1, into = -1;
      for (const op_timing& x : timing.ops(u, forced[u] >= 0 ? static_cast<std::size_t>(forced[u]) : 0))
        for (int r : x.resources) {
          if (rs.is_egress(r)) {
            if (out >= 0 && out != r) return {};
            out = r;
          } else if (rs.is_ingress(r)) {
            if (into >= 0 && into != r) return {};
            into = r;
          }
        }
      if (out < 0 && into < 0) {
        local_units.push_back(u);
        continue;
      }
      if (out < 0 || into < 0) return {};
      ends.push_back({out, into});
      nic_units.push_back(u);
    }
    std::vector<int> degree(static_cast<std::size_t>(rs.port_directions()), 0);
    for (auto [a, b] : ends) ++degree[a], ++degree[b];
    const int colours = ends.empty() ? 0 : *std::max_element(degree.begin(), degree.end());
    std::vector<int> colour = detail::edge_colour(ends, rs.port_directions(), colours, &stop);
    if (colour.empty()) return {};
    std::vector<std::size_t> order = local_units;
    std::vector<std::size_t> by(nic_units.size());
    std::iota(by.begin(), by.end(), 0);
    std::stable_sort(by.begin(), by.end(), [&](std::size_t a, std::size_t b) {
      return colour[a] != colour[b] ? colour[a] < colour[b] : weight[nic_units[a]] > weight[nic_units[b]];
    });
    for (std::size_t i : by) order.push_back(nic_units[i]);
    return order;
  }

  // Each unit, longest first, takes the sender whose port would then carry the least time.
  static std::vector<int> balanced_senders(const instance& in, const std::vector<std::size_t>& longest_first) {
    std::vector<double> load(static_cast<std::size_t>(in.resources.size()), 0.0);
    std::vector<int> forced(in.units.size(), -1);
    for (std::size_t u : longest_first) {
      const unit& un = in.units[u];
      if (!un.has_choice()) continue;
      int best = 0;
      double best_load = std::numeric_limits<double>::infinity();
      for (std::size_t k = 0; k < un.options.size(); ++k) {
        double peak = 0;
        for (const op& x : un.options[k].ops)
          for (std::size_t j = 0; j < x.resources.size(); ++j)
            if (in.resources.is_port(x.resources[j])) peak = std::max(peak, load[x.resources[j]] + x.held_for(j));
        if (peak < best_load) best_load = peak, best = static_cast<int>(k);
      }
      forced[u] = best;
      for (const op& x : un.options[best].ops)
        for (std::size_t j = 0; j < x.resources.size(); ++j)
          if (in.resources.is_port(x.resources[j])) load[x.resources[j]] += x.held_for(j);
    }
    return forced;
  }

  // First-fit rounds: a unit (with the sender whose port is free earliest among the rounds) takes
  // the first round where none of its ports is used; units are then sorted by round, longest first.
  static std::vector<std::size_t> round_order(const instance& in, const instance_timing& timing,
                                              const std::vector<double>& weight, const detail::deadline& stop) {
    const resource_space& rs = in.resources;
    std::vector<std::vector<char>> used(static_cast<std::size_t>(rs.port_directions()));
    auto taken = [&](int port, std::size_t r) { return r < used[port].size() && used[port][r]; };
    std::vector<std::size_t> by_weight(in.units.size());
    std::iota(by_weight.begin(), by_weight.end(), 0);
    std::stable_sort(by_weight.begin(), by_weight.end(), [&](std::size_t a, std::size_t b) { return weight[a] > weight[b]; });
    std::vector<std::size_t> round(in.units.size(), 0);
    // Every round below lowest_free[port] is taken on that port: a unit's search starts at the
    // largest of its ports' (without it, units that all share a port cost quadratic time).
    std::vector<std::size_t> lowest_free(used.size(), 0);
    std::vector<int> ports;
    std::size_t done = 0;
    for (std::size_t u : by_weight) {
      if ((++done & 255) == 0 && stop.expired()) return {};
      std::size_t best_round = std::numeric_limits<std::size_t>::max(), best_k = 0;
      for (std::size_t k = 0; k < in.units[u].options.size(); ++k) {
        ports.clear();
        for (const op_timing& x : timing.ops(u, k))
          for (int r : x.resources)
            if (rs.is_port(r) && std::find(ports.begin(), ports.end(), r) == ports.end()) ports.push_back(r);
        std::size_t r = 0;
        for (int p : ports) r = std::max(r, lowest_free[p]);
        while (std::any_of(ports.begin(), ports.end(), [&](int p) { return taken(p, r); })) ++r;
        if (r < best_round) best_round = r, best_k = k;
      }
      for (const op_timing& x : timing.ops(u, best_k))
        for (int r : x.resources)
          if (rs.is_port(r)) {
            if (used[r].size() <= best_round) used[r].resize(best_round + 1, 0);
            used[r][best_round] = 1;
            while (taken(r, lowest_free[r])) ++lowest_free[r];
          }
      round[u] = best_round;
    }
    std::vector<std::size_t> order = by_weight;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return round[a] < round[b]; });
    return order;
  }

  // The order in which units are met when the one that can finish earliest always goes next.
  // Finish times only grow as resources fill up, so a stale heap entry is re-evaluated when popped.
  static std::vector<std::size_t> earliest_finish_order(const instance& in, const instance_timing& timing,
                                                        const std::vector<double>& weight) {
    resource_clock clock(in.resources.size());
    trial_clock trial(in.resources.size());
    auto finish_of = [&](std::size_t u) {
      double best = std::numeric_limits<double>::infinity();
      for (std::size_t k = 0; k < in.units[u].options.size(); ++k) best = std::min(best, trial.finish(timing.ops(u, k), clock));
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
      clock.place_option(timing.ops(u, best_option(in.units[u], u, timing, clock, trial)));
    }
    return order;
  }

  // The option that finishes the unit earliest if placed now; ties go to the sender whose port is
  // free earliest.
  static std::size_t best_option(const unit& un, std::size_t u, const instance_timing& timing, const resource_clock& clock,
                                 trial_clock& trial) {
    std::size_t best = 0;
    double best_finish = 0, best_tie = 0;
    for (std::size_t k = 0; k < un.options.size(); ++k) {
      double finish = trial.finish(timing.ops(u, k), clock);
      const int port = timing.sender_egress(u, k);
      double tie = port >= 0 ? clock.free_at(port) : 0;
      if (k == 0 || finish < best_finish - 1e-15 || (finish <= best_finish + 1e-15 && tie < best_tie)) {
        best = k;
        best_finish = finish;
        best_tie = tie;
      }
    }
    return best;
  }
};

}  // namespace meshcast

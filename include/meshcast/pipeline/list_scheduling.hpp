// list_scheduling: the default policy. A portfolio, best makespan wins:
// 1. the fixed rules (prior_first, later_first, rounds) and the phase order with the transfers of a phase
//    sorted by criticality (longest path to the end first);
// 2. list scheduling in simulated time, appending one operation at a time (a compute once its
//    inputs have arrived, a transfer once its data was computed, anywhere in the lists): the
//    non-delay rule (the operation that can start first; ties to the most critical) and the
//    active-schedule rule of Giffler and Thompson (find the operation that can finish first; among
//    those on its streams that could start before that, the most critical), criticality being
//    the longest path from the operation to the end over the dependencies;
// 3. the priorities of the best construction perturbed at random and rebuilt, for `iterations`
//    rounds;
// 4. local search on the best lists: two neighbours of a stage's list swapped (half of the time an
//    operation of the critical chain moved one place earlier), kept unless the lists deadlock or
//    finish later (ties broken by the sum of the stages' finishing times), for `swaps` tries.
// Every step stops at the time limit; on large pipelines a step starts only if the time its kind
// took before still fits (prior_first, linear in the lists' size, always runs first). When the
// limit lets the fixed rules run, never worse than prior_first, later_first or rounds.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <queue>
#include <string_view>
#include <vector>

#include "../core/detail/deadline.hpp"
#include "../core/detail/mersenne_twister.hpp"
#include "detail/appender.hpp"
#include "detail/phases.hpp"
#include "policy.hpp"
#include "later_first.hpp"
#include "prior_first.hpp"
#include "rounds.hpp"
#include "simulate.hpp"

namespace meshcast::pipeline {

namespace detail {
using clock = meshcast::detail::deadline::clock;

/// The non-delay rule with a lazy heap: the candidate that can start first (ties: larger
/// priority, then smaller id). Earliest starts only grow as operations are appended, so a stale
/// entry is pushed back with its new start. O(operations x log). False if the deadline passed.
inline bool construct_non_delay(appender& a, const std::vector<double>& prio, clock::time_point deadline) {
  struct entry {
    double est, prio;
    graph::id o;
    bool operator<(const entry& x) const {  // "lower priority than": the heap's top is the best
      if (est != x.est) return est > x.est;
      if (prio != x.prio) return prio < x.prio;
      return o > x.o;
    }
  };
  std::priority_queue<entry> heap;
  for (graph::id o : a.candidates()) heap.push({a.est(o), prio[o], o});
  std::size_t steps = 0;
  while (!a.complete()) {
    if ((++steps & 1023) == 0 && clock::now() > deadline) return false;
    const entry top = heap.top();
    heap.pop();
    const double e = a.est(top.o);
    if (e > top.est) {
      heap.push({e, top.prio, top.o});
      continue;
    }
    const std::size_t before = a.candidates().size();
    a.append(top.o);
    for (std::size_t k = before - 1; k < a.candidates().size(); ++k) {
      const graph::id o = a.candidates()[k];
      heap.push({a.est(o), prio[o], o});
    }
  }
  return true;
}

/// The active rule of Giffler and Thompson: find the candidate that can finish first; among the
/// candidates on its streams that could start before then, take the one of largest priority
/// (ties: earlier start, then smaller id). Scans the candidates at every step. False if the
/// deadline passed.
inline bool construct_active(appender& a, const std::vector<double>& prio, clock::time_point deadline) {
  const double inf = std::numeric_limits<double>::infinity();
  std::size_t steps = 0;
  while (!a.complete()) {
    if ((++steps & 255) == 0 && clock::now() > deadline) return false;
    const std::vector<graph::id>& cand = a.candidates();
    double best_ect = inf, best_prio = -inf;
    graph::id star = -1;
    for (graph::id o : cand) {
      const double c = a.ect(o);
      if (c < best_ect || (c == best_ect && (prio[o] > best_prio || (prio[o] == best_prio && o < star))))
        best_ect = c, best_prio = prio[o], star = o;
    }
    const index_t r1 = a.resource_a(star), r2 = a.resource_b(star);
    graph::id pick = star;
    best_prio = prio[star];
    double pick_est = a.est(star);
    for (graph::id o : cand) {
      if (o == star) continue;
      const index_t x1 = a.resource_a(o), x2 = a.resource_b(o);
      const bool shares = x1 == r1 || x1 == r2 || (x2 >= 0 && (x2 == r1 || x2 == r2));
      if (!shares) continue;
      const double e = a.est(o);
      if (e >= best_ect) continue;
      if (prio[o] > best_prio || (prio[o] == best_prio && (e < pick_est || (e == pick_est && o < pick))))
        pick = o, best_prio = prio[o], pick_est = e;
    }
    a.append(pick);
  }
  return true;
}

/// Builds an append order under `rule` (0: non-delay, 1: active) with priorities `prio` (larger
/// first). Returns false if the deadline passed first.
inline bool construct(appender& a, int rule, const std::vector<double>& prio, clock::time_point deadline) {
  return rule == 0 ? construct_non_delay(a, prio, deadline) : construct_active(a, prio, deadline);
}
}  // namespace detail

struct list_scheduling {
  static constexpr std::string_view name = "list_scheduling";
  /// Perturbed constructions after the portfolio (fewer if the time limit comes first).
  int iterations = 60;
  /// Largest pipeline (in operations) on which the active rule, which scans the candidates at
  /// every step, runs; beyond, only the non-delay rule (a heap) does.
  index_t active_rule_limit = 50000;
  /// Swaps the local search tries (fewer on large pipelines: about 4e6 / operations, and fewer
  /// if the time limit comes first).
  int swaps = 10000;

  /// The local search of step 4 on `l` (a valid, deadlock-free set of lists). Most swaps move
  /// an operation of the critical chain (the operations whose ends fix the makespan, back from
  /// the last one) one place earlier; the others are anywhere.
  void improve(const graph& g, lists& l, meshcast::detail::mt19937_64& rng, detail::clock::time_point deadline) const {
    std::vector<std::vector<graph::id>> cur = identify(g, l);
    list_simulator sim(g);
    const bool separate = g.source().streams == stream_mode::separate;
    const std::size_t N = static_cast<std::size_t>(g.size());
    std::vector<graph::id> prev_a(N), prev_b(N);           // previous operation on each stream
    std::vector<std::pair<index_t, std::size_t>> critical;  // (stage, index) of critical entries
    auto score = [&](std::pair<double, double>& out) {
      if (!sim.run(cur)) return false;
      double sum = 0;
      for (const auto& stage : cur) {
        double finish = 0;
        for (graph::id o : stage) finish = std::max(finish, sim.end(o));
        sum += finish;
      }
      out = {sim.makespan(), sum};
      return true;
    };
    auto find_critical = [&] {  // after a successful run of `cur`
      std::vector<std::pair<index_t, std::size_t>> where(N, {-1, 0}), where_b(N, {-1, 0});
      for (index_t s = 0; s < g.stages(); ++s) {
        graph::id last[2] = {-1, -1};
        for (std::size_t i = 0; i < cur[s].size(); ++i) {
          const graph::id o = cur[s][i];
          const int q = separate && !g.is_compute(o) ? 1 : 0;
          const bool first_side = g.is_compute(o) || g.sender(o) == s;
          (first_side ? prev_a : prev_b)[o] = last[q];
          (first_side ? where : where_b)[o] = {s, i};
          last[q] = o;
        }
      }
      critical.clear();
      graph::id o = -1;
      for (graph::id x = 0; x < g.size(); ++x)
        if (o < 0 || sim.end(x) > sim.end(o)) o = x;
      while (o >= 0) {
        critical.push_back(where[o]);
        if (!g.is_compute(o)) critical.push_back(where_b[o]);
        const double t = sim.start(o);
        graph::id next = -1;
        auto tight = [&](graph::id p) {
          if (next < 0 && p >= 0 && sim.end(p) == t) next = p;
        };
        tight(prev_a[o]);
        if (!g.is_compute(o)) tight(prev_b[o]);
        g.for_each_predecessor(o, tight);
        o = t > 0 ? next : -1;
      }
    };
    std::pair<double, double> now;
    if (!score(now)) return;
    find_critical();
    const long budget = std::min<long>(swaps, static_cast<long>(4e6 / static_cast<double>(std::max<std::size_t>(N, 1))));
    std::vector<index_t> movable;  // stages with at least two entries
    for (index_t s = 0; s < g.stages(); ++s)
      if (cur[s].size() >= 2) movable.push_back(s);
    if (movable.empty()) return;
    bool changed = false;
    for (long k = 0; k < budget; ++k) {
      if ((k & 15) == 0 && detail::clock::now() > deadline) break;
      index_t s = 0;
      std::size_t i = 0;
      if (!critical.empty() && rng() % 2 == 0) {
        const auto [cs, ci] = critical[rng() % critical.size()];
        if (ci == 0) continue;
        s = cs, i = ci - 1;
      } else {
        s = movable[rng() % movable.size()];
        i = rng() % (cur[s].size() - 1);
      }
      const graph::id x = cur[s][i], y = cur[s][i + 1];
      if (g.is_compute(x) && g.is_compute(y)) continue;
      if (g.is_compute(x) && g.producer(y) == x) continue;  // a send before its data
      if (g.is_compute(y) && g.consumer(x) == y) continue;  // a receive after its consumer
      std::swap(cur[s][i], cur[s][i + 1]);
      std::pair<double, double> next;
      if (score(next) && next <= now) {
        changed = changed || next < now;
        now = next;
        find_critical();
      } else {
        std::swap(cur[s][i], cur[s][i + 1]);
      }
    }
    if (!changed) return;
    for (index_t s = 0; s < g.stages(); ++s)
      for (std::size_t i = 0; i < cur[s].size(); ++i) l[s][i] = g.entry(cur[s][i], s);
  }

  policy_result order(const graph& g, const policy_options& options = {}) const {
    const auto deadline = meshcast::detail::deadline(options.time_limit_s, "policy_options::time_limit_s").at();
    policy_result best;
    double best_makespan = std::numeric_limits<double>::infinity();
    auto consider = [&](lists l) {
      lists copy = l;
      const simulation r = simulate(g, copy);
      if (!r.deadlock && r.makespan < best_makespan) best_makespan = r.makespan, best.stages = std::move(l);
    };
    // 1. fixed rules, and phase orders by other keys; 2. list scheduling in simulated time, under
    //    three priorities: criticality; earlier phase first, then criticality; earlier
    //    microbatch first, then criticality. On large pipelines the time limit may stop this
    //    early: a step starts only if the time its kind took before still fits.
    auto in_time = [&] { return detail::clock::now() < deadline; };
    auto fits = [&](detail::clock::duration cost) { return detail::clock::now() + cost < deadline; };
    const std::vector<double> tail = g.tails();
    const std::vector<index_t> step = detail::compute_steps(g);
    auto t0 = detail::clock::now();
    consider(prior_first{}.order(g).stages);  // the first construction: always
    const detail::clock::duration fixed_cost = detail::clock::now() - t0;
    double horizon = 1;
    for (double t : tail) horizon = std::max(horizon, 2 * t);
    std::vector<double> by_phase(tail.size()), by_mb(tail.size());
    for (graph::id o = 0; o < g.size(); ++o) {
      const index_t p = g.is_compute(o) ? 2 * step[o] : 2 * step[g.producer(o)] + 1;
      by_phase[o] = tail[o] - horizon * static_cast<double>(p);
      by_mb[o] = tail[o] - horizon * static_cast<double>(g.mb(o));
    }
    std::vector<double> best_prio = tail;
    auto build = [&](int rule, const std::vector<double>& prio) {
      detail::appender a(g);
      if (!detail::construct(a, rule, prio, deadline)) return false;
      if (a.makespan() < best_makespan) {
        best_makespan = a.makespan();
        best.stages = g.project(a.order());
        return true;
      }
      return false;
    };
    t0 = detail::clock::now();
    if (in_time()) build(0, tail);
    const detail::clock::duration build_cost = detail::clock::now() - t0;
    if (fits(fixed_cost)) consider(rounds{}.order(g).stages);
    if (fits(fixed_cost)) consider(later_first{}.order(g).stages);
    if (fits(fixed_cost)) {
      std::vector<index_t> rank(static_cast<std::size_t>(g.size()));
      std::vector<graph::id> by_tail(static_cast<std::size_t>(g.size()));
      for (graph::id o = 0; o < g.size(); ++o) by_tail[o] = o;
      std::stable_sort(by_tail.begin(), by_tail.end(), [&](graph::id a, graph::id b) { return tail[a] > tail[b]; });
      for (std::size_t k = 0; k < by_tail.size(); ++k) rank[by_tail[k]] = static_cast<index_t>(k);
      consider(detail::phase_lists(g, step, [&](graph::id t) -> detail::phase_key { return {rank[t], 0, 0, 0}; }));
    }
    const bool active = g.size() <= active_rule_limit;
    if (active && in_time() && build(1, tail)) best_prio = tail;
    const std::vector<double>* more[] = {&by_phase, &by_mb};
    for (const std::vector<double>* prio : more)
      for (int rule = 0; rule < (active ? 2 : 1); ++rule)
        if (fits(build_cost) && build(rule, *prio)) best_prio = *prio;
    // 3. perturbed priorities around the best so far
    meshcast::detail::mt19937_64 rng(options.seed);
    double mean = 0;
    for (graph::id o = 0; o < g.size(); ++o) mean += g.duration(o);
    mean = g.size() > 0 ? mean / static_cast<double>(g.size()) : 0;
    std::vector<double> prio(best_prio.size());
    for (int it = 0; it < iterations && fits(build_cost); ++it) {
      const double scale = mean * (it % 3 == 0 ? 0.5 : it % 3 == 1 ? 2.0 : 5.0);
      for (std::size_t k = 0; k < prio.size(); ++k)
        prio[k] = best_prio[k] + scale * (static_cast<double>(rng() >> 11) * 0x1.0p-53 - 0.5);
      if (build(active ? it % 2 : 0, prio)) best_prio = prio;
    }
    // 4. local search on the lists: swap two neighbours of a stage's list (at least one a
    //    transfer, the dependencies kept in list order), keep the swap unless the lists deadlock
    //    or finish later (ties broken by the sum of the stages' finishing times)
    if (in_time()) improve(g, best.stages, rng, deadline);
    return best;
  }
};

}  // namespace meshcast::pipeline

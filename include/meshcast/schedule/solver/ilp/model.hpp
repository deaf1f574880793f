// The reshard ILP's integer program (schedule/solver/ilp.hpp states the formulation), in named
// parts: the time grid, the size and exactness of the program on it, the variables, each family
// of rows, the MIP start and the reading of CBC's answer. ilp::solve calls them in order; the
// order of the columns and of the rows is part of the program CBC is given, so keep it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "../../../core/detail/mip.hpp"
#include "../../../model/ordered_engine.hpp"
#include "../../instance.hpp"
#include "../greedy.hpp"

namespace meshcast::detail::reshard_ilp {

/// The slot a hold beginning `d` seconds after its op's start begins in (rounded down: held
/// early rather than late), in floating point: `replay` counts slots far past any int.
inline double first_slot(double d, double delta) { return std::floor(d / delta + 1e-9); }
/// Whole slots an op of `d` seconds takes, at least 1 and at most cap + 1 (so that no ratio of a
/// long op to a short slot can overflow an int).
inline int slots_of(double d, double delta, int cap) {
  const double q = std::ceil(d / delta - 1e-9);
  return q >= cap + 1.0 ? cap + 1 : std::max(1, static_cast<int>(q));
}

/// The program's time axis: slots of `delta` seconds, ops starting in slots [0, horizon).
struct grid {
  double delta = 1;
  int horizon = 0;
  int slots(double d) const { return slots_of(d, delta, horizon); }
  int slot_of(double d) const {  // at most horizon + 1, as `slots`
    const double q = first_slot(d, delta);
    return q >= horizon + 1.0 ? horizon + 1 : std::max(0, static_cast<int>(q));
  }
};

/// Time `k` of an op, for k in [0, 2 x its resources]: its duration, then per resource when its
/// hold ends and when it begins. The grid is exact when it divides all of them.
inline double time_of(const op& x, std::size_t k) {
  return k == 0 ? x.duration : k % 2 ? x.held_until(k / 2) : x.held_from(k / 2 - 1);
}

/// The greedy schedule with durations in whole slots (ordered model). Returns its makespan in
/// slots (in floating point: it may be far beyond any horizon); with `starts`, also the start
/// slot of every op of each unit's chosen option.
inline double replay(const instance& in, double delta, const greedy::outcome& g,
                     std::vector<std::vector<int>>* starts) {
  auto slots = [&](double d) { return std::max(1.0, std::ceil(d / delta - 1e-9)); };
  if (starts) starts->assign(in.units.size(), {});
  resource_clock clock(in.resources.size());  // in slots
  for (std::size_t u : g.order)
    for (const op& o : in.units[u].options[g.choice[u]].ops) {
      // The op in whole slots, as the program holds its resources: from the slot its hold
      // begins in to the slot it ends in.
      transfer_model x = o;
      x.duration = slots(o.duration);
      for (std::size_t k = 0; k < x.hold_from.size(); ++k)
        x.hold_from[k] = first_slot(o.hold_from[k], delta), x.hold_until[k] = std::max(x.hold_from[k], slots(o.hold_until[k]));
      const double s = clock.earliest_start(x);
      clock.occupy(x, s);
      if (starts) (*starts)[u].push_back(static_cast<int>(std::min(s, 1e9)));
    }
  return clock.makespan();
}

/// The slot length before the horizon is fitted: the shortest op or hold, or rather the largest
/// part of it (1/m, m <= 16) that divides every duration and hold (then the program is exact),
/// e.g. 768 and 640 bytes at one bandwidth: slot = 128 bytes' worth.
inline double slot_length(const instance& in) {
  double shortest = std::numeric_limits<double>::infinity();
  for (const unit& u : in.units)
    for (const option& o : u.options)
      for (const op& x : o.ops) {
        if (x.duration > 0) shortest = std::min(shortest, x.duration);
        for (std::size_t q = 0; q < x.resources.size(); ++q)
          if (x.held_until(q) > 0) shortest = std::min(shortest, x.held_until(q));
      }
  if (!std::isfinite(shortest)) shortest = 1;
  auto divides_all = [&](double d) {
    for (const unit& u : in.units)
      for (const option& o : u.options)
        for (const op& x : o.ops)
          for (std::size_t k = 0; k <= 2 * x.resources.size(); ++k)
            if (double q = time_of(x, k) / d; std::abs(q - std::round(q)) > 1e-6 * std::max(1.0, q)) return false;
    return true;
  };
  for (int m = 1; m <= 16; ++m)
    if (divides_all(shortest / m)) return shortest / m;
  return shortest;
}

/// The grid: slot_length's slots, lengthened so that the greedy schedule fits in `max_slots`.
/// None when that still leaves it past 4 x max_slots (rounding up many short ops: no useful
/// model).
inline std::optional<grid> fit_grid(const instance& in, const greedy::outcome& seed, int max_slots) {
  double delta = slot_length(in);
  double horizon_slots = replay(in, delta, seed, nullptr);
  if (horizon_slots > max_slots) {
    delta = delta * horizon_slots / max_slots * (1 + 1e-9);
    horizon_slots = replay(in, delta, seed, nullptr);
  }
  if (horizon_slots > 4.0 * max_slots) return std::nullopt;
  return grid{delta, static_cast<int>(horizon_slots)};
}

/// Nonzeros of the constraint matrix on `g`, estimated before anything is allocated: per start
/// column of an op of d slots, 3 (its starts-once, makespan and precedence rows) and, per
/// resource of the op, d + 1 (its no-overlap rows and its load row).
inline double nonzeros(const instance& in, const grid& g) {
  double n = 0;
  for (const unit& u : in.units)
    for (const option& o : u.options)
      for (const op& x : o.ops)
        n += (g.horizon - g.slots(x.duration) + 1.0) *
             (3.0 + static_cast<double>(x.resources.size()) * (g.slots(x.duration) + 1));
  return n;
}

/// Whether the program's optimum on `g` is the ordered model's: every duration and hold is a
/// whole number of slots, and no op keeps the connection rule (the program does not state it).
/// Never in concurrent mode, whose messages share bandwidth and may end sooner than the program's.
inline bool exact(const instance& in, const grid& g) {
  bool whole = in.mode == execution::ordered;
  for (const unit& u : in.units)
    for (const option& o : u.options)
      for (const op& x : o.ops) {
        for (std::size_t k = 0; k <= 2 * x.resources.size(); ++k) {
          const double v = time_of(x, k);
          whole &= v <= 0 || std::abs(g.slots(v) * g.delta - v) <= 1e-9 * g.delta;
        }
        whole &= x.connection < 0;
      }
  return whole;
}

/// The start columns of one op: x[.., t] is column first + t, for t in [0, count).
struct starts {
  int first;
  int count;
};
/// The program's columns: C (the makespan, column 0, continuous), y[u][k] (unit u uses option
/// k) and the starts x[u][k][j] of op j of that option, in that order unit by unit.
struct variables {
  int makespan = 0;
  std::vector<std::vector<int>> use;
  std::vector<std::vector<std::vector<starts>>> start;
};

/// Adds the columns, in that order, and returns where they are.
inline variables add_variables(mip& program, const instance& in, const grid& g) {
  variables v;
  v.use.resize(in.units.size());
  v.start.resize(in.units.size());
  v.makespan = program.add_column(0, g.horizon, 1);
  for (std::size_t u = 0; u < in.units.size(); ++u) {
    const unit& un = in.units[u];
    v.start[u].resize(un.options.size());
    for (std::size_t k = 0; k < un.options.size(); ++k) {
      // A unit with one option uses it: y fixed to 1.
      v.use[u].push_back(program.add_column(un.options.size() == 1 ? 1 : 0, 1, 0));
      for (const op& o : un.options[k].ops) {
        const starts s{program.columns(), std::max(g.horizon - g.slots(o.duration) + 1, 0)};
        for (int t = 0; t < s.count; ++t) program.add_column(0, 1, 0);
        v.start[u][k].push_back(s);
      }
    }
  }
  return v;
}

/// Unit u uses exactly one option: sum_k y[u,k] = 1.
inline mip::row one_option_row(const variables& v, std::size_t u) {
  mip::row r;
  for (int col : v.use[u]) r.push_back({col, 1});
  return r;
}
/// Op j of option k starts once if the option is used, else never: sum_t x - y[u,k] = 0.
inline mip::row starts_once_row(const variables& v, std::size_t u, std::size_t k, std::size_t j) {
  mip::row r{{v.use[u][k], -1}};
  const starts s = v.start[u][k][j];
  for (int t = 0; t < s.count; ++t) r.push_back({s.first + t, 1});
  return r;
}
/// The op (of `d` slots) ends by the makespan: sum_t (t + d) x - C <= 0.
inline mip::row ends_by_makespan_row(const variables& v, std::size_t u, std::size_t k, std::size_t j, int d) {
  mip::row r{{v.makespan, -1}};
  const starts s = v.start[u][k][j];
  for (int t = 0; t < s.count; ++t) r.push_back({s.first + t, t + d});
  return r;
}
/// Op j starts once op i (of `di` slots, the op it waits for) has ended:
/// sum_t t x[j,t] - sum_t (t + di) x[i,t] >= 0.
inline mip::row precedence_row(const variables& v, std::size_t u, std::size_t k, std::size_t j, std::size_t i, int di) {
  mip::row r;
  const starts s = v.start[u][k][j], before = v.start[u][k][i];
  for (int t = 0; t < s.count; ++t) r.push_back({s.first + t, t});
  for (int t = 0; t < before.count; ++t) r.push_back({before.first + t, -(t + di)});
  return r;
}

/// Unit by unit: its option row, then for each op of each option its starts-once row, its
/// ends-by-makespan row and, when it waits for another op, its precedence row.
inline void add_unit_rows(mip& program, const instance& in, const grid& g, const variables& v) {
  for (std::size_t u = 0; u < in.units.size(); ++u) {
    const unit& un = in.units[u];
    program.add_row(one_option_row(v, u), 1, 1);
    for (std::size_t k = 0; k < un.options.size(); ++k) {
      const auto& ops = un.options[k].ops;
      for (std::size_t j = 0; j < ops.size(); ++j) {
        program.add_row(starts_once_row(v, u, k, j), 0, 0);
        program.add_row(ends_by_makespan_row(v, u, k, j, g.slots(ops[j].duration)), -mip::infinity, 0);
        if (ops[j].after >= 0) {
          const auto i = static_cast<std::size_t>(ops[j].after);
          program.add_row(precedence_row(v, u, k, j, i, g.slots(ops[i].duration)), 0, mip::infinity);
        }
      }
    }
  }
}

/// The resources some op uses, numbered densely in order of first use (`dense[r]`, -1 where no
/// op uses r): the load and no-overlap rows are per used resource.
struct used_resources {
  std::vector<int> dense;
  int count = 0;
};
inline used_resources used_resources_of(const instance& in) {
  used_resources r;
  r.dense.assign(static_cast<std::size_t>(in.resources.size()), -1);
  for (const unit& u : in.units)
    for (const option& o : u.options)
      for (const op& x : o.ops)
        for (int q : x.resources)
          if (r.dense[q] < 0) r.dense[q] = r.count++;
  return r;
}

/// Each resource's total work fits before C: implied by the no-overlap and makespan rows, but it
/// gives the relaxation the load bound at once. One row per used resource that some start holds.
inline void add_load_rows(mip& program, const instance& in, const grid& g, const variables& v,
                          const used_resources& used) {
  std::vector<mip::row> work(static_cast<std::size_t>(used.count));
  for (std::size_t u = 0; u < in.units.size(); ++u)
    for (std::size_t k = 0; k < in.units[u].options.size(); ++k)
      for (std::size_t j = 0; j < in.units[u].options[k].ops.size(); ++j) {
        const op& o = in.units[u].options[k].ops[j];
        const starts s = v.start[u][k][j];
        for (std::size_t q = 0; q < o.resources.size(); ++q) {
          const int held = std::max(0, g.slots(o.held_until(q)) - g.slot_of(o.held_from(q)));
          for (int t = 0; t < s.count; ++t) work[used.dense[o.resources[q]]].push_back({s.first + t, held});
        }
      }
  for (auto& w : work)
    if (!w.empty()) {
      w.push_back({v.makespan, -1});
      program.add_row(std::move(w), -mip::infinity, 0);
    }
}

/// No resource carries two ops in one slot: per used resource and slot, the starts whose op holds
/// it then sum to at most 1 (a row only where two or more could). A start at t holds resource q
/// of its op in slots [t + slot_of(held_from), t + slots(held_until)).
inline void add_no_overlap_rows(mip& program, const instance& in, const grid& g, const variables& v,
                                const used_resources& used) {
  std::vector<std::vector<mip::row>> busy(static_cast<std::size_t>(used.count), std::vector<mip::row>(g.horizon));
  for (std::size_t u = 0; u < in.units.size(); ++u)
    for (std::size_t k = 0; k < in.units[u].options.size(); ++k) {
      const auto& ops = in.units[u].options[k].ops;
      for (std::size_t j = 0; j < ops.size(); ++j) {
        const starts s = v.start[u][k][j];
        for (int t = 0; t < s.count; ++t)
          for (std::size_t q = 0; q < ops[j].resources.size(); ++q) {
            const int from = g.slot_of(ops[j].held_from(q)), until = g.slots(ops[j].held_until(q));
            auto& resource = busy[used.dense[ops[j].resources[q]]];
            for (int slot = t + from; slot < t + until; ++slot) resource[slot].push_back({s.first + t, 1});
          }
      }
    }
  for (auto& per_slot : busy)
    for (auto& r : per_slot)
      if (r.size() > 1) program.add_row(std::move(r), -mip::infinity, 1);
}

/// The MIP start, a value per column: the greedy schedule replayed on the grid.
inline std::vector<double> mip_start(const instance& in, const grid& g, const greedy::outcome& seed, const variables& v,
                                     int columns) {
  std::vector<double> initial(static_cast<std::size_t>(columns), 0.0);
  std::vector<std::vector<int>> starts_of;
  initial[v.makespan] = replay(in, g.delta, seed, &starts_of);
  for (std::size_t u = 0; u < in.units.size(); ++u) {
    const std::size_t k = seed.choice[u];
    initial[v.use[u][k]] = 1;
    for (std::size_t j = 0; j < starts_of[u].size(); ++j) initial[v.start[u][k][j].first + starts_of[u][j]] = 1;
  }
  return initial;
}

/// The ops CBC's solution `sol` starts, by start slot, then unit, then op. None unless the answer
/// is complete: one option per unit, each of its ops started once.
inline std::optional<std::vector<op>> read_solution(const instance& in, const variables& v,
                                                    const std::vector<double>& sol) {
  struct placed {
    int t;
    std::size_t u, k, j;
  };
  std::vector<placed> chosen;
  for (std::size_t u = 0; u < in.units.size(); ++u)
    for (std::size_t k = 0; k < in.units[u].options.size(); ++k) {
      if (sol[v.use[u][k]] < 0.5) continue;
      for (std::size_t j = 0; j < v.start[u][k].size(); ++j)
        for (int t = 0; t < v.start[u][k][j].count; ++t)
          if (sol[v.start[u][k][j].first + t] > 0.5) chosen.push_back({t, u, k, j});
    }
  std::vector<int> options_taken(in.units.size(), 0);
  std::vector<std::size_t> wanted(in.units.size(), 0), got(in.units.size(), 0);
  for (std::size_t u = 0; u < in.units.size(); ++u)
    for (std::size_t k = 0; k < in.units[u].options.size(); ++k)
      if (sol[v.use[u][k]] >= 0.5) ++options_taken[u], wanted[u] += in.units[u].options[k].ops.size();
  for (const placed& p : chosen) ++got[p.u];
  for (std::size_t u = 0; u < in.units.size(); ++u)
    if (options_taken[u] != 1 || got[u] != wanted[u]) return std::nullopt;
  std::sort(chosen.begin(), chosen.end(), [](const placed& a, const placed& b) {
    return std::tie(a.t, a.u, a.j) < std::tie(b.t, b.u, b.j);
  });
  std::vector<op> ops;
  for (const placed& p : chosen) ops.push_back(in.units[p.u].options[p.k].ops[p.j]);
  return ops;
}

}  // namespace meshcast::detail::reshard_ilp

// ilp: a time-indexed integer program solved by COIN-OR CBC through its C interface.
//
// Time is cut into slots of length delta (the shortest op when the horizon allows it); op
// durations are rounded up to whole slots. Binary x[u,k,j,t] says op j of option k of unit u
// starts in slot t, binary y[u,k] that unit u uses option k. Every op of the chosen option starts
// once; no resource (NIC direction or device stream) carries two ops in one slot; an op waits for
// the op named by its `after`; C >= every end; minimise C. The greedy schedule is the MIP start.
// A resource an op frees early (a chain's sender) is held for its own whole slots. When every
// such time is a whole number of slots, the optimum is the ordered model's optimum.
// The model is built only when it stays small (`max_nonzeros`) and time is left; otherwise, and
// whenever CBC ends without a complete solution, the answer is the greedy schedule.
//
// Needs CBC (Debian: coinor-libcbc-dev; link with `pkg-config --libs cbc`).
#pragma once



#include <algorithm>
#include <cmath>
#include <vector>

#include "../../core/detail/deadline.hpp"
#include "../../core/detail/mip.hpp"
#include "../../model/ordered_engine.hpp"
#include "../solver.hpp"
#include "../solvers.hpp"
#include "greedy.hpp"

namespace meshcast {

struct ilp {
  static constexpr std::string_view name = "ilp";
  int max_slots = 64;  ///< horizon length in slots, at most
  /// Largest constraint matrix built. CBC's root LP does not look at the clock, so the model is
  /// kept to what it solves well within the limit: at most this, and at most
  /// `nonzeros_per_second` times the seconds left.
  std::size_t max_nonzeros = 150'000;
  double nonzeros_per_second = 150'000;

  const char* supports(const instance&) const { return nullptr; }

  solver_result solve(const instance& in, const solver_options& options) const {
    const detail::deadline stop(options.time_limit_s);
    solver_options seed_options = options;
    seed_options.time_limit_s = options.time_limit_s / 4;
    greedy::outcome seed = greedy{}.search(in, seed_options);
    auto fallback = [&] {
      solver_result r;
      r.ops = greedy::ops_of(in, seed.order, seed.choice);
      return r;
    };
    // Slot length.
    double shortest = std::numeric_limits<double>::infinity();
    for (const unit& u : in.units)
      for (const option& o : u.options)
        for (const op& x : o.ops) {
          if (x.duration > 0) shortest = std::min(shortest, x.duration);
          for (std::size_t q = 0; q < x.resources.size(); ++q)
            if (x.held_until(q) > 0) shortest = std::min(shortest, x.held_until(q));
        }
    if (!std::isfinite(shortest)) shortest = 1;
    // Prefer a slot that divides every duration (then the program is exact), e.g. 768 and 640
    // bytes at one bandwidth: slot = 128 bytes' worth.
    auto divides_all = [&](double d) {
      for (const unit& u : in.units)
        for (const option& o : u.options)
          for (const op& x : o.ops)
            for (std::size_t k = 0; k <= 2 * x.resources.size(); ++k) {
              const double v = k == 0 ? x.duration : k % 2 ? x.held_until(k / 2) : x.held_from(k / 2 - 1);
              if (double q = v / d; std::abs(q - std::round(q)) > 1e-6 * std::max(1.0, q)) return false;
            }
      return true;
    };
    double delta = shortest;
    for (int m = 1; m <= 16; ++m)
      if (divides_all(shortest / m)) {
        delta = shortest / m;
        break;
      }
    double horizon_slots = replay(in, delta, seed, nullptr);
    if (horizon_slots > max_slots) {
      delta = delta * horizon_slots / max_slots * (1 + 1e-9);
      horizon_slots = replay(in, delta, seed, nullptr);
    }
    if (horizon_slots > 4.0 * max_slots) return fallback();  // rounding up many short ops: no useful model
    const int horizon = static_cast<int>(horizon_slots);
    auto slots = [&](double d) { return slots_of(d, delta, horizon); };
    {
      // Size of the constraint matrix, counted before anything is allocated.
      double nonzeros = 0;
      for (const unit& u : in.units)
        for (const option& o : u.options)
          for (const op& x : o.ops)
            nonzeros += (horizon - slots(x.duration) + 1.0) * (3.0 + static_cast<double>(x.resources.size()) * (slots(x.duration) + 1));
      const double cap = std::min(static_cast<double>(max_nonzeros), nonzeros_per_second * stop.remaining_s());
      if (nonzeros > cap || stop.expired()) return fallback();
    }
    bool exact = true;
    for (const unit& u : in.units)
      for (const option& o : u.options)
        for (const op& x : o.ops) {
          for (std::size_t k = 0; k <= 2 * x.resources.size(); ++k) {
            const double v = k == 0 ? x.duration : k % 2 ? x.held_until(k / 2) : x.held_from(k / 2 - 1);
            exact &= v <= 0 || std::abs(slots(v) * delta - v) <= 1e-9 * delta;
          }
          exact &= x.connection < 0;  // the program does not state the connection rule
        }

    // Columns.
    struct column_set {
      int first;  // index of x[.., t = 0]
      int count;  // starts 0 .. count-1
    };
    std::vector<std::vector<int>> y(in.units.size());
    std::vector<std::vector<std::vector<column_set>>> x(in.units.size());
    detail::mip program;
    auto add_column = [&](double lo, double hi, double cost) { return program.add_column(lo, hi, cost); };
    const int c = add_column(0, horizon, 1);
    for (std::size_t u = 0; u < in.units.size(); ++u) {
      const unit& un = in.units[u];
      x[u].resize(un.options.size());
      for (std::size_t k = 0; k < un.options.size(); ++k) {
        y[u].push_back(add_column(un.options.size() == 1 ? 1 : 0, 1, 0));
        for (const op& o : un.options[k].ops) {
          int n = horizon - slots(o.duration) + 1;
          column_set cs{program.columns(), std::max(n, 0)};
          for (int t = 0; t < cs.count; ++t) add_column(0, 1, 0);
          x[u][k].push_back(cs);
        }
      }
    }
    const int columns = program.columns();
    auto add_row = [&](detail::mip::row r, double lo, double hi) { program.add_row(std::move(r), lo, hi); };
    const double inf = detail::mip::infinity;
    // Per resource (dense over the resources any op uses) and slot: the starts that occupy it.
    std::vector<int> dense(static_cast<std::size_t>(in.resources.size()), -1);
    int used_resources = 0;
    for (const unit& u : in.units)
      for (const option& o : u.options)
        for (const op& x : o.ops)
          for (int r : x.resources)
            if (dense[r] < 0) dense[r] = used_resources++;
    std::vector<std::vector<std::vector<std::pair<int, double>>>> busy(
        static_cast<std::size_t>(used_resources), std::vector<std::vector<std::pair<int, double>>>(horizon));
    for (std::size_t u = 0; u < in.units.size(); ++u) {
      const unit& un = in.units[u];
      std::vector<std::pair<int, double>> one;
      for (int col : y[u]) one.push_back({col, 1});
      add_row(one, 1, 1);
      for (std::size_t k = 0; k < un.options.size(); ++k) {
        const auto& ops = un.options[k].ops;
        for (std::size_t j = 0; j < ops.size(); ++j) {
          const column_set cs = x[u][k][j];
          const int d = slots(ops[j].duration);
          std::vector<std::pair<int, double>> once{{y[u][k], -1}}, end{{c, -1}};
          for (int t = 0; t < cs.count; ++t) {
            once.push_back({cs.first + t, 1});
            end.push_back({cs.first + t, t + d});
            for (std::size_t q = 0; q < ops[j].resources.size(); ++q) {
              const int from = first_slot(ops[j].held_from(q), delta), until = slots(ops[j].held_until(q));
              for (int s = t + from; s < t + until; ++s) busy[dense[ops[j].resources[q]]][s].push_back({cs.first + t, 1});
            }
          }
          add_row(once, 0, 0);
          add_row(end, -inf, 0);
          if (ops[j].after >= 0) {
            const column_set before = x[u][k][ops[j].after];
            const int db = slots(ops[ops[j].after].duration);
            std::vector<std::pair<int, double>> wait;
            for (int t = 0; t < cs.count; ++t) wait.push_back({cs.first + t, t});
            for (int t = 0; t < before.count; ++t) wait.push_back({before.first + t, -(t + db)});
            add_row(wait, 0, inf);
          }
        }
      }
    }
    // Each resource's total work fits before C: implied by the rows above, but it gives the
    // relaxation the load bound at once.
    std::vector<std::vector<std::pair<int, double>>> work(static_cast<std::size_t>(used_resources));
    for (std::size_t u = 0; u < in.units.size(); ++u)
      for (std::size_t k = 0; k < in.units[u].options.size(); ++k)
        for (std::size_t j = 0; j < in.units[u].options[k].ops.size(); ++j) {
          const op& o = in.units[u].options[k].ops[j];
          for (std::size_t q = 0; q < o.resources.size(); ++q)
            for (int t = 0; t < x[u][k][j].count; ++t)
              work[dense[o.resources[q]]].push_back(
                  {x[u][k][j].first + t, std::max(0, slots(o.held_until(q)) - first_slot(o.held_from(q), delta))});
        }
    for (auto& w : work)
      if (!w.empty()) {
        w.push_back({c, -1});
        add_row(std::move(w), -inf, 0);
      }
    for (auto& per_slot : busy)
      for (auto& r : per_slot)
        if (r.size() > 1) add_row(std::move(r), -inf, 1);

    if (stop.expired()) return fallback();

    // MIP start: the list schedule.
    std::vector<double> initial(static_cast<std::size_t>(columns), 0.0);
    {
      std::vector<std::vector<int>> starts;
      const double makespan = replay(in, delta, seed, &starts);
      initial[c] = makespan;
      for (std::size_t u = 0; u < in.units.size(); ++u) {
        std::size_t k = seed.choice[u];
        initial[y[u][k]] = 1;
        for (std::size_t j = 0; j < starts[u].size(); ++j) initial[x[u][k][j].first + starts[u][j]] = 1;
      }
    }
    // Column 0 is C, continuous; every other column is a binary.
    const detail::mip::answer answer =
        program.solve({.seconds = stop.remaining_s(), .integer_from = 1, .start = &initial});
    if (answer.values.empty() || answer.saved_solutions < 1) return fallback();
    const double* sol = answer.values.data();
    struct placed {
      int t;
      std::size_t u, k, j;
    };
    std::vector<placed> chosen;
    for (std::size_t u = 0; u < in.units.size(); ++u)
      for (std::size_t k = 0; k < in.units[u].options.size(); ++k) {
        if (sol[y[u][k]] < 0.5) continue;
        for (std::size_t j = 0; j < x[u][k].size(); ++j)
          for (int t = 0; t < x[u][k][j].count; ++t)
            if (sol[x[u][k][j].first + t] > 0.5) chosen.push_back({t, u, k, j});
      }
    {
      // A complete answer takes one option per unit and starts each of its ops once.
      std::vector<int> options_taken(in.units.size(), 0);
      std::vector<std::size_t> starts(in.units.size(), 0);
      for (std::size_t u = 0; u < in.units.size(); ++u)
        for (std::size_t k = 0; k < in.units[u].options.size(); ++k)
          if (sol[y[u][k]] >= 0.5) ++options_taken[u], starts[u] += in.units[u].options[k].ops.size();
      std::vector<std::size_t> got(in.units.size(), 0);
      for (const placed& p : chosen) ++got[p.u];
      for (std::size_t u = 0; u < in.units.size(); ++u)
        if (options_taken[u] != 1 || got[u] != starts[u]) return fallback();
    }
    std::sort(chosen.begin(), chosen.end(), [](const placed& a, const placed& b) {
      return std::tie(a.t, a.u, a.j) < std::tie(b.t, b.u, b.j);
    });
    solver_result r;
    for (const placed& p : chosen) r.ops.push_back(in.units[p.u].options[p.k].ops[p.j]);
    r.proven_optimal = exact && answer.proven_optimal;
    if (exact) r.bound_s = std::max(0.0, answer.best_bound) * delta;
    return r;
  }

 private:
  // Whole slots an op of `d` seconds takes, at least 1 and at most cap + 1 (so that no ratio of
  // a long op to a short slot can overflow an int).
  // The slot a hold beginning `d` seconds after its op's start begins in (rounded down: held
  // early rather than late).
  static int first_slot(double d, double delta) { return static_cast<int>(std::floor(d / delta + 1e-9)); }
  static int slots_of(double d, double delta, int cap) {
    const double q = std::ceil(d / delta - 1e-9);
    return q >= cap + 1.0 ? cap + 1 : std::max(1, static_cast<int>(q));
  }
  // The greedy schedule with durations in whole slots (ordered model). Returns its makespan in
  // slots (in floating point: it may be far beyond any horizon); with `starts`, also the start
  // slot of every op of each unit's chosen option.
  static double replay(const instance& in, double delta, const greedy::outcome& g, std::vector<std::vector<int>>* starts) {
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
};

/// The built-in solvers and ilp: what a program built with CBC offers by name.
using solvers_with_ilp = append_t<builtin_solvers, ilp>;

}  // namespace meshcast

// ilp: the integer program of Alpa's intra-operator pass, solved by COIN-OR CBC (C interface).
//
// Binary s[v][i]: node v takes choice i (one per node: sum_i s[v][i] = 1). Continuous e[uv][i][j]
// for every edge, with rows sum_j e[uv][i][j] = s[u][i] and columns sum_i e[uv][i][j] = s[v][j],
// so that e = s[u] s[v]^T on integer points. Memory: sum mem[v][i] s[v][i] <= limit. Minimise
// sum cost[v][i] s[v][i] + sum cost[uv][i][j] e[uv][i][j]. Impossible choices and pairs get
// upper bound 0; nodes with a single choice are folded into their neighbours. The objective is
// scaled to microseconds for CBC's tolerances (less where that passes 1e9: objective_scale). The
// greedy answer is the MIP start and the fallback when CBC finds nothing in time.
//
// Large problems (more than `full_columns_limit` columns) are solved in their tied form:
// followers merged into their producers and repeated layers coalesced (cost_model.hpp); the tied
// answer is then improved node by node on the full problem. proven_optimal is claimed only when
// CBC proved the full problem optimal.
//
// CBC honours its time limit only once it searches: loading a program and solving its root LP
// are not cut short (a 10 KB graph of 3.3 million columns ran minutes past a 5 s limit, 2 GB). So
// a program larger than `max_nonzeros`, or than `nonzeros_per_second` times the seconds left
// (counted before it is built), is not built: the greedy answer stands, with a note.
//
// Needs CBC (Debian: coinor-libcbc-dev; link with `pkg-config --libs cbc`).
#pragma once

#include <algorithm>
#include <cmath>

#include "../../core/detail/mip.hpp"
#include "../solver.hpp"
#include "greedy.hpp"
#include "../../core/detail/number_text.hpp"

namespace meshcast::autoshard {

struct ilp {
  static constexpr std::string_view name = "ilp";
  enum class tying { automatic, never, always };
  tying tie = tying::automatic;
  std::size_t full_columns_limit = 60000;
  /// The largest program handed to CBC: at most `max_nonzeros`, and at most `nonzeros_per_second`
  /// times the seconds left (the 24-layer transformer's tied program, about 270,000 non-zeros,
  /// took CBC about 3 s).
  std::size_t max_nonzeros = 4'000'000;
  double nonzeros_per_second = 100'000;

  const char* supports(const sharding_problem&) const { return nullptr; }

  solve_result solve(const sharding_problem& sp) const {
    const bool use_tied = tie == tying::always || (tie == tying::automatic && sp.tied.lossy &&
                                                   sp.full.ilp_columns() > full_columns_limit);
    if (!use_tied) {
      solve_result r = run(sp.full, sp.limit);
      return r;
    }
    const reduced_problem rp = reduce(sp.full, sp.tied);
    solve_result r = run(rp.graph, sp.limit);
    r.choice = expand(sp.tied, rp, r.choice);
    r.tied = true;
    r.proven_optimal = false;
    r.bound = 0;
    detail::improve(sp.full, r.choice, sp.limit);
    return r;
  }

  /// Seconds -> microseconds for CBC's tolerances, unless the largest finite cost would then pass
  /// 1e9: CBC misjudges feasibility on larger objective coefficients and asserts past 1e25, and a
  /// slow device (--device-tflops 1e-12) or a slow axis gives costs of 1e9 s and more. Then the
  /// largest becomes 1e9 instead; below a microsecond it becomes 1.
  static double objective_scale(const std::vector<std::vector<double>>& unary, const factor_graph& p,
                                const std::vector<int>& live_edges) {
    double largest = 0;
    auto see = [&](double c) {
      if (c < infinite_cost) largest = std::max(largest, std::abs(c));
    };
    for (const auto& costs : unary) std::for_each(costs.begin(), costs.end(), see);
    for (int e : live_edges) std::for_each(p.edges[e].cost.begin(), p.edges[e].cost.end(), see);
    const double microseconds = 1e6, ceiling = 1e9;
    if (largest * microseconds > ceiling) return ceiling / largest;
    // Costs below a microsecond all lie within CBC's absolute gap (1e-6) in microseconds, so any
    // first answer would pass as optimal: the largest becomes 1 instead.
    if (largest > 0 && largest * microseconds < 1) return 1 / largest;
    return microseconds;
  }

  /// Solves one problem exactly (up to the deadline).
  solve_result run(const factor_graph& p, const deadline& limit) const {
    limit.check("building the integer program");
    solve_result r;
    r.nodes = p.nodes();
    // Start: the greedy answer (also the fallback).
    std::vector<int> start;
    bool have_start = true;
    try {
      const reduction none = reduction::identity(p);
      start = greedy{}.solve(sharding_problem{p, none, limit}).choice;
    } catch (const time_limit_reached&) {
      throw;
    } catch (const error&) {
      have_start = false;  // greedy found nothing within the memory limit; CBC may
    }
    const int n = p.nodes();
    std::vector<std::vector<double>> unary = p.cost;
    std::vector<int> live_edges;
    for (std::size_t e = 0; e < p.edges.size(); ++e) {
      const auto& x = p.edges[e];
      const bool fu = p.choices(x.u) == 1, fv = p.choices(x.v) == 1;
      if (fu && fv) unary[x.u][0] += p.edge_cost(x, 0, 0);
      else if (fu) for (int j = 0; j < p.choices(x.v); ++j) unary[x.v][j] += p.edge_cost(x, 0, j);
      else if (fv) for (int i = 0; i < p.choices(x.u); ++i) unary[x.u][i] += p.edge_cost(x, i, 0);
      else live_edges.push_back(static_cast<int>(e));
    }
    // The program's size before it is built: each node's choices in its one-choice row (and the
    // memory row), each live edge's ku x kv columns in two rows beside ku + kv node columns.
    double nonzeros = 0;
    for (int v = 0; v < n; ++v) nonzeros += static_cast<double>(p.choices(v)) * (p.memory_limit < infinite_cost ? 2 : 1);
    for (int e : live_edges) {
      const double ku = p.choices(p.edges[e].u), kv = p.choices(p.edges[e].v);
      nonzeros += 2 * ku * kv + ku + kv;
    }
    const double cap = std::min(static_cast<double>(max_nonzeros), nonzeros_per_second * limit.left_s());
    if (nonzeros > cap) {
      if (!have_start)
        throw time_limit_reached("the integer program (" + std::to_string(static_cast<long long>(nonzeros)) +
                                 " non-zeros) is too large for the time left, and greedy found no assignment within the memory limit");
      r.choice = start;
      r.nonzeros = static_cast<std::size_t>(nonzeros);
      r.note = "integer program of " + std::to_string(static_cast<long long>(nonzeros)) + " non-zeros over the " +
               std::to_string(static_cast<long long>(cap)) + " CBC can take in the time left: greedy answer";
      return r;
    }
    const double scale = objective_scale(unary, p, live_edges);
    meshcast::detail::mip program;
    auto column = [&](double lo, double hi, double c) { return program.add_column(lo, hi, c); };
    std::vector<int> s_first(static_cast<std::size_t>(n));
    for (int v = 0; v < n; ++v) {
      s_first[v] = program.columns();
      for (int i = 0; i < p.choices(v); ++i) {
        const bool possible = unary[v][i] < infinite_cost;
        column(0, possible ? 1 : 0, possible ? unary[v][i] * scale : 0);
      }
    }
    const int binaries = program.columns();
    std::vector<int> e_first;
    for (int e : live_edges) {
      const auto& x = p.edges[e];
      e_first.push_back(program.columns());
      for (double c : x.cost) {
        const bool possible = c < infinite_cost;
        column(0, possible ? 1 : 0, possible ? c * scale : 0);
      }
    }
    // Rows as (column, value) lists.
    for (int v = 0; v < n; ++v) {
      std::vector<std::pair<int, double>> one;
      for (int i = 0; i < p.choices(v); ++i) one.push_back({s_first[v] + i, 1});
      program.add_row(std::move(one), 1, 1);
    }
    for (std::size_t k = 0; k < live_edges.size(); ++k) {
      limit.check("building the integer program");
      const auto& x = p.edges[live_edges[k]];
      const int ku = p.choices(x.u), kv = p.choices(x.v);
      for (int i = 0; i < ku; ++i) {
        std::vector<std::pair<int, double>> row{{s_first[x.u] + i, -1}};
        for (int j = 0; j < kv; ++j) row.push_back({e_first[k] + i * kv + j, 1});
        program.add_row(std::move(row), 0, 0);
      }
      for (int j = 0; j < kv; ++j) {
        std::vector<std::pair<int, double>> row{{s_first[x.v] + j, -1}};
        for (int i = 0; i < ku; ++i) row.push_back({e_first[k] + i * kv + j, 1});
        program.add_row(std::move(row), 0, 0);
      }
    }
    if (p.memory_limit < infinite_cost) {
      // In units of the limit: raw bytes (1e9 to 1e12) beside coefficients of 1 misled CBC into a
      // "proven optimal" answer that was neither. Rounding here is caught by p.fits below.
      const double unit = std::max(p.memory_limit, 1.0);
      std::vector<std::pair<int, double>> row;
      for (int v = 0; v < n; ++v)
        for (int i = 0; i < p.choices(v); ++i) row.push_back({s_first[v] + i, p.memory[v][i] / unit});
      program.add_row(std::move(row), -1e30, p.memory_limit / unit);
    }
    const int columns = program.columns();
    r.variables = static_cast<std::size_t>(columns);
    r.constraints = program.rows();
    r.nonzeros = program.nonzeros();
    const double left = limit.left_s();
    if (left <= 0) {
      if (!have_start) throw time_limit_reached("time limit reached before the integer program ran");
      r.choice = start;
      r.note = "time limit reached before CBC ran: greedy answer";
      return r;
    }
    std::vector<double> initial;
    if (have_start && p.fits(start) && p.objective(start) < infinite_cost) {
      initial.assign(static_cast<std::size_t>(columns), 0.0);
      for (int v = 0; v < n; ++v) initial[s_first[v] + start[v]] = 1;
      for (std::size_t k = 0; k < live_edges.size(); ++k) {
        const auto& x = p.edges[live_edges[k]];
        initial[e_first[k] + start[x.u] * p.choices(x.v) + start[x.v]] = 1;
      }
    }
    // The s columns are binaries; the e columns are continuous (integral on integer s).
    const meshcast::detail::mip::answer answer =
        program.solve({.seconds = left, .integer_from = 0, .integer_to = binaries, .absolute_gap = 1e-6, .relative_gap = 1e-9,
                       .start = initial.empty() ? nullptr : &initial});
    if (answer.proven_infeasible)
      throw error("no assignment satisfies the fixed specs and the memory limit of " +
                  meshcast::detail::number(p.memory_limit) + " bytes per device (proven by the integer program)");
    r.choice = start;
    bool have = have_start;
    bool took_cbc = false;  // CBC's proof covers only its own answer
    if (!answer.values.empty()) {
      const double* sol = answer.values.data();
      std::vector<int> found(static_cast<std::size_t>(n), -1);
      for (int v = 0; v < n; ++v) {
        double best = -1;
        for (int i = 0; i < p.choices(v); ++i)
          if (sol[s_first[v] + i] > best) best = sol[s_first[v] + i], found[v] = i;
      }
      if (p.fits(found) && (!have_start || p.objective(found) <= p.objective(start))) {
        r.choice = std::move(found);
        have = took_cbc = true;
      }
    }
    if (!have)
      throw time_limit_reached("the integer program found no assignment within the memory limit in time");
    r.proven_optimal = answer.proven_optimal && took_cbc;
    if (r.proven_optimal) r.bound = std::max(0.0, answer.best_bound / scale);
    if (!r.proven_optimal)
      r.note = answer.proven_optimal ? "CBC's answer did not fit the memory limit or was no better than greedy's: no proof"
                                     : "CBC stopped at the time limit";
    return r;
  }
};

}  // namespace meshcast::autoshard

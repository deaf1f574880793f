// A mixed-integer program handed to COIN-OR CBC: the one wrapper both integer programs use (the
// reshard ILP, schedule/solver/ilp.hpp, and automatic sharding's, autoshard/solver/ilp.hpp), so
// that they drive CBC alike: silent; no preprocessing (CBC 2.10's can crash in its
// post-processing on these models, whose rows are tight already); a wall-clock time limit
// (CBC counts CPU time unless told otherwise); an optional MIP start.
// Needs CBC (Debian: coinor-libcbc-dev; link with `pkg-config --libs cbc`).
#pragma once

#if !__has_include(<coin/Cbc_C_Interface.h>)
#error "meshcast's integer programs need COIN-OR CBC's C interface (Debian package coinor-libcbc-dev)."
#endif

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "number_text.hpp"

namespace meshcast::detail {

/// Columns (bounds, cost) and rows (sparse (column, coefficient) lists with bounds) of a program
/// that minimises; `solve` hands it to CBC.
class mip {
 public:
  using row = std::vector<std::pair<int, double>>;
  static constexpr double infinity = 1e30;
  static constexpr double largest_cost = 1e20;

  /// A column in [lo, hi] costing `cost` per unit; returns its index.
  int add_column(double lo, double hi, double cost) {
    lo_.push_back(lo), hi_.push_back(hi), cost_.push_back(cost);
    return static_cast<int>(lo_.size()) - 1;
  }
  /// lo <= sum of coefficient x column <= hi.
  void add_row(row r, double lo, double hi) { rows_.push_back(std::move(r)), row_lo_.push_back(lo), row_hi_.push_back(hi); }
  int columns() const noexcept { return static_cast<int>(lo_.size()); }
  std::size_t rows() const noexcept { return rows_.size(); }
  std::size_t nonzeros() const noexcept {
    std::size_t n = 0;
    for (const row& r : rows_) n += r.size();
    return n;
  }

  struct settings {
    double seconds = 0;           ///< wall-clock limit (at least 0.01 s is given to CBC)
    int integer_from = 0;         ///< columns [integer_from, integer_to) are integer
    int integer_to = -1;          ///< -1: up to the last column
    double absolute_gap = -1;     ///< CBC's allowable gap; below 0: CBC's default
    double relative_gap = -1;     ///< CBC's allowable fraction gap; below 0: CBC's default
    const std::vector<double>* start = nullptr;  ///< a MIP start: a value for every column
  };
  struct answer {
    int saved_solutions = 0;       ///< integer solutions CBC kept
    bool proven_optimal = false;
    bool proven_infeasible = false;
    double best_bound = 0;         ///< CBC's best possible objective (meaningful when proven optimal)
    std::vector<double> values;    ///< a value per column, where CBC has a solution; else empty
  };

  answer solve(const settings& s) const {
    // CBC's simplex asserts (aborting the process) on objective coefficients past 1e25 and
    // misjudges feasibility well before; callers scale their objective, this catches any that does not.
    for (double c : cost_)
      if (!(std::abs(c) <= largest_cost))
        throw error("an integer program's objective coefficient is " + number(c) + ", beyond the " +
                    number(largest_cost) + " CBC is given at most: its costs need another scale");
    const int n = columns();
    std::vector<row> by_column(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < rows_.size(); ++i)
      for (auto [col, v] : rows_[i]) by_column[static_cast<std::size_t>(col)].push_back({static_cast<int>(i), v});
    std::vector<CoinBigIndex> start{0};
    std::vector<int> index;
    std::vector<double> value;
    for (const row& col : by_column) {
      for (auto [r, v] : col) index.push_back(r), value.push_back(v);
      start.push_back(static_cast<CoinBigIndex>(index.size()));
    }
    std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
    Cbc_loadProblem(model.get(), n, static_cast<int>(rows_.size()), start.data(), index.data(), value.data(), lo_.data(),
                    hi_.data(), cost_.data(), row_lo_.data(), row_hi_.data());
    for (int c = s.integer_from; c < (s.integer_to < 0 ? n : std::min(s.integer_to, n)); ++c) Cbc_setInteger(model.get(), c);
    Cbc_setLogLevel(model.get(), 0);
    Cbc_setParameter(model.get(), "preprocess", "off");
    Cbc_setParameter(model.get(), "timeMode", "elapsed");
    if (s.absolute_gap >= 0) Cbc_setAllowableGap(model.get(), s.absolute_gap);
    if (s.relative_gap >= 0) Cbc_setAllowableFractionGap(model.get(), s.relative_gap);
    Cbc_setMaximumSeconds(model.get(), std::max(s.seconds, 0.01));
    if (s.start && static_cast<int>(s.start->size()) == n) {
      std::vector<int> all(static_cast<std::size_t>(n));
      std::iota(all.begin(), all.end(), 0);
      Cbc_setMIPStartI(model.get(), n, all.data(), s.start->data());
    }
    Cbc_solve(model.get());
    answer a;
    a.saved_solutions = Cbc_numberSavedSolutions(model.get());
    a.proven_optimal = Cbc_isProvenOptimal(model.get()) != 0;
    a.proven_infeasible = Cbc_isProvenInfeasible(model.get()) != 0;
    a.best_bound = Cbc_getBestPossibleObjValue(model.get());
    // The best integer solution CBC kept: the column solution it also offers may be the last LP's,
    // fractional (values of -0.667 were seen under a proof of optimality).
    if (const double* sol = Cbc_bestSolution(model.get())) a.values.assign(sol, sol + n);
    return a;
  }

 private:
  std::vector<double> lo_, hi_, cost_;
  std::vector<row> rows_;
  std::vector<double> row_lo_, row_hi_;
};

}  // namespace meshcast::detail

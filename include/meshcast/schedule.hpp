// Schedules: the ops a solver chose, in the order they are issued.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "op.hpp"

namespace meshcast {

struct schedule {
  std::string solver;
  std::string strategy;
  std::vector<op> ops;           ///< in issue order; start/end as the ordered model gives them
  double makespan_s = 0;         ///< ordered model
  double lower_bound_s = 0;      ///< certified lower bound of the instance
  double solve_ms = 0;           ///< wall time of the solver
  bool proven_optimal = false;   ///< the solver proved no schedule of the instance is shorter
  double solver_bound_s = 0;     ///< best bound the solver itself proved (>= lower_bound_s when set)

  double gap() const noexcept { return lower_bound_s > 0 ? makespan_s / lower_bound_s - 1 : 0; }
};

/// The ordered model's clock: every resource is free from some time on, and an op placed next
/// starts when all its resources are free. Solvers use it to build schedules; `simulate` too.
class resource_clock {
 public:
  explicit resource_clock(int resources) : free_(static_cast<std::size_t>(resources), 0.0) {}
  double earliest_start(const op& o) const noexcept {
    double t = 0;
    for (int r : o.resources) t = std::max(t, free_[r]);
    return t;
  }
  /// Places `o` as the next op: returns its end.
  double place(op& o) noexcept {
    o.start = earliest_start(o);
    o.end = o.start + o.duration;
    for (int r : o.resources) free_[r] = o.end;
    makespan_ = std::max(makespan_, o.end);
    return o.end;
  }
  double free_at(int resource) const noexcept { return free_[resource]; }
  double makespan() const noexcept { return makespan_; }

 private:
  std::vector<double> free_;
  double makespan_ = 0;
};

}  // namespace meshcast

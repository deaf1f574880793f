// Schedules: the transfers a solver chose, in the order they are issued, for one execution mode,
// with the model's view of each transfer beside it.
#pragma once

#include <string>
#include <vector>

#include "execution.hpp"
#include "op.hpp"

namespace meshcast {

struct schedule {
  std::string solver;
  std::string strategy;
  execution mode = execution::ordered;  ///< how it is to be run; its figures are that mode's
  std::vector<transfer> transfers;      ///< in issue order
  std::vector<transfer_model> model;    ///< beside `transfers`: resources, durations, times
  double makespan_s = 0;                ///< predicted by the mode's model
  double lower_bound_s = 0;             ///< certified bound of the mode (for this strategy)
  double physical_bound_s = 0;          ///< no mode, strategy or solver can beat it on this network
  double solve_ms = 0;                  ///< wall time of the solver
  bool proven_optimal = false;          ///< the solver proved no schedule of the instance is shorter
  double solver_bound_s = 0;            ///< best bound the solver itself proved (>= lower_bound_s when set)

  double gap() const noexcept { return lower_bound_s > 0 ? makespan_s / lower_bound_s - 1 : 0; }
  friend bool operator==(const schedule&, const schedule&) = default;
};

}  // namespace meshcast

// Lower bounds on the makespan of any deadlock-free lists with the schedule's compute order.
#pragma once

#include <algorithm>
#include <vector>

#include "graph.hpp"

namespace meshcast::pipeline {

/// The longest dependency path, and the work of every stream (with shared streams a stage
/// carries its computes and its transfers; with separate streams each stream its own kind),
/// whichever is larger.
inline double lower_bound(const graph& g) {
  double bound = 0;
  for (double t : g.tails()) bound = std::max(bound, t);
  const bool separate = g.source().streams == stream_mode::separate;
  std::vector<double> compute(static_cast<std::size_t>(g.stages()), 0), comm(compute);
  for (graph::id o = 0; o < g.size(); ++o) {
    if (g.is_compute(o)) {
      compute[g.stage_of(o)] += g.duration(o);
    } else {
      comm[g.sender(o)] += g.duration(o);
      comm[g.receiver(o)] += g.duration(o);
    }
  }
  for (index_t s = 0; s < g.stages(); ++s)
    bound = std::max(bound, separate ? std::max(compute[s], comm[s]) : compute[s] + comm[s]);
  return bound;
}

}  // namespace meshcast::pipeline

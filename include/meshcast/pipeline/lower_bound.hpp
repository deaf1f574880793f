// Lower bounds on the makespan of any deadlock-free lists with the schedule's compute order.
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

#include "graph.hpp"

namespace meshcast::pipeline {

/// The longest dependency path; and for every stream (with shared streams a stage carries its
/// computes and its transfers, with separate streams each stream its own kind) its work, plus
/// the earliest any of its operations can start (the longest path to it) and the shortest path
/// that must follow the last of them: whichever is larger.
inline double lower_bound(const graph& g) {
  const std::vector<double> head = g.heads(), tail = g.tails();
  double bound = 0;
  for (double t : tail) bound = std::max(bound, t);
  const bool separate = g.source().streams == stream_mode::separate;
  const std::size_t streams = static_cast<std::size_t>(separate ? 2 * g.stages() : g.stages());
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> work(streams, 0), first(streams, inf), last(streams, inf);
  auto add = [&](index_t q, graph::id o) {
    work[q] += g.duration(o);
    first[q] = std::min(first[q], head[o]);
    last[q] = std::min(last[q], tail[o] - g.duration(o));
  };
  for (graph::id o = 0; o < g.size(); ++o) {
    if (g.is_compute(o)) {
      add(separate ? 2 * g.stage_of(o) : g.stage_of(o), o);
    } else {
      add(separate ? 2 * g.sender(o) + 1 : g.sender(o), o);
      add(separate ? 2 * g.receiver(o) + 1 : g.receiver(o), o);
    }
  }
  for (std::size_t q = 0; q < streams; ++q)
    if (work[q] > 0 || first[q] < inf) bound = std::max(bound, first[q] + work[q] + last[q]);
  return bound;
}

}  // namespace meshcast::pipeline

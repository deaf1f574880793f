// Dispatching: the ops of chosen options re-sequenced one op at a time rather than one unit at a
// time. A unit-by-unit list places all of a unit's messages together, so a sender's messages to
// several hosts queue behind each other's receivers (a convoy): on a batch of point-to-point
// bundles the list ended 3-7% above the optimum branch_and_bound proves. Here the op that can
// start earliest goes next (ties: the one whose busiest NIC direction has the most work left,
// then the longest), each after the op it waits for. Starts never decrease, so no gap the ordered
// model could fill is left behind, and the ordered model run over the result in its order gives
// exactly these times.
#pragma once

#include <algorithm>
#include <queue>
#include <tuple>
#include <vector>

#include "../instance.hpp"
#include "../op_timing.hpp"
#include "../../model/ordered_engine.hpp"

namespace meshcast {

namespace detail {

/// Looks dispatching takes before it gives up (dispatch's `max_looks`).
inline constexpr std::size_t dispatch_looks = std::size_t{1} << 22;

/// Dispatching's answer before any op is copied: the chosen options' ops (unit by unit, in the
/// list's order), the order it runs them in and their times. A caller that keeps the list instead
/// copies nothing.
struct dispatched {
  std::vector<const op*> ops;         ///< the chosen options' ops, unit by unit in `order`
  std::vector<std::size_t> sequence;  ///< positions in `ops`, in the order dispatched
  std::vector<double> start, end;     ///< beside `ops`
  double makespan = 0;
  bool done = false;  ///< false: past `max_looks`, no answer

  /// The ops in their dispatched order, with their times.
  std::vector<op> materialize() const {
    std::vector<op> out;
    out.reserve(sequence.size());
    for (std::size_t i : sequence) {
      out.push_back(*ops[i]);
      out.back().start = start[i];
      out.back().end = end[i];
    }
    return out;
  }
};

/// See dispatch below; reads the ops' timing from `timing` (made from the same instance).
inline dispatched dispatch_sequence(const instance& in, const instance_timing& timing, const std::vector<std::size_t>& order,
                                    const std::vector<std::size_t>& choice, std::size_t max_looks) {
  const resource_space& rs = in.resources;
  dispatched r;
  std::vector<const op_timing*> ops;
  std::vector<std::size_t> first(in.units.size(), 0);  // where each unit's ops start in `ops`
  for (std::size_t u : order) {
    first[u] = ops.size();
    for (const op_timing& o : timing.ops(u, choice[u])) ops.push_back(&o);
    for (const op& o : in.units[u].options[choice[u]].ops) r.ops.push_back(&o);
  }
  const std::size_t n = ops.size();
  std::vector<std::vector<std::size_t>> dependents(n);
  std::vector<double> ready(n, 0.0);
  std::vector<char> waiting(n, 0);
  std::vector<double> left(static_cast<std::size_t>(rs.size()), 0.0);  // work not yet placed, per NIC direction
  std::vector<std::size_t> count(static_cast<std::size_t>(rs.size()), 0);
  for (std::size_t u : order)
    for (std::size_t j = 0; j < in.units[u].options[choice[u]].ops.size(); ++j) {
      const std::size_t i = first[u] + j;
      const op_timing& o = *ops[i];
      if (o.after >= 0) dependents[first[u] + static_cast<std::size_t>(o.after)].push_back(i), waiting[i] = 1;
      for (std::size_t k = 0; k < o.resources.size(); ++k)
        if (rs.is_port(o.resources[k])) {
          left[static_cast<std::size_t>(o.resources[k])] += o.held_for(k);
          ++count[static_cast<std::size_t>(o.resources[k])];
        }
    }
  std::size_t estimate = n;
  for (std::size_t k : count) estimate += k * k;
  if (estimate > max_looks) return r;
  auto urgency = [&](std::size_t i) {
    double most = 0;
    for (int x : ops[i]->resources)
      if (rs.is_port(x)) most = std::max(most, left[static_cast<std::size_t>(x)]);
    return most;
  };
  resource_clock clock(rs.size());
  using entry = std::tuple<double, double, double, std::size_t>;  // start, -urgency, -duration, op
  std::priority_queue<entry, std::vector<entry>, std::greater<entry>> heap;
  auto push = [&](std::size_t i) { heap.push({clock.earliest_start(*ops[i], ready[i]), -urgency(i), -ops[i]->duration, i}); };
  for (std::size_t i = 0; i < n; ++i)
    if (!waiting[i]) push(i);
  r.sequence.reserve(n);
  r.start.assign(n, 0.0);
  r.end.assign(n, 0.0);
  std::size_t looks = 0;
  while (!heap.empty()) {
    const auto [start, urgent, longest, i] = heap.top();
    heap.pop();
    if (++looks > 2 * max_looks) return r;
    // Starts only grow as resources fill: an entry whose op can no longer start then goes back.
    const op_timing& o = *ops[i];
    const double now = clock.earliest_start(o, ready[i]);
    if (now > start) {
      push(i);
      continue;
    }
    r.start[i] = now;
    r.end[i] = clock.occupy(o, now);
    for (std::size_t k = 0; k < o.resources.size(); ++k)
      if (rs.is_port(o.resources[k])) left[static_cast<std::size_t>(o.resources[k])] -= o.held_for(k);
    for (std::size_t d : dependents[i]) ready[d] = std::max(ready[d], r.end[i]), push(d);
    r.sequence.push_back(i);
  }
  r.makespan = clock.makespan();
  r.done = true;
  return r;
}

}  // namespace detail

/// The ops of option `choice[u]` of every unit, re-sequenced (see the file comment), with their
/// times set; `*makespan` gets the makespan. `order` only breaks the remaining ties. Each op is
/// looked at again whenever what it waits for moved on, which costs about the sum over NIC
/// directions of the square of their op counts: where that estimate passes `max_looks`, or the
/// looks do, it returns nothing (a count, not a time, so the answer is the same on any machine).
inline std::vector<op> dispatch(const instance& in, const std::vector<std::size_t>& order,
                                const std::vector<std::size_t>& choice, double* makespan,
                                std::size_t max_looks = detail::dispatch_looks) {
  const detail::dispatched r = detail::dispatch_sequence(in, instance_timing(in), order, choice, max_looks);
  if (!r.done) return {};
  if (makespan) *makespan = r.makespan;
  return r.materialize();
}

}  // namespace meshcast

// Discrete-event simulation of a schedule under two models.
//
// ordered: ops issued in the schedule's order on the streams of their devices; each NIC direction
//   carries one op at a time, in that order (single port). This is what the executors do.
// fluid: every op issued at once; concurrent flows share each NIC direction max-min fairly, the
//   way a "launch everything" executor behaves.
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

#include "network.hpp"
#include "op.hpp"
#include "schedule.hpp"

namespace meshcast {

/// Sets every op's start and end under the ordered model; returns the makespan.
inline double simulate_ordered(std::vector<op>& ops, const resource_space& rs) {
  resource_clock clock(rs.size());
  for (op& o : ops) clock.place(o);
  return clock.makespan();
}

inline double simulate_ordered(schedule& s, const resource_space& rs) {
  s.makespan_s = simulate_ordered(s.ops, rs);
  return s.makespan_s;
}

/// Makespan under the fluid model (ops' start and end are not changed). Each op first waits one
/// latency, then moves its bytes at the max-min fair rate of the NIC directions it crosses; ops
/// that cross no NIC run at their own (intra-host) speed.
inline double simulate_fluid(const std::vector<op>& ops, const network& net, const resource_space& rs) {
  struct flow {
    double remaining;  // bytes
    std::vector<int> ports;
    double rate = 0;
  };
  std::vector<flow> flows;
  double makespan = 0;
  for (const op& o : ops) {
    flow f{static_cast<double>(o.bytes), {}};
    for (int r : o.resources)
      if (rs.is_port(r)) f.ports.push_back(r);
    if (f.ports.empty()) makespan = std::max(makespan, o.duration);  // intra-host: never contended
    else if (f.remaining > 0) flows.push_back(std::move(f));
  }
  auto capacity = [&](int r) { return r < rs.ports ? net.egress_bps(r) : net.ingress_bps(r - rs.ports); };
  const bool any_flow = !flows.empty();
  double t = net.latency_s();
  std::vector<double> left(static_cast<std::size_t>(2 * rs.ports));
  std::vector<int> users(static_cast<std::size_t>(2 * rs.ports));
  std::vector<char> frozen;
  while (!flows.empty()) {
    // Water-filling: repeatedly saturate the resource with the smallest fair share.
    for (int r = 0; r < 2 * rs.ports; ++r) left[r] = capacity(r);
    frozen.assign(flows.size(), 0);
    std::size_t unfrozen = flows.size();
    while (unfrozen > 0) {
      std::fill(users.begin(), users.end(), 0);
      for (std::size_t i = 0; i < flows.size(); ++i)
        if (!frozen[i])
          for (int r : flows[i].ports) ++users[r];
      int bottleneck = -1;
      double share = std::numeric_limits<double>::infinity();
      for (int r = 0; r < 2 * rs.ports; ++r)
        if (users[r] > 0 && left[r] / users[r] < share) share = left[r] / users[r], bottleneck = r;
      // Rounding may leave a saturated port a hair below zero: a flow still gets a positive rate.
      share = std::max(share, 1e-12 * capacity(bottleneck));
      for (std::size_t i = 0; i < flows.size(); ++i) {
        if (frozen[i] || std::find(flows[i].ports.begin(), flows[i].ports.end(), bottleneck) == flows[i].ports.end())
          continue;
        flows[i].rate = share;
        frozen[i] = 1;
        --unfrozen;
        for (int r : flows[i].ports) left[r] -= share;
      }
    }
    // Advance to the next completion. The flows that finish then are removed by index, not by
    // comparing what is left with a tolerance, so every pass removes at least one flow.
    double step = std::numeric_limits<double>::infinity();
    for (const flow& f : flows) step = std::min(step, f.remaining / f.rate);
    t += step;
    for (flow& f : flows) {
      if (f.remaining / f.rate <= step * (1 + 1e-12)) f.remaining = 0;
      else f.remaining -= f.rate * step;
    }
    std::erase_if(flows, [](const flow& f) { return f.remaining <= 0; });
  }
  return any_flow ? std::max(makespan, t) : makespan;
}

}  // namespace meshcast

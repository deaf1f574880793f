// The models of the execution modes: each sets every transfer's start and end in a schedule and
// returns the makespan.
//
// ordered: transfers in schedule order; each NIC direction and each device stream carries one at
//   a time (the ordered engine, ordered_engine.hpp). The ordered executor enforces exactly this.
// concurrent: every transfer starts as soon as the transfers it waits for are complete; after its
//   latency its bytes flow at the max-min fair rate of the NIC directions it crosses (the way
//   TCP flows share a link); transfers that cross no NIC take their own (intra-host) time.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "network.hpp"
#include "op.hpp"
#include "ordered_engine.hpp"
#include "schedule.hpp"

namespace meshcast {

namespace detail {
// What the models index by: a model per transfer, each dependency an earlier transfer, each
// resource inside `rs` with its hold times beside it. A hand-made schedule that broke one of
// these was read out of bounds (found by review); solve() and the executor's checks make none.
inline void check_simulable(const std::vector<transfer>& transfers, const std::vector<transfer_model>& model,
                            const resource_space& rs) {
  // size() counts in int: a caller's space of 2^31 devices wrapped to 4 resources (found by review).
  if (rs.ports < 0 || rs.devices < 0 || rs.devices > max_devices ||
      2 * static_cast<index_t>(rs.ports) + 2 * rs.devices > std::numeric_limits<int>::max())
    throw error("simulate: a resource space of " + std::to_string(rs.ports) + " ports and " + std::to_string(rs.devices) +
                " devices; each must be 0 or more, at most " + std::to_string(max_devices) +
                " devices, and twice their sum must fit an int");
  if (model.size() != transfers.size())
    throw error("simulate: the schedule has " + std::to_string(transfers.size()) + " transfers but " +
                std::to_string(model.size()) + " models");
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    for (std::int32_t w : transfers[i].waits_for)
      if (w < 0 || static_cast<std::size_t>(w) >= i)
        throw error("simulate: transfer " + std::to_string(i) + " waits for a transfer that does not come before it");
    const transfer_model& m = model[i];
    if (!m.hold_from.empty() && (m.hold_from.size() != m.resources.size() || m.hold_until.size() != m.resources.size()))
      throw error("simulate: transfer " + std::to_string(i) + " has hold times that do not match its resources");
    for (int r : m.resources)
      if (r < 0 || r >= rs.size())
        throw error("simulate: transfer " + std::to_string(i) + " occupies resource " + std::to_string(r) +
                    ", outside the network's " + std::to_string(rs.size()));
    // The models add these to their clocks: NaN was dropped by max (a makespan of 0), a negative
    // time ended a transfer before it started, an infinite one stopped the concurrent model early.
    auto seconds = [](double x) { return std::isfinite(x) && x >= 0; };
    bool fine = seconds(m.duration) && seconds(m.latency_s);
    for (std::size_t k = 0; k < m.hold_from.size(); ++k)
      fine = fine && seconds(m.hold_from[k]) && seconds(m.hold_until[k]) && m.hold_from[k] <= m.hold_until[k];
    if (!fine)
      throw error("simulate: transfer " + std::to_string(i) +
                  " has a duration, latency or hold time that is not a finite, non-negative number of seconds,"
                  " or a hold that ends before it starts");
  }
}

// The ordered engine indexes connection slots by number (dense from connection_map); a hand-made
// slot of 2^26 grew its table to 1.5 GB (found by review). Sparse slots are renumbered densely for
// the run, each pair's two directions staying k and k ^ 1, and given back after.
class dense_connections {
 public:
  explicit dense_connections(std::vector<transfer_model>& model) : model_(model) {
    int highest = -1;
    for (const transfer_model& m : model) highest = std::max(highest, m.connection);
    if (highest < 0 || static_cast<std::size_t>(highest) < 2 * model.size()) return;
    std::map<int, int> pair_slot;  // caller's pair (slot / 2) -> dense first slot
    saved_.reserve(model.size());
    for (transfer_model& m : model) {
      saved_.push_back(m.connection);
      if (m.connection < 0) continue;
      const auto [it, fresh] = pair_slot.try_emplace(m.connection / 2, 2 * static_cast<int>(pair_slot.size()));
      m.connection = it->second + (m.connection & 1);
    }
  }
  ~dense_connections() {
    for (std::size_t i = 0; i < saved_.size(); ++i) model_[i].connection = saved_[i];
  }
  dense_connections(const dense_connections&) = delete;
  dense_connections& operator=(const dense_connections&) = delete;

 private:
  std::vector<transfer_model>& model_;
  std::vector<int> saved_;  // empty: nothing renumbered
};
}  // namespace detail

/// Ordered model over a schedule's transfers and their models; returns the makespan.
inline double simulate_ordered(const std::vector<transfer>& transfers, std::vector<transfer_model>& model,
                               const resource_space& rs) {
  detail::check_simulable(transfers, model, rs);
  const detail::dense_connections slots(model);
  resource_clock clock(rs.size());
  for (std::size_t i = 0; i < model.size(); ++i) {
    double ready = 0;
    for (std::int32_t w : transfers[i].waits_for) ready = std::max(ready, model[static_cast<std::size_t>(w)].end);
    clock.place(model[i], ready);
  }
  return clock.makespan();
}

/// Concurrent model (see the file comment); returns the makespan.
inline double simulate_concurrent(const std::vector<transfer>& transfers, std::vector<transfer_model>& model,
                                  const network& net, const resource_space& rs) {
  detail::check_simulable(transfers, model, rs);
  if (rs.ports > net.port_count()) throw error("simulate: the resource space has more ports than the network");
  const std::size_t n = transfers.size();
  constexpr double inf = std::numeric_limits<double>::infinity();
  auto capacity = [&](int r) { return rs.is_egress(r) ? net.egress_bps(rs.port_of(r)) : net.ingress_bps(rs.port_of(r)); };
  std::vector<std::vector<std::size_t>> dependents(n);
  std::vector<std::size_t> waiting(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::int32_t w : transfers[i].waits_for) {
      dependents[static_cast<std::size_t>(w)].push_back(i);
      ++waiting[i];
    }
  struct flow {
    std::size_t op;
    double remaining;  // bytes
    std::vector<int> ports;
    double rate = 0;
  };
  std::vector<flow> flows;                  // moving bytes now
  std::vector<std::pair<double, std::size_t>> timers;  // (time, op): latency over, or a local op done
  std::vector<char> flowing(n, 0);  // whether a timer ends the op's latency (1) or the op (0)
  double t = 0, makespan = 0;
  std::size_t done = 0;
  auto become_ready = [&](std::size_t i) {
    model[i].start = t;
    bool nic = false;
    for (int r : model[i].resources) nic |= rs.is_port(r);
    if (nic && transfers[i].bytes > 0) {
      flowing[i] = 1;
      timers.push_back({t + model[i].latency_s, i});
    } else {
      timers.push_back({t + model[i].duration, i});
    }
  };
  auto finish = [&](std::size_t i) {
    model[i].end = t;
    makespan = std::max(makespan, t);
    ++done;
    for (std::size_t d : dependents[i])
      if (--waiting[d] == 0) become_ready(d);
  };
  for (std::size_t i = 0; i < n; ++i)
    if (waiting[i] == 0) become_ready(i);
  std::vector<double> left(static_cast<std::size_t>(rs.port_directions()));
  std::vector<int> users(static_cast<std::size_t>(rs.port_directions()));
  std::vector<char> frozen;
  while (done < n) {
    // Max-min fair rates: repeatedly saturate the NIC direction with the smallest fair share.
    for (flow& f : flows) f.rate = 0;
    frozen.assign(flows.size(), 0);
    std::size_t unfrozen = flows.size();
    for (int r = 0; r < rs.port_directions(); ++r) left[r] = capacity(r);
    while (unfrozen > 0) {
      std::fill(users.begin(), users.end(), 0);
      for (std::size_t i = 0; i < flows.size(); ++i)
        if (!frozen[i])
          for (int r : flows[i].ports) ++users[r];
      int bottleneck = -1;
      double share = inf;
      for (int r = 0; r < rs.port_directions(); ++r)
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
    // The next event: a flow completes, or a timer rings. Events are taken by comparing the very
    // expressions the step was chosen from, so each pass ends at least one flow or timer.
    double step = inf;
    for (const flow& f : flows) step = std::min(step, f.remaining / f.rate);
    for (const auto& [at, i] : timers) step = std::min(step, at - t);
    if (!(step < inf))  // nothing can move: the checks above leave no schedule that does this
      throw error("simulate: " + std::to_string(n - done) + " transfers of the concurrent model never complete");
    step = std::max(step, 0.0);
    std::vector<std::size_t> ended;
    for (flow& f : flows) {
      if (f.remaining / f.rate <= step) {
        f.remaining = 0;
        ended.push_back(f.op);
      } else {  // never to zero by rounding: only the flows in `ended` leave
        f.remaining = std::max(f.remaining - f.rate * step, std::numeric_limits<double>::min());
      }
    }
    std::erase_if(flows, [](const flow& f) { return f.remaining == 0; });
    std::vector<std::pair<double, std::size_t>> rung;
    std::erase_if(timers, [&](const std::pair<double, std::size_t>& x) {
      if (x.first - t > step) return false;
      rung.push_back(x);
      return true;
    });
    t += step;
    for (const auto& [at, i] : rung) {
      if (flowing[i]) {  // latency over: the bytes start to move
        flowing[i] = 0;
        flow f{i, static_cast<double>(transfers[i].bytes), {}};
        for (int r : model[i].resources)
          if (rs.is_port(r)) f.ports.push_back(r);
        flows.push_back(std::move(f));
      } else {
        finish(i);
      }
    }
    for (std::size_t i : ended) finish(i);
  }
  return makespan;
}

/// The model of the schedule's own mode: sets every transfer's start and end, and the makespan.
inline double simulate(schedule& s, const network& net, const resource_space& rs) {
  s.makespan_s = s.mode == execution::ordered ? simulate_ordered(s.transfers, s.model, rs)
                                              : simulate_concurrent(s.transfers, s.model, net, rs);
  return s.makespan_s;
}

}  // namespace meshcast

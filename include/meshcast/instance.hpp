// A scheduling instance: the plan's tasks turned, by a strategy, into units of work with one
// option per possible sender. Solvers choose an option per unit and an order for all the ops.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "network.hpp"
#include "plan.hpp"
#include "slice.hpp"
#include "strategy.hpp"

namespace meshcast {

/// The ops that deliver a unit when `sender` sends it (-1: no choice to make, e.g. local copies).
struct option {
  index_t sender = -1;
  std::vector<op> ops;
};

/// A task, or a slice of one under replica splitting, with its alternatives.
struct unit {
  index_t task = 0;
  box region;
  index_t bytes = 0;
  std::vector<option> options;
  bool has_choice() const noexcept { return options.size() > 1; }
};

/// Keeps pointers to the plan and network it was made from: they must outlive it.
struct instance {
  const plan* source = nullptr;
  const network* net = nullptr;
  resource_space resources;
  std::string strategy;
  bool point_to_point = true;
  bool split_replicas = false;
  std::vector<unit> units;

  std::size_t op_count_upper_bound() const noexcept {
    std::size_t n = 0;
    for (const unit& u : units) {
      std::size_t most = 0;
      for (const option& o : u.options) most = std::max(most, o.ops.size());
      n += most;
    }
    return n;
  }
};

/// Builds the instance of `p` on `net` under strategy `S`. With `split_replicas`, the part of a
/// task that must cross the network is cut into one slice per replica, each with its own sender.
template <strategy S>
instance make_instance(const plan& p, const network& net, S, bool split_replicas = false) {
  if (net.device_count() < p.device_count)
    throw error("the network describes " + std::to_string(net.device_count()) + " devices but the plan uses " +
                std::to_string(p.device_count));
  instance in;
  in.source = &p;
  in.net = &net;
  in.resources = {net.port_count(), net.device_count()};
  in.strategy = std::string(S::name);
  in.point_to_point = S::point_to_point;
  in.split_replicas = split_replicas;
  for (std::size_t i = 0; i < p.tasks.size(); ++i) {
    const send_task& t = p.tasks[i];
    const auto task = static_cast<index_t>(i);
    auto senders = p.senders(t);
    unit fixed{task, t.region, t.bytes, {option{}}};
    std::vector<index_t> remote =
        deliver_locally(net, in.resources, task, t.region, t.bytes, senders, p.receivers(t), fixed.options[0].ops);
    if (!fixed.options[0].ops.empty()) in.units.push_back(std::move(fixed));
    if (remote.empty()) continue;
    auto slices = split_replicas ? slice_region(t.region, static_cast<index_t>(senders.size()))
                                 : std::vector<box>{t.region};
    for (const box& slice : slices) {
      unit u{task, slice, slice.volume() * p.element_bytes, {}};
      for (index_t s : senders) {
        option o{s, {}};
        S::remote_ops(net, in.resources, task, slice, u.bytes, s, remote, o.ops);
        u.options.push_back(std::move(o));
      }
      in.units.push_back(std::move(u));
    }
  }
  return in;
}

}  // namespace meshcast

// A certified lower bound on the makespan of any schedule of an instance (ordered model).
//
// The bound is the largest of
//  - ingress: for every NIC port, the bytes that must enter it over its bandwidth, plus one latency
//    per op entering it (no schedule overlaps two ops on one port; solvers may cut a unit's ops
//    into more pieces, never into fewer);
//  - egress: the least T such that the bytes that must leave the senders can be spread over the
//    sender ports, fractionally, without any port carrying more than T of work. That is the
//    max over every set Q of sender ports of (bytes only Q can send) / (bandwidth of Q), found by
//    a parametric max-flow rather than by enumerating sets;
//  - the largest single transfer that cannot be cut (only without replica splitting);
//  - for every device, the work its stream must carry whichever options are chosen.
#pragma once

#include <algorithm>
#include <map>
#include <span>
#include <vector>

#include "../core/detail/max_flow.hpp"
#include "../model/execution.hpp"
#include "instance.hpp"

namespace meshcast {

struct lower_bound_parts {
  double ingress_s = 0;
  double egress_s = 0;
  double largest_transfer_s = 0;
  double device_s = 0;  ///< work that must run on one device's stream (ordered mode only)
  double value() const noexcept { return std::max({ingress_s, egress_s, largest_transfer_s, device_s}); }
};

/// The egress optimum also yields a fractional sender assignment that reaches it.
struct egress_split {
  double makespan_s = 0;
  std::vector<std::vector<double>> fraction;  ///< [unit][option], each unit's row sums to 1
};

namespace detail {
// Per resource, the work of one option at a time and the least over a unit's options (a resource
// an option does not touch counts 0 for it), in dense arrays with lists of what was touched: a
// unit costs the resources its ops name, not the whole space.
class least_load {
 public:
  explicit least_load(std::size_t resources)
      : sum_(resources, 0.0), least_(resources, 0.0), in_sum_(resources, 0), in_least_(resources, 0) {}
  void begin_unit() {
    for (int r : least_keys_) in_least_[static_cast<std::size_t>(r)] = 0;
    least_keys_.clear();
    first_ = true;
  }
  void add(int r, double work) {
    const auto i = static_cast<std::size_t>(r);
    if (!in_sum_[i]) in_sum_[i] = 1, sum_[i] = 0, sum_keys_.push_back(r);
    sum_[i] += work;
  }
  /// The current option's work on `r` (before end_option).
  double sum(int r) const noexcept { return in_sum_[static_cast<std::size_t>(r)] ? sum_[static_cast<std::size_t>(r)] : 0.0; }
  void end_option() {
    if (first_) {
      for (int r : sum_keys_) least_[static_cast<std::size_t>(r)] = sum_[static_cast<std::size_t>(r)], in_least_[static_cast<std::size_t>(r)] = 1;
      least_keys_ = sum_keys_;
      first_ = false;
    } else {
      for (int r : least_keys_) least_[static_cast<std::size_t>(r)] = std::min(least_[static_cast<std::size_t>(r)], sum(r));
    }
    for (int r : sum_keys_) in_sum_[static_cast<std::size_t>(r)] = 0;
    sum_keys_.clear();
  }
  /// After a unit's options: the resources its first option touched, and the least work on each.
  const std::vector<int>& touched() const noexcept { return least_keys_; }
  double least(int r) const noexcept { return in_least_[static_cast<std::size_t>(r)] ? least_[static_cast<std::size_t>(r)] : 0.0; }

 private:
  std::vector<double> sum_, least_;
  std::vector<char> in_sum_, in_least_;
  std::vector<int> sum_keys_, least_keys_;
  bool first_ = true;
};
}  // namespace detail

/// The egress part of the bound, with an assignment reaching it (see the file comment). With
/// `all_replicas`, a unit may leave through the port of any replica of its task (the bound then
/// holds for every sender choice, not only the instance's options); the assignment is then empty.
/// The search stops when the bracket is `tolerance` (relative) wide; the bound is its low end.
inline egress_split egress_bound(const instance& in, bool all_replicas = false, double tolerance = 1e-7) {
  const resource_space& rs = in.resources;
  const network& net = *in.net;
  std::vector<double> fixed(static_cast<std::size_t>(rs.ports), 0.0);
  // Per unit with a choice: bytes that must leave the chosen sender's port beyond the fixed part.
  struct flexible {
    std::vector<int> ports;  // sender port of each option
    double bytes;
  };
  std::vector<flexible> flex(in.units.size());
  detail::least_load load(static_cast<std::size_t>(rs.ports));
  std::vector<double> at_sender;  // per option: bytes leaving its sender's port
  for (std::size_t u = 0; u < in.units.size(); ++u) {
    const unit& un = in.units[u];
    load.begin_unit();
    at_sender.clear();
    for (const option& o : un.options) {
      for (const op& x : o.ops)
        for (int r : x.resources)
          if (rs.is_egress(r)) load.add(rs.port_of(r), static_cast<double>(x.bytes));
      at_sender.push_back(o.sender >= 0 ? load.sum(net.port_of(o.sender)) : 0.0);
      load.end_option();
    }
    for (int port : load.touched()) fixed[static_cast<std::size_t>(port)] += load.least(port);
    if (!un.has_choice()) continue;
    double residual = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < un.options.size(); ++k) {
      int port = net.port_of(un.options[k].sender);
      residual = std::min(residual, at_sender[k] - load.least(port));
      flex[u].ports.push_back(port);
    }
    flex[u].bytes = std::max(0.0, residual);
    // Any replica moves the same bytes out of its port: what must reach the other hosts does not
    // depend on who sends it, since receivers beside a replica are served locally.
    if (all_replicas) flex[u].ports = sender_ports(net, in.plan_of(un).senders(static_cast<std::size_t>(un.task)));
  }
  // Units offering the same set of ports are one node of the flow graph.
  std::map<std::vector<int>, std::vector<std::size_t>> groups;
  for (std::size_t u = 0; u < flex.size(); ++u)
    if (flex[u].bytes > 0) {
      std::vector<int> key = flex[u].ports;
      std::sort(key.begin(), key.end());
      key.erase(std::unique(key.begin(), key.end()), key.end());
      groups[key].push_back(u);
    }
  double total = 0, lo = 0, slowest = std::numeric_limits<double>::infinity();
  for (int p = 0; p < rs.ports; ++p) {
    lo = std::max(lo, fixed[p] / net.egress_bps(p));
    slowest = std::min(slowest, net.egress_bps(p));
  }
  std::vector<double> group_bytes;
  for (const auto& [key, members] : groups) {
    double b = 0;
    for (std::size_t u : members) b += flex[u].bytes;
    group_bytes.push_back(b);
    total += b;
  }
  egress_split result;
  auto solve = [&](double T, std::vector<std::vector<double>>* share) {
    const int g = static_cast<int>(groups.size()), source = g + rs.ports, sink = source + 1;
    detail::max_flow f(sink + 1);
    std::vector<std::vector<std::pair<int, int>>> edge_of(groups.size());
    int i = 0;
    for (const auto& [key, members] : groups) {
      f.add_edge(source, i, group_bytes[i]);
      for (int port : key) edge_of[i].push_back({port, f.add_edge(i, g + port, total)});
      ++i;
    }
    for (int p = 0; p < rs.ports; ++p) f.add_edge(g + p, sink, std::max(0.0, T * net.egress_bps(p) - fixed[p]));
    double got = f.run(source, sink);
    if (share) {
      share->assign(groups.size(), std::vector<double>(static_cast<std::size_t>(rs.ports), 0.0));
      for (int k = 0; k < g; ++k)
        for (auto [port, e] : edge_of[k]) (*share)[k][port] = group_bytes[k] > 0 ? f.flow_on(e) / group_bytes[k] : 0;
    }
    return got >= total * (1 - 1e-9);
  };
  double hi = lo + total / slowest;
  if (total > 0) {
    for (int it = 0; it < 60 && hi - lo > tolerance * hi; ++it) {
      double mid = 0.5 * (lo + hi);
      (solve(mid, nullptr) ? hi : lo) = mid;
    }
  }
  result.makespan_s = lo;  // every T below lo was found infeasible: a certified bound
  if (all_replicas) return result;
  result.fraction.resize(in.units.size());
  for (std::size_t u = 0; u < in.units.size(); ++u) result.fraction[u].assign(in.units[u].options.size(), 0.0);
  std::vector<std::vector<double>> share;
  if (total > 0) solve(hi, &share);
  int k = 0;
  for (const auto& [key, members] : groups) {
    for (std::size_t u : members) {
      // The unit's share of each port goes to its first option on that port.
      for (int port : key) {
        for (std::size_t o = 0; o < flex[u].ports.size(); ++o)
          if (flex[u].ports[o] == port) {
            result.fraction[u][o] += share[k][port];
            break;
          }
      }
    }
    ++k;
  }
  for (std::size_t u = 0; u < in.units.size(); ++u) {
    double sum = 0;
    for (double x : result.fraction[u]) sum += x;
    if (sum <= 0) result.fraction[u][0] = 1;
    else
      for (double& x : result.fraction[u]) x /= sum;
  }
  return result;
}

/// A certified bound on the makespan of any schedule of `in` under its execution mode. Ordered:
/// every op entering a port pays its latency there, and device streams carry one op at a time.
/// Concurrent: ops overlap their latencies and a device may take part in several at once, so
/// only the bytes each port must carry count, plus one latency.
/// With `latencies = false`, only bytes count (no latency, no device stream, no whole transfer):
/// a bound that also holds for the schedule with its messages bucketed (bucket.hpp).
inline lower_bound_parts lower_bound(const instance& in, bool latencies = true) {
  const resource_space& rs = in.resources;
  const network& net = *in.net;
  const bool ordered = in.mode == execution::ordered && latencies;
  lower_bound_parts lb;
  // Ingress and device streams: the least work any option puts on each such resource.
  std::vector<double> ingress(static_cast<std::size_t>(rs.ports), 0.0);
  std::vector<double> stream(static_cast<std::size_t>(2 * rs.devices), 0.0);  // lanes
  detail::least_load load(static_cast<std::size_t>(rs.size()));
  for (const unit& u : in.units) {
    load.begin_unit();
    for (const option& o : u.options) {
      for (const op& x : o.ops)
        for (std::size_t j = 0; j < x.resources.size(); ++j) {
          const int r = x.resources[j];
          if (rs.is_ingress(r))
            load.add(r, static_cast<double>(x.bytes) / net.ingress_bps(rs.port_of(r)) + (ordered ? net.latency_s() : 0.0));
          else if (rs.is_lane(r) && ordered)
            load.add(r, x.held_for(j));
        }
      load.end_option();
    }
    for (int r : load.touched()) {
      if (rs.is_port(r)) ingress[static_cast<std::size_t>(rs.port_of(r))] += load.least(r);
      else stream[static_cast<std::size_t>(rs.lane_index(r))] += load.least(r);
    }
  }
  const double one_latency = latencies ? net.latency_s() : 0.0;
  for (double t : ingress) lb.ingress_s = std::max(lb.ingress_s, t > 0 && !ordered ? t + one_latency : t);
  for (double t : stream) lb.device_s = std::max(lb.device_s, t);
  egress_split e = egress_bound(in, /*all_replicas=*/true);
  lb.egress_s = e.makespan_s > 0 ? e.makespan_s + one_latency : 0;
  if (!latencies) return lb;
  for (const unit& u : in.units) {
    if (in.split_replicas && u.has_choice()) continue;  // may be cut further among replicas
    double best = std::numeric_limits<double>::infinity();
    for (const option& o : u.options) {
      double longest = 0;
      for (const op& x : o.ops) longest = std::max(longest, x.duration);
      best = std::min(best, longest);
    }
    lb.largest_transfer_s = std::max(lb.largest_transfer_s, best);
  }
  return lb;
}

/// The physical limit of a network for a plan, whatever the strategy, mode or solver: every host
/// must take in, across its NICs, each region it needs and holds no copy of; and every region
/// another host needs must leave the hosts that hold it at least once, spread over them at best
/// (the least T for which a flow from regions to holder hosts fits T times their egress
/// bandwidth: the Hall bound over sets of sender hosts). At the NICs' line rates (no transport
/// carries more than that), plus one latency.
inline double physical_bound(std::span<const plan* const> plans, const network& net) {
  for (const plan* p : plans) net.check_describes(p->device_count);
  const index_t hosts = net.host_count();
  std::vector<double> need(static_cast<std::size_t>(hosts), 0.0);
  std::map<std::vector<index_t>, double> leave;  // sender host set -> bytes that must leave it
  std::vector<index_t> seen(static_cast<std::size_t>(hosts), -1), holds(static_cast<std::size_t>(hosts), -1);
  index_t tag = -1;
  for (const plan* pp : plans) {
  const plan& p = *pp;
  for (std::size_t i = 0; i < p.tasks.size(); ++i) {
    ++tag;
    std::vector<index_t> holders;
    for (index_t s : p.senders(i))
      if (holds[net.host_of(s)] != tag) holds[net.host_of(s)] = tag, holders.push_back(net.host_of(s));
    bool remote = false;
    for (index_t r : p.receivers(i)) {
      const index_t h = net.host_of(r);
      if (holds[h] == tag || seen[h] == tag) continue;
      seen[h] = tag;
      need[static_cast<std::size_t>(h)] += static_cast<double>(p.tasks[i].bytes);
      remote = true;
    }
    if (remote) {
      std::sort(holders.begin(), holders.end());
      leave[holders] += static_cast<double>(p.tasks[i].bytes);
    }
  }
  }
  double bound = 0;
  for (index_t h = 0; h < hosts; ++h) bound = std::max(bound, need[static_cast<std::size_t>(h)] / net.host_line_ingress_bps(h));
  // Egress: bisection on T with a max-flow from sender sets to hosts.
  double total = 0, lo = 0, hi = 0;
  for (const auto& [set, b] : leave) {
    total += b;
    double fastest = 0;
    for (index_t h : set) fastest += net.host_line_egress_bps(h);
    lo = std::max(lo, b / fastest);  // a set alone
    hi += b / fastest;
  }
  auto fits = [&](double T) {
    const int g = static_cast<int>(leave.size()), source = g + static_cast<int>(hosts), sink = source + 1;
    detail::max_flow f(sink + 1);
    int k = 0;
    for (const auto& [set, b] : leave) {
      f.add_edge(source, k, b);
      for (index_t h : set) f.add_edge(k, g + static_cast<int>(h), b);
      ++k;
    }
    for (index_t h = 0; h < hosts; ++h) f.add_edge(g + static_cast<int>(h), sink, T * net.host_line_egress_bps(h));
    return f.run(source, sink) >= total * (1 - 1e-9);
  };
  if (total > 0) {
    for (int it = 0; it < 60 && hi - lo > 1e-7 * hi; ++it) {
      const double mid = 0.5 * (lo + hi);
      (fits(mid) ? hi : lo) = mid;
    }
  }
  bound = std::max(bound, lo);
  return bound > 0 ? bound + net.latency_s() : 0;
}
inline double physical_bound(const plan& p, const network& net) {
  const plan* one[] = {&p};
  return physical_bound(one, net);
}
/// The physical bound of everything an instance moves (all tensors of a batch).
inline double physical_bound(const instance& in) {
  std::vector<const plan*> plans;
  for (const auto& p : in.plans) plans.push_back(p.get());
  return physical_bound(plans, *in.net);
}

}  // namespace meshcast

// An independent checker of schedules: it reads only the plan, the network's host map and the
// transfers' public fields (region, bytes, sender, receivers, waits_for) and their model (hosts,
// start, end). The ordered mode's one-at-a-time rules are checked for ordered schedules only.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>

#include "oracle.hpp"

namespace meshcast::testing {

/// Returns "" when the schedule is valid, else the first problem found.
inline std::string check_schedule(const plan& p, const std::vector<index_t>& host_of, const schedule& s,
                                  bool single_nic_hosts = true) {
  const double eps = 1e-12;
  const index_t volume = p.src.whole().volume();
  std::vector<index_t> src_pos(p.device_count, -1), dst_pos(p.device_count, -1);
  for (std::size_t i = 0; i < p.src_devices.size(); ++i) src_pos[p.src_devices[i]] = static_cast<index_t>(i);
  for (std::size_t j = 0; j < p.dst_devices.size(); ++j) dst_pos[p.dst_devices[j]] = static_cast<index_t>(j);
  // arrival[device][element]: when the element reached the device (over all ops), and how often.
  std::vector<std::vector<int>> count(p.device_count, std::vector<int>(volume, 0));
  std::vector<std::vector<double>> arrival(p.device_count, std::vector<double>(volume, 1e300));
  double makespan = 0;
  if (s.model.size() != s.transfers.size()) return "the model does not match the transfers";
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer& o = s.transfers[i];
    const transfer_model& m = s.model[i];
    if (o.task < 0 || o.task >= static_cast<index_t>(p.tasks.size())) return "op names a task that does not exist";
    const send_task& t = p.tasks[o.task];
    if (o.region.empty() || !t.region.contains(o.region)) return "op region " + o.region.to_string() + " is not inside its task";
    if (o.bytes != o.region.volume() * p.element_bytes) return "op bytes do not match its region";
    if (m.end < m.start - eps || m.start < -eps) return "op times are not ordered";
    for (std::int32_t w : o.waits_for)
      if (w < 0 || static_cast<std::size_t>(w) >= i || s.model[static_cast<std::size_t>(w)].end > m.start + eps)
        return "a transfer starts before one it waits for has ended";
    auto receivers = p.receivers(t);
    for (index_t r : o.receivers)
      if (std::find(receivers.begin(), receivers.end(), r) == receivers.end()) return "op delivers to a device that does not need it";
    for_each_element(o.region, [&](const std::vector<index_t>& e) {
      index_t x = linear(p.src.shape, e);
      for (index_t r : o.receivers) {
        ++count[r][x];
        arrival[r][x] = std::min(arrival[r][x], m.end);
      }
    });
    makespan = std::max(makespan, m.end);
  }
  // Every sender holds what it sends when it starts: in its source tile, or received before.
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer& o = s.transfers[i];
    bool source_holder = src_pos[o.sender] >= 0 && p.src.tile(src_pos[o.sender]).contains(o.region);
    if (source_holder) continue;
    bool ok = true;
    for_each_element(o.region, [&](const std::vector<index_t>& e) {
      ok &= arrival[o.sender][linear(p.src.shape, e)] <= s.model[i].start + eps;
    });
    if (!ok) return "device " + std::to_string(o.sender) + " sends " + o.region.to_string() + " before it holds it";
  }
  // Every destination element arrives exactly once.
  for (std::size_t j = 0; j < p.dst_devices.size(); ++j) {
    index_t dev = p.dst_devices[j];
    bool ok = true;
    for_each_element(p.dst.whole(), [&](const std::vector<index_t>& e) {
      int want = holds(p.dst, static_cast<index_t>(j), e) ? 1 : 0;
      ok &= count[dev][linear(p.src.shape, e)] == want;
    });
    if (!ok) return "device " + std::to_string(dev) + " does not receive its tile exactly once";
  }
  // Ordered model: one op at a time per NIC direction (single-NIC hosts) and per device. An op
  // that holds its resources for less than the whole op (a pipelined chain) is checked with the
  // windows it claims for each device (transfer_model::held_from/held_until, over the resources
  // that device drives) and for each host (over its devices'): inside the op, and along a chain,
  // starting in the order the bytes pass.
  struct use {
    index_t who;
    double from, to;
  };
  std::vector<std::vector<use>> egress(s.transfers.size()), ingress(s.transfers.size()), sending(s.transfers.size()),
      receiving(s.transfers.size());
  for (std::size_t i = 0; i < s.transfers.size() && s.mode == execution::ordered; ++i) {
    const transfer& t = s.transfers[i];
    const transfer_model& m = s.model[i];
    auto window = [&](auto&& mine) {
      if (!m.holds_briefly()) return use{0, m.start, m.end};
      use w{0, 1e300, -1e300};
      for (std::size_t k = 0; k < m.resources.size(); ++k)
        if (mine(m.holders[k])) w.from = std::min(w.from, m.start + m.held_from(k)), w.to = std::max(w.to, m.start + m.held_until(k));
      return w;
    };
    auto of_device = [&](index_t d) { return window([&](index_t h) { return h == d; }); };
    auto of_host = [&](index_t host) { return window([&](index_t h) { return host_of[h] == host; }); };
    for (const use& w : {of_device(t.sender), of_host(host_of[t.sender])})
      if (w.from < m.start - eps || w.to > m.end + eps || w.to < w.from) return "an op holds a resource outside its time";
    double previous = m.start;
    for (index_t r : t.receivers) {
      const use w = of_device(r);
      if (w.from < previous - eps || w.to > m.end + eps || w.to < w.from) return "a chain's members hold their resources out of order";
      previous = w.from;
    }
    for (index_t h : m.egress_hosts) egress[i].push_back({h, of_host(h).from, of_host(h).to});
    for (index_t h : m.ingress_hosts) ingress[i].push_back({h, of_host(h).from, of_host(h).to});
    sending[i].push_back({t.sender, of_device(t.sender).from, of_device(t.sender).to});
    // A local copy does both; a chain's members but the last pass the bytes on.
    if (t.kind == transfer_kind::chain)
      for (std::size_t k = 0; k + 1 < t.receivers.size(); ++k)
        sending[i].push_back({t.receivers[k], of_device(t.receivers[k]).from, of_device(t.receivers[k]).to});
    for (index_t r : t.receivers) receiving[i].push_back({r, of_device(r).from, of_device(r).to});
  }
  auto clash = [&](const std::vector<use>& u, const std::vector<use>& v) {
    for (const use& a : u)
      for (const use& b : v)
        if (a.who == b.who && a.from < b.to - eps && b.from < a.to - eps) return true;
    return false;
  };
  for (std::size_t a = 0; a < s.transfers.size() && s.mode == execution::ordered; ++a)
    for (std::size_t b = a + 1; b < s.transfers.size(); ++b) {
      if (s.model[a].start >= s.model[b].end - eps || s.model[b].start >= s.model[a].end - eps) continue;
      if (single_nic_hosts && (clash(egress[a], egress[b]) || clash(ingress[a], ingress[b])))
        return "two ops overlap on one NIC direction";
      if (clash(sending[a], sending[b]) || clash(receiving[a], receiving[b])) return "two ops overlap on one device lane";
    }
  // Hosts named by ops match the host map.
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer& o = s.transfers[i];
    const auto& ingress = s.model[i].ingress_hosts;
    for (index_t r : o.receivers)
      if (host_of[r] != host_of[o.sender] && std::find(ingress.begin(), ingress.end(), host_of[r]) == ingress.end())
        return "a receiver's host is missing from ingress_hosts";
  }
  if (std::abs(makespan - s.makespan_s) > 1e-9 * std::max(1.0, makespan)) return "makespan is not the last end";
  if (s.makespan_s < s.lower_bound_s * (1 - 1e-9)) return "makespan is below the lower bound";
  return "";
}

}  // namespace meshcast::testing

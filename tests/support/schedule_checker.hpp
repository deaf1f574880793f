// An independent checker of schedules: it reads only the plan, the network's host map and the
// ops' public fields (region, bytes, sender, receivers, hosts, start, end).
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
  for (const op& o : s.ops) {
    if (o.task < 0 || o.task >= static_cast<index_t>(p.tasks.size())) return "op names a task that does not exist";
    const send_task& t = p.tasks[o.task];
    if (o.region.empty() || !t.region.contains(o.region)) return "op region " + o.region.to_string() + " is not inside its task";
    if (o.bytes != o.region.volume() * p.element_bytes) return "op bytes do not match its region";
    if (o.end < o.start - eps || o.start < -eps) return "op times are not ordered";
    auto receivers = p.receivers(t);
    for (index_t r : o.receivers)
      if (std::find(receivers.begin(), receivers.end(), r) == receivers.end()) return "op delivers to a device that does not need it";
    for_each_element(o.region, [&](const std::vector<index_t>& e) {
      index_t x = linear(p.src.shape, e);
      for (index_t r : o.receivers) {
        ++count[r][x];
        arrival[r][x] = std::min(arrival[r][x], o.end);
      }
    });
    makespan = std::max(makespan, o.end);
  }
  // Every sender holds what it sends when it starts: in its source tile, or received before.
  for (const op& o : s.ops) {
    bool source_holder = src_pos[o.sender] >= 0 && p.src.tile(src_pos[o.sender]).contains(o.region);
    if (source_holder) continue;
    bool ok = true;
    for_each_element(o.region, [&](const std::vector<index_t>& e) {
      ok &= arrival[o.sender][linear(p.src.shape, e)] <= o.start + eps;
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
  // Ordered model: one op at a time per NIC direction (single-NIC hosts) and per device.
  auto overlap = [&](const op& a, const op& b) { return a.start < b.end - eps && b.start < a.end - eps; };
  for (std::size_t a = 0; a < s.ops.size(); ++a)
    for (std::size_t b = a + 1; b < s.ops.size(); ++b) {
      const op &x = s.ops[a], &y = s.ops[b];
      if (!overlap(x, y)) continue;
      auto shares = [](const std::vector<index_t>& u, const std::vector<index_t>& v) {
        return std::any_of(u.begin(), u.end(), [&](index_t h) { return std::find(v.begin(), v.end(), h) != v.end(); });
      };
      if (single_nic_hosts && (shares(x.egress_hosts, y.egress_hosts) || shares(x.ingress_hosts, y.ingress_hosts)))
        return "two ops overlap on one NIC direction";
      std::vector<index_t> dx = x.receivers, dy = y.receivers;
      dx.push_back(x.sender), dy.push_back(y.sender);
      if (shares(dx, dy)) return "two ops overlap on one device";
    }
  // Hosts named by ops match the host map.
  for (const op& o : s.ops)
    for (index_t r : o.receivers)
      if (host_of[r] != host_of[o.sender] &&
          std::find(o.ingress_hosts.begin(), o.ingress_hosts.end(), host_of[r]) == o.ingress_hosts.end())
        return "a receiver's host is missing from ingress_hosts";
  if (std::abs(makespan - s.makespan_s) > 1e-9 * std::max(1.0, makespan)) return "makespan is not the last end";
  if (s.makespan_s < s.lower_bound_s * (1 - 1e-9)) return "makespan is below the lower bound";
  return "";
}

}  // namespace meshcast::testing

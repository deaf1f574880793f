// broadcast: one sender to all remote receivers as a pipelined chain over the receiving hosts.
// Each receiving host's NIC carries the bytes in once, and out once to the next host, except for
// the last host; devices of one host get the bytes over the intra-host link.
#pragma once

#include <map>

#include "../strategy.hpp"

namespace meshcast {

struct broadcast {
  static constexpr std::string_view name = "broadcast";
  static constexpr bool point_to_point = false;

  static void remote_ops(const network& net, const resource_space& rs, index_t task, const box& region, index_t bytes,
                         index_t sender, std::span<const index_t> remote, std::vector<op>& out) {
    if (remote.empty()) return;
    std::map<index_t, std::vector<index_t>> by_host;
    for (index_t r : remote) by_host[net.host_of(r)].push_back(r);
    op o;
    o.task = task;
    o.region = region;
    o.bytes = bytes;
    o.sender = sender;
    o.resources.push_back(rs.stream(sender));
    o.resources.push_back(rs.egress(net.port_of(sender)));
    o.egress_hosts.push_back(net.host_of(sender));
    double slowest = net.egress_bps(net.port_of(sender));
    bool intra = false;
    std::size_t hop = 0;
    for (const auto& [host, receivers] : by_host) {
      index_t entry = receivers.front();  // takes the bytes off the NIC and forwards them
      o.resources.push_back(rs.ingress(net.port_of(entry)));
      o.ingress_hosts.push_back(host);
      slowest = std::min(slowest, net.ingress_bps(net.port_of(entry)));
      if (++hop < by_host.size()) {
        o.resources.push_back(rs.egress(net.port_of(entry)));
        o.egress_hosts.push_back(host);
        slowest = std::min(slowest, net.egress_bps(net.port_of(entry)));
      }
      for (index_t r : receivers) {
        o.receivers.push_back(r);
        o.resources.push_back(rs.stream(r));
      }
      intra |= receivers.size() > 1;
    }
    // Pipelined: every hop adds a latency, the bytes flow at the slowest link's rate.
    o.duration = static_cast<double>(by_host.size()) * net.latency_s() + static_cast<double>(bytes) / slowest +
                 (intra ? net.latency_s() : 0.0);
    out.push_back(std::move(o));
  }
};

}  // namespace meshcast

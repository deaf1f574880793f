// Communication strategies: how one region reaches the receivers that cannot get it on their host.
//
// A strategy is a tag type (see strategy/send_recv.hpp and its siblings) with a name and a static
// `remote_ops` that appends the operations moving a region from a chosen sender to the receivers
// on other hosts. Receivers that hold the region, or share a host with a device that holds it,
// are served the same way under every strategy (see `deliver_locally`).
#pragma once

#include <algorithm>
#include <span>
#include <string_view>
#include <vector>

#include "network.hpp"
#include "op.hpp"

namespace meshcast {

template <class S>
concept strategy = requires(const network& net, const resource_space& rs, index_t task, const box& region,
                            index_t bytes, index_t sender, std::span<const index_t> remote, std::vector<op>& out) {
  { S::name } -> std::convertible_to<std::string_view>;
  { S::point_to_point } -> std::convertible_to<bool>;
  S::remote_ops(net, rs, task, region, bytes, sender, remote, out);
};

namespace detail {
inline void add_unique(std::vector<index_t>& v, index_t x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}
}  // namespace detail

/// A point-to-point transfer from `s` to `r`: a local copy, an intra-host copy, or a NIC transfer.
inline op make_transfer(const network& net, const resource_space& rs, index_t task, const box& region, index_t bytes,
                        index_t s, index_t r) {
  op o;
  o.task = task;
  o.region = region;
  o.bytes = bytes;
  o.sender = s;
  o.receivers = {r};
  o.duration = net.transfer_time(s, r, bytes);
  o.resources.push_back(rs.stream(s));
  if (r != s) o.resources.push_back(rs.stream(r));
  if (net.host_of(s) != net.host_of(r)) {
    o.resources.push_back(rs.egress(net.port_of(s)));
    o.resources.push_back(rs.ingress(net.port_of(r)));
    o.egress_hosts = {net.host_of(s)};
    o.ingress_hosts = {net.host_of(r)};
  }
  return o;
}

/// Serves the receivers that hold `region` (local copy) or share a host with a holder (copy from
/// the lowest-numbered holder there); returns the receivers left for the network, ascending.
inline std::vector<index_t> deliver_locally(const network& net, const resource_space& rs, index_t task, const box& region,
                                            index_t bytes, std::span<const index_t> senders,
                                            std::span<const index_t> receivers, std::vector<op>& out) {
  std::vector<index_t> remote;
  for (index_t r : receivers) {
    index_t holder = -1;
    for (index_t s : senders) {
      if (s == r) {
        holder = s;
        break;
      }
      if (holder < 0 && net.host_of(s) == net.host_of(r)) holder = s;
    }
    if (holder >= 0) out.push_back(make_transfer(net, rs, task, region, bytes, holder, r));
    else remote.push_back(r);
  }
  return remote;
}

}  // namespace meshcast

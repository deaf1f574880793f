// broadcast: one sender to all remote receivers as a pipelined chain over the receiving hosts
// (sender -> the receivers of one host, ascending -> those of the next host ...); a single remote
// receiver gets a point-to-point transfer. The first
// receiver of each host takes the bytes off its NIC, the last one passes them over its NIC to the
// next host; devices of one host pass them on over the intra-host link. With
// `how = group_broadcast` the same receivers get one collective broadcast instead (MPI_Ibcast,
// ncclBroadcast), modelled as the chain.
#pragma once

#include <map>

#include "../strategy.hpp"

namespace meshcast {

struct broadcast {
  static constexpr std::string_view name = "broadcast";
  static constexpr bool point_to_point = false;
  static constexpr bool options_trusted = true;  // checked by the tests (strategy.hpp)
  transfer_kind how = transfer_kind::chain;  ///< chain or group_broadcast

  void remote_ops(const network& net, const resource_space& rs, index_t task, const box& region, index_t bytes,
                  index_t sender, std::span<const index_t> remote, std::vector<op>& out) const {
    if (how != transfer_kind::chain && how != transfer_kind::group_broadcast)  // as the other enums are checked
      throw error("broadcast::how must be transfer_kind::chain or transfer_kind::group_broadcast");
    if (remote.empty()) return;
    if (remote.size() == 1 && how == transfer_kind::chain) {
      // A chain of one receiver is a point-to-point transfer: sent as one message, not in chunks
      // (on TCP the chunked window ran 1.6-1.7x slower on the emulated cluster's transposes).
      out.push_back(make_transfer(net, rs, task, region, bytes, sender, remote.front()));
      return;
    }
    std::map<index_t, std::vector<index_t>> by_host;
    for (index_t r : remote) by_host[net.host_of(r)].push_back(r);
    op o;
    o.kind = how == transfer_kind::group_broadcast ? transfer_kind::group_broadcast : transfer_kind::chain;
    o.task = task;
    o.region = region;
    o.bytes = bytes;
    o.sender = sender;
    o.occupy(rs.send_lane(sender), sender);
    o.occupy(rs.egress(net.port_of(sender)), sender);
    o.egress_hosts.push_back(net.host_of(sender));
    double slowest = net.egress_bps(net.port_of(sender));
    bool intra = false;
    std::size_t hop = 0;
    for (const auto& [host, receivers] : by_host) {
      const index_t entry = receivers.front(), exit = receivers.back();
      o.occupy(rs.ingress(net.port_of(entry)), entry);
      o.ingress_hosts.push_back(host);
      slowest = std::min(slowest, net.ingress_bps(net.port_of(entry)));
      if (++hop < by_host.size()) {
        o.occupy(rs.egress(net.port_of(exit)), exit);
        o.egress_hosts.push_back(host);
        slowest = std::min(slowest, net.egress_bps(net.port_of(exit)));
      }
      for (index_t r : receivers) {  // each receives; all but the chain's last pass it on
        o.receivers.push_back(r);
        o.occupy(rs.receive_lane(r), r);
        if (hop < by_host.size() || r != receivers.back()) {
          o.occupy(rs.send_lane(r), r);
        }
      }
      intra |= receivers.size() > 1;
    }
    // Devices of one host pass the pieces on over the intra-host link: a slower one sets the rate.
    if (intra) slowest = std::min(slowest, net.intra_bps());
    // Pipelined in pieces: every hop adds a latency, the bytes flow at the slowest link's rate,
    // and each NIC crossing after the first holds the last chunk back by a chunk's time (one
    // more when several chunks share the first link: the executor keeps two in flight).
    // A chain's pieces follow the message, the chain's length and its slowest link
    // (chain_piece_bytes); the schedule carries the size, and the backend cuts by it. A collective
    // broadcast is the MPI library's, modelled with the largest piece.
    const std::size_t piece = o.kind == transfer_kind::chain
                                  ? chain_piece_bytes(static_cast<std::size_t>(bytes), 1 + o.receivers.size(), slowest, net.latency_s())
                                  : chain_chunk_bytes;
    if (o.kind == transfer_kind::chain) o.piece_bytes = static_cast<index_t>(piece);
    const index_t chunk_bytes = std::min<index_t>(bytes, static_cast<index_t>(piece));
    const double chunk = static_cast<double>(chunk_bytes);
    const double fill = static_cast<double>(by_host.size() - 1) * chunk + (bytes > chunk_bytes ? chunk : 0.0);
    o.latency_s = static_cast<double>(by_host.size()) * net.latency_s() + fill / slowest + (intra ? net.latency_s() : 0.0);
    o.duration = o.latency_s + static_cast<double>(bytes) / slowest;
    if (o.kind == transfer_kind::chain) {
      // Each member holds its lanes and NIC directions only while the bytes pass it: the sender's
      // (its first two resources) until its last piece has gone; the members of the i-th receiving
      // host (of H) from when the first piece starts towards them, (i-1) hop times after the
      // start, to when their last piece is through, (H-i) hop times before the end (a hop: a
      // latency and a piece). So chains over the same hosts follow each other a hop apart, as
      // the executor's members, each passing its own NIC token on once done, run them. (A
      // collective broadcast keeps its root busy in algorithm steps of its own: all its resources
      // are held to the end.)
      const double hop = net.latency_s() + chunk / slowest;
      const double hosts = static_cast<double>(by_host.size());
      std::map<index_t, double> position;  // receiving host -> i, from 1
      for (const auto& [host, receivers] : by_host) position.emplace(host, static_cast<double>(position.size() + 1));
      o.hold_from.assign(o.resources.size(), 0.0);
      o.hold_until.assign(o.resources.size(), std::min(o.duration, net.latency_s() + static_cast<double>(bytes) / slowest));
      for (std::size_t k = 2; k < o.resources.size(); ++k) {  // past the sender's two
        const double i = position.at(net.host_of(o.holders[k]));
        o.hold_from[k] = (i - 1) * hop;
        o.hold_until[k] = std::max(o.hold_from[k], o.duration - (hosts - i) * hop);
      }
    }
    out.push_back(std::move(o));
  }
  /// A bundle goes down the chain (or to the lone receiver) whole, as one message.
  void remote_bundle_ops(const network& net, const resource_space& rs, const payload& what, index_t sender,
                         std::span<const index_t> remote, std::vector<op>& out) const {
    detail::whole_payload_ops(*this, net, rs, what, sender, remote, out);
  }
};

}  // namespace meshcast

// send_recv_allgather (Alpa's local all-gather): each receiving host takes the region across its
// NIC once, cut into one slice per receiver device there, then the devices exchange their slices
// over the intra-host link (forwards, each after the receive it passes on).
#pragma once

#include <map>

#include "../slice.hpp"
#include "../strategy.hpp"

namespace meshcast {

struct send_recv_allgather {
  static constexpr std::string_view name = "send_recv_allgather";
  static constexpr bool point_to_point = true;

  void remote_ops(const network& net, const resource_space& rs, index_t task, const box& region, index_t bytes,
                  index_t sender, std::span<const index_t> remote, std::vector<op>& out) const {
    std::map<index_t, std::vector<index_t>> by_host;
    for (index_t r : remote) by_host[net.host_of(r)].push_back(r);
    const index_t element_bytes = region.volume() > 0 ? bytes / region.volume() : 1;
    for (const auto& [host, receivers] : by_host) {
      auto slices = slice_region(region, static_cast<index_t>(receivers.size()));
      for (std::size_t i = 0; i < slices.size(); ++i) {
        index_t slice_bytes = slices[i].volume() * element_bytes;
        out.push_back(make_transfer(net, rs, task, slices[i], slice_bytes, sender, receivers[i]));
        if (receivers.size() == 1) continue;
        // The receiver of slice i passes it on to the other receivers of its host.
        op gather;
        gather.kind = transfer_kind::forward;
        gather.task = task;
        gather.region = slices[i];
        gather.bytes = slice_bytes;
        gather.sender = receivers[i];
        gather.resources.push_back(rs.send_lane(receivers[i]));
        gather.holders.push_back(receivers[i]);
        for (index_t r : receivers) {
          if (r == receivers[i]) continue;
          gather.resources.push_back(rs.receive_lane(r));
          gather.holders.push_back(r);
          gather.receivers.push_back(r);
        }
        // The host's exchanges are one all-gather launch: only the first pays the latency.
        gather.latency_s = i == 0 ? net.latency_s() : 0.0;
        gather.duration = gather.latency_s + static_cast<double>(slice_bytes) / net.intra_bps();
        gather.after = static_cast<int>(out.size()) - 1;
        out.push_back(std::move(gather));
      }
    }
  }
};

}  // namespace meshcast

// send_recv_allgather (Alpa's local all-gather): each receiving host takes the region across its
// NIC once, cut into one slice per receiver device there, then the devices exchange their slices
// over the intra-host link (forwards, each after the receive it passes on). A bundle is cut piece
// by piece: receiver i takes the i-th slice of every piece, as one message.
#pragma once

#include <map>
#include <string>

#include "../../layout/slice.hpp"
#include "../instance_budget.hpp"
#include "../strategy.hpp"

namespace meshcast {

struct send_recv_allgather {
  static constexpr std::string_view name = "send_recv_allgather";
  static constexpr bool point_to_point = true;
  static constexpr bool options_trusted = true;  // checked by the tests (strategy.hpp)

  void remote_ops(const network& net, const resource_space& rs, index_t task, const box& region, index_t bytes,
                  index_t sender, std::span<const index_t> remote, std::vector<op>& out) const {
    const transfer_part one{0, task, region, bytes};
    remote_bundle_ops(net, rs, payload{std::span<const transfer_part>(&one, 1), bytes}, sender, remote, out);
  }

  void remote_bundle_ops(const network& net, const resource_space& rs, const payload& what, index_t sender,
                         std::span<const index_t> remote, std::vector<op>& out) const {
    std::map<index_t, std::vector<index_t>> by_host;
    for (index_t r : remote) by_host[net.host_of(r)].push_back(r);
    // The payload cut for n receivers (hosts with as many share it): slice i of every piece goes
    // to receiver i, as one message (a piece too small for n slices has fewer: the receivers past
    // them pass nothing of it on).
    struct slice {
      transfer_part lead;
      part_list rest;
      index_t bytes = 0;
    };
    std::map<std::size_t, std::vector<slice>> cut_for;
    auto cut = [&](std::size_t n) -> const std::vector<slice>& {
      auto [it, fresh] = cut_for.try_emplace(n);
      if (!fresh) return it->second;
      std::vector<std::vector<transfer_part>> pieces(n);
      for (const transfer_part& q : what.pieces) {
        const index_t element_bytes = q.region.volume() > 0 ? q.bytes / q.region.volume() : 1;
        const std::vector<box> boxes = n == 1 ? std::vector<box>{q.region} : slice_region(q.region, static_cast<index_t>(n));
        for (std::size_t i = 0; i < boxes.size(); ++i) pieces[i].push_back({q.tensor, q.task, boxes[i], boxes[i].volume() * element_bytes});
      }
      for (std::vector<transfer_part>& list : pieces) {
        if (list.empty()) continue;
        slice x{list.front(), {}, 0};
        x.rest.assign(list.begin() + 1, list.end());
        for (const transfer_part& q : list) x.bytes += q.bytes;
        it->second.push_back(std::move(x));
      }
      return it->second;
    };
    // A host's n receivers forward their slices (n at most), each to the n - 1 others, each naming
    // three entries a receiver: counted before any op is made (1,024 receivers: 3M words a sender).
    std::size_t words = 0;
    for (const auto& [host, receivers] : by_host)
      words += cut(receivers.size()).size() * (3 * receivers.size() + (sizeof(op) + 7) / 8);
    if (!detail::within_instance_words(0, words))
      throw instance_too_large("send_recv_allgather: one sender's forwards would hold more than " +
                               std::to_string(max_instance_words) + " words (meshcast::max_instance_words)");
    detail::room_for(out, 2 * remote.size());  // a message and an all-gather step per receiver
    for (const auto& [host, receivers] : by_host) {
      const std::vector<slice>& slices = cut(receivers.size());
      for (std::size_t i = 0; i < slices.size(); ++i) {
        const slice& x = slices[i];
        op& to = out.emplace_back(make_transfer(net, rs, x.lead.task, x.lead.region, x.bytes, sender, receivers[i]));
        to.tensor = x.lead.tensor;
        to.parts = x.rest;
        if (receivers.size() == 1) continue;
        // The receiver of slice i passes it on to the other receivers of its host.
        op gather;
        gather.kind = transfer_kind::forward;
        gather.tensor = x.lead.tensor;
        gather.task = x.lead.task;
        gather.region = x.lead.region;
        gather.bytes = x.bytes;
        gather.parts = x.rest;
        gather.sender = receivers[i];
        gather.occupy(rs.send_lane(receivers[i]), receivers[i]);
        for (index_t r : receivers) {
          if (r == receivers[i]) continue;
          gather.occupy(rs.receive_lane(r), r);
          gather.receivers.push_back(r);
        }
        // Each forward is its own messages (the executor posts them apart, and in ordered mode a
        // receiver takes them one after another): each pays the per-message latency.
        gather.latency_s = net.latency_s();
        gather.duration = gather.latency_s + static_cast<double>(x.bytes) / net.intra_bps();
        gather.after = static_cast<int>(out.size()) - 1;
        out.push_back(std::move(gather));
      }
    }
  }
};

}  // namespace meshcast

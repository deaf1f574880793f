// send_recv: one point-to-point transfer from the sender to each remote receiver.
#pragma once

#include "../strategy.hpp"

namespace meshcast {

struct send_recv {
  static constexpr std::string_view name = "send_recv";
  static constexpr bool point_to_point = true;
  static constexpr bool options_trusted = true;  // checked by the tests (strategy.hpp)

  void remote_ops(const network& net, const resource_space& rs, index_t task, const box& region, index_t bytes,
                  index_t sender, std::span<const index_t> remote, std::vector<op>& out) const {
    detail::room_for(out, remote.size());
    for (index_t r : remote) out.push_back(make_transfer(net, rs, task, region, bytes, sender, r));
  }
  /// A bundle goes whole to each receiver, as one message.
  void remote_bundle_ops(const network& net, const resource_space& rs, const payload& what, index_t sender,
                         std::span<const index_t> remote, std::vector<op>& out) const {
    detail::whole_payload_ops(*this, net, rs, what, sender, remote, out);
  }
};

}  // namespace meshcast

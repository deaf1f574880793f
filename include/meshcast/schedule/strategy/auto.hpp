// auto: the strategy chosen per task. Each unit offers, for each of its senders, what send_recv,
// send_recv_allgather and broadcast would do (distinct alternatives only), and the solver picks
// per unit whichever makes the batch finish first under its model. `solve_batch`
// (solve_batch.hpp) also solves under each single strategy and keeps the shortest, so `auto` is
// never predicted slower than the best of them.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include "../strategy.hpp"
#include "broadcast.hpp"
#include "send_recv.hpp"
#include "send_recv_allgather.hpp"

namespace meshcast {

struct auto_strategy {
  static constexpr std::string_view name = "auto";
  static constexpr bool point_to_point = false;  // its chains are not
  static constexpr bool options_trusted = true;  // checked by the tests (strategy.hpp)
  /// The strategies it chooses among, in the order their alternatives are offered.
  static constexpr std::array<std::string_view, 3> choices{send_recv::name, send_recv_allgather::name, broadcast::name};

  static constexpr std::size_t alternatives() noexcept { return choices.size(); }
  /// The ops of alternative `k` (a strategy of `choices`).
  void remote_ops_of(std::size_t k, const network& net, const resource_space& rs, index_t task, const box& region,
                     index_t bytes, index_t sender, std::span<const index_t> remote, std::vector<op>& out) const {
    if (k == 0) send_recv{}.remote_ops(net, rs, task, region, bytes, sender, remote, out);
    else if (k == 1) send_recv_allgather{}.remote_ops(net, rs, task, region, bytes, sender, remote, out);
    else broadcast{}.remote_ops(net, rs, task, region, bytes, sender, remote, out);
  }
  /// The ops of alternative `k` for a bundle.
  void remote_bundle_ops_of(std::size_t k, const network& net, const resource_space& rs, const payload& what,
                            index_t sender, std::span<const index_t> remote, std::vector<op>& out) const {
    if (k == 0) send_recv{}.remote_bundle_ops(net, rs, what, sender, remote, out);
    else if (k == 1) send_recv_allgather{}.remote_bundle_ops(net, rs, what, sender, remote, out);
    else broadcast{}.remote_bundle_ops(net, rs, what, sender, remote, out);
  }
  void remote_bundle_ops(const network& net, const resource_space& rs, const payload& what, index_t sender,
                         std::span<const index_t> remote, std::vector<op>& out) const {
    remote_bundle_ops_of(0, net, rs, what, sender, remote, out);
  }
  /// As a plain strategy (one alternative per sender): send_recv's.
  void remote_ops(const network& net, const resource_space& rs, index_t task, const box& region, index_t bytes,
                  index_t sender, std::span<const index_t> remote, std::vector<op>& out) const {
    remote_ops_of(0, net, rs, task, region, bytes, sender, remote, out);
  }
};
}  // namespace meshcast

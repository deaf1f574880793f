// Connections of the ordered model. Over a transport with one connection per pair of devices on
// different hosts (UCX over TCP), each direction's data shares the connection with the other
// direction's control messages: a rendezvous handshake, and the acknowledgement the ordered
// executor waits for after an eager message (one of up to network::eager_bytes() bytes). Both
// queue behind whatever data already travels their way. So two transfers in opposite directions
// between two devices either start together, both rendezvous (the executor posts them as one
// exchange and both handshakes go first), or one starts once the other has ended: a handshake
// posted while the other direction's data flows waits for all of it, and an eager transfer's
// acknowledgement for all data sent the other way meanwhile.
//
// The ordered engine (ordered_engine.hpp) applies this rule to every transfer that names a
// connection slot (transfer_model::connection: one slot per direction, the opposite direction's
// slot is `slot ^ 1`); `connection_map` gives transfers their slots when an instance is made for
// ordered execution over a network with eager messages.
#pragma once

#include <algorithm>
#include <map>
#include <utility>

#include "network.hpp"
#include "op.hpp"

namespace meshcast {

class connection_map {
 public:
  /// Whether the rule concerns `o`: one message from its sender to one device on another host.
  static bool concerns(const transfer& o, const network& net) {
    return (o.kind == transfer_kind::point_to_point || o.kind == transfer_kind::forward) && o.receivers.size() == 1 &&
           o.receivers[0] != o.sender && net.host_of(o.sender) != net.host_of(o.receivers[0]);
  }
  /// Gives `o` the slot of its direction and says whether it goes eagerly; a transfer the rule
  /// does not concern gets none. (A solver that cuts a transfer into pieces calls it for each.)
  void apply(op& o, const network& net) {
    o.connection = -1;
    o.eager = false;
    if (!concerns(o, net)) return;
    const index_t s = o.sender, r = o.receivers[0];
    auto [it, fresh] = pairs_.try_emplace({std::min(s, r), std::max(s, r)}, 2 * static_cast<int>(pairs_.size()));
    o.connection = it->second + (s < r ? 0 : 1);
    o.eager = o.bytes <= net.eager_bytes();
  }
  /// After `o` was cut to a piece of another size: whether it goes eagerly.
  static void resize(op& o, const network& net) { o.eager = o.connection >= 0 && o.bytes <= net.eager_bytes(); }
  /// Connection slots handed out (two per pair of devices).
  int slots() const noexcept { return 2 * static_cast<int>(pairs_.size()); }

 private:
  std::map<std::pair<index_t, index_t>, int> pairs_;  // (lower, higher device) -> its first slot
};

}  // namespace meshcast

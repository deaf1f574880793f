// Communication strategies: how one region reaches the receivers that cannot get it on their host.
//
// A strategy is a policy object (see strategy/send_recv.hpp and its siblings) with a name and a
// `remote_ops` member that appends the ops moving a region from a chosen sender to the receivers
// on other hosts, each saying what it is (its transfer_kind). Being an object, a strategy may
// carry run-time settings (a chunk size, a broadcast kind). Receivers that hold the region, or
// share a host with a device that holds it, are served the same way under every strategy (see
// `deliver_locally`).
#pragma once

#include <algorithm>
#include <concepts>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../model/network.hpp"
#include "../model/op.hpp"

namespace meshcast {

template <class S>
concept strategy = std::copy_constructible<S> &&
                   requires(const S& s, const network& net, const resource_space& rs, index_t task, const box& region,
                            index_t bytes, index_t sender, std::span<const index_t> remote, std::vector<op>& out) {
                     { S::name } -> std::convertible_to<std::string_view>;
                     /// Whether every op it makes has one sender and one receiver NIC (open_shop needs that).
                     { S::point_to_point } -> std::convertible_to<bool>;
                     // Both static: an object's member passes the lines above and breaks the library's uses.
                     requires !std::is_member_object_pointer_v<decltype(&S::name)>;
                     requires !std::is_member_object_pointer_v<decltype(&S::point_to_point)>;
                     s.remote_ops(net, rs, task, region, bytes, sender, remote, out);
                   };

/// Whether building an instance trusts S's options instead of checking them (option_check.hpp):
/// the built-in strategies say so (`static constexpr bool options_trusted = true`), since the
/// test suite checks theirs (unit.strategy_checks, through a type that hides the flag); any
/// other strategy's options are checked, and only then is the check compiled.
template <class S>
inline constexpr bool options_trusted = requires { requires static_cast<bool>(S::options_trusted); };

/// A strategy that offers several alternatives per sender (as `auto_strategy` does): alternative k of sender s
/// is `remote_ops_of(k, ...)`; make_instance offers each distinct one as an option.
template <class S>
concept strategy_with_alternatives =
    strategy<S> && requires(const S& s, const network& net, const resource_space& rs, index_t task, const box& region,
                            index_t bytes, index_t sender, std::span<const index_t> remote, std::vector<op>& out) {
      { S::alternatives() } -> std::convertible_to<std::size_t>;
      s.remote_ops_of(std::size_t{0}, net, rs, task, region, bytes, sender, remote, out);
    };

/// What a bundle moves (bundle.hpp): pieces of several tasks, of several tensors, that go from the
/// same senders to the same receivers, as one message. `pieces[0]` leads (its tensor, task and
/// region name the transfer) and the others travel after it (transfer::parts); `bytes` counts all.
struct payload {
  std::span<const transfer_part> pieces;
  index_t bytes = 0;
  /// The pieces after the first, as the ops carry them (one list every op shares); made from
  /// `pieces` where not given.
  part_list rest{};
};

/// A strategy that moves bundles: `remote_bundle_ops` appends the ops that move a whole payload,
/// each op carrying its pieces. Batches are scheduled per bundle only under such strategies.
template <class S>
concept bundling_strategy =
    strategy<S> && requires(const S& s, const network& net, const resource_space& rs, const payload& what,
                            index_t sender, std::span<const index_t> remote, std::vector<op>& out) {
      s.remote_bundle_ops(net, rs, what, sender, remote, out);
    };

namespace detail {
// Whether two alternatives do the same thing (the strategies agree on a lone remote receiver).
inline bool same_ops(const std::vector<op>& a, const std::vector<op>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].kind != b[i].kind || a[i].sender != b[i].sender || a[i].receivers != b[i].receivers ||
        a[i].bytes != b[i].bytes || !(a[i].region == b[i].region) || a[i].parts != b[i].parts)
      return false;
  return true;
}

// Makes the ops from `first` on carry a payload whose lead piece they were made for (with the
// payload's bytes): the other pieces follow as parts.
inline void carry(std::vector<op>& ops, std::size_t first, const payload& what) {
  part_list rest = what.rest;
  if (rest.size() + 1 != what.pieces.size()) rest.assign(what.pieces.begin() + 1, what.pieces.end());
  for (std::size_t i = first; i < ops.size(); ++i) {
    ops[i].tensor = what.pieces.front().tensor;
    ops[i].parts = rest;
  }
}

// Room in `ops` for `more` further ops before a strategy appends them: an op is 448 bytes of nine
// vectors, and growing one option's list op by op moved them several times (a quarter of building
// a 4096-task instance). Grows at least geometrically, so a caller appending many times stays linear.
inline void room_for(std::vector<op>& ops, std::size_t more) {
  if (ops.capacity() - ops.size() < more) ops.reserve(std::max(ops.size() + more, 2 * ops.capacity()));
}

// The ops of a strategy whose every op moves the region it is given, whole (send_recv, broadcast):
// made for the lead piece with the payload's bytes, then carrying the rest.
template <class S>
void whole_payload_ops(const S& st, const network& net, const resource_space& rs, const payload& what, index_t sender,
                       std::span<const index_t> remote, std::vector<op>& out) {
  const std::size_t first = out.size();
  const transfer_part& lead = what.pieces.front();
  st.remote_ops(net, rs, lead.task, lead.region, what.bytes, sender, remote, out);
  carry(out, first, what);
}
}  // namespace detail

/// A point-to-point transfer from `s` to `r`: a local copy, an intra-host copy, or a NIC transfer.
inline op make_transfer(const network& net, const resource_space& rs, index_t task, const box& region, index_t bytes,
                        index_t s, index_t r, transfer_kind kind = transfer_kind::point_to_point) {
  op o;
  o.kind = s == r ? transfer_kind::local_copy : kind;
  o.task = task;
  o.region = region;
  o.bytes = bytes;
  o.sender = s;
  o.receivers = {r};
  o.duration = net.transfer_time(s, r, bytes);
  o.latency_s = s == r ? 0.0 : net.latency_s();
  // A local copy holds its device whole (the executor copies before it moves on); a message
  // holds the sender's send lane and the receiver's receive lane.
  o.occupy(rs.send_lane(s), s);
  o.occupy(rs.receive_lane(r), r);
  if (net.host_of(s) != net.host_of(r)) {
    o.occupy(rs.egress(net.port_of(s)), s);
    o.occupy(rs.ingress(net.port_of(r)), r);
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

/// The same for a whole payload: each local op carries every piece.
inline std::vector<index_t> deliver_locally(const network& net, const resource_space& rs, const payload& what,
                                            std::span<const index_t> senders, std::span<const index_t> receivers,
                                            std::vector<op>& out) {
  const std::size_t first = out.size();
  const transfer_part& lead = what.pieces.front();
  std::vector<index_t> remote = deliver_locally(net, rs, lead.task, lead.region, what.bytes, senders, receivers, out);
  detail::carry(out, first, what);
  return remote;
}

}  // namespace meshcast

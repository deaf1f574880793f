// Transfers and ops. A transfer is what an executor does: it says what it is (its kind), what it
// moves and between whom. The model's view of it (resources it holds, duration, when it runs)
// lives beside it in `transfer_model`. An `op` is both, plus where it comes from in an instance:
// the form strategies write and solvers arrange.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

#include "../core/box.hpp"

namespace meshcast {

/// What a transfer is; written by the strategy that makes it, read by executors.
enum class transfer_kind : std::uint8_t {
  local_copy,       ///< the sender is the only receiver: a copy from its source tile
  point_to_point,   ///< from the sender's source tile to each receiver, one message each
  forward,          ///< like point_to_point, from what the sender received by `waits_for`
  group_broadcast,  ///< one collective broadcast from the sender to all receivers
  chain,            ///< a pipelined chain: sender -> receivers[0] -> receivers[1] -> ...
};

/// The largest piece a chain moves its bytes in; each member passes a piece on once it has it.
inline constexpr std::size_t chain_chunk_bytes = std::size_t{256} << 10;
/// The smallest piece a chain cuts a message into (unless the backend's largest is smaller):
/// below it a piece's own cost (a synchronous send's handshake, a message latency) outweighs what
/// pipelining it saves at the NIC rates meshcast models (16 KiB is 0.65 ms at 200 Mbit/s).
inline constexpr std::size_t chain_min_piece_bytes = std::size_t{16} << 10;

/// Pieces a chain cuts its message into per hop, where the clamps allow: a member holds its NIC
/// directions for the message and one piece more (strategy/broadcast.hpp), so a chain over two
/// hosts in 16 pieces costs each of them 1/16 more than the bytes alone.
inline constexpr std::size_t chain_pieces_per_hop = 8;

/// The piece a chain of `members` devices (the sender included) cuts `bytes` into: about a
/// (chain_pieces_per_hop x hops)th of the message, so that a small message still pipelines down a
/// long chain, within [smallest, largest]; a message that would make two pieces or fewer goes
/// whole (up to `largest`).
constexpr std::size_t chain_piece_bytes(std::size_t bytes, std::size_t members, std::size_t smallest,
                                        std::size_t largest) noexcept {
  if (smallest > largest) smallest = largest;
  const std::size_t hops = members > 1 ? members - 1 : 1;
  const std::size_t cuts = chain_pieces_per_hop * hops;
  std::size_t piece = bytes / cuts + (bytes % cuts != 0);
  if (piece < smallest) piece = smallest;
  if (piece > largest) piece = largest;
  // Two pieces or fewer gain nothing: the second waits behind the first on the sender's link.
  if (2 * piece >= bytes) piece = bytes < largest ? bytes : largest;
  return piece > 0 ? piece : 1;
}

/// The same within [chain_min_piece_bytes, max_piece]: the rule a backend falls back on for a
/// chain whose schedule gives no piece size (transfer::piece_bytes 0).
constexpr std::size_t chain_piece_bytes(std::size_t bytes, std::size_t members, std::size_t max_piece = chain_chunk_bytes) noexcept {
  return chain_piece_bytes(bytes, members, chain_min_piece_bytes, max_piece);
}

/// The piece the model chooses for a chain over a link of `bps` payload bytes per second with a
/// per-message latency of `latency_s`: no smaller than what crosses the link in one latency (a
/// piece then takes longer on the wire than the per-message cost that the model does not charge
/// each piece: at 400 Gbit/s and 10 us, 500 kB rather than 16 KiB) nor than
/// chain_min_piece_bytes, and no larger than chain_chunk_bytes or that floor.
inline std::size_t chain_piece_bytes(std::size_t bytes, std::size_t members, double bps, double latency_s) noexcept {
  const double floor = bps * latency_s;  // both finite and bounded (network.hpp)
  constexpr double most = double(std::size_t{1} << 30);
  const std::size_t smallest = std::max(chain_min_piece_bytes, static_cast<std::size_t>(std::min(std::round(floor), most)));
  return chain_piece_bytes(bytes, members, smallest, std::max(chain_chunk_bytes, smallest));
}

/// Most pieces a chain may be cut into (a schedule from elsewhere is checked against it).
inline constexpr std::size_t max_chain_pieces = std::size_t{1} << 20;

constexpr std::string_view to_string(transfer_kind k) noexcept {
  switch (k) {
    case transfer_kind::local_copy: return "local_copy";
    case transfer_kind::point_to_point: return "point_to_point";
    case transfer_kind::forward: return "forward";
    case transfer_kind::group_broadcast: return "group_broadcast";
    case transfer_kind::chain: return "chain";
  }
  return "?";
}

/// One transfer of a schedule: `sender` moves `region` (`bytes`) to every device in `receivers`.
/// A further piece a bucketed message carries (bucket.hpp): its tensor, task, region and bytes.
struct transfer_part {
  std::int32_t tensor = 0;
  index_t task = 0;
  box region;
  index_t bytes = 0;
  friend bool operator==(const transfer_part&, const transfer_part&) = default;
};

/// The pieces a bundle carries after its first. Every option and receiver of a bundle carries the
/// same list, so copies of a transfer share it; a change copies it first if it is shared.
class part_list {
 public:
  using value_type = transfer_part;
  using const_iterator = std::vector<transfer_part>::const_iterator;
  part_list() = default;
  part_list(std::initializer_list<transfer_part> parts) { assign(parts.begin(), parts.end()); }
  template <class It>
  void assign(It first, It last) {
    if (first == last) p_.reset();
    else p_ = std::make_shared<std::vector<transfer_part>>(first, last);
  }
  void push_back(const transfer_part& q) { own().push_back(q); }
  bool empty() const noexcept { return !p_ || p_->empty(); }
  std::size_t size() const noexcept { return p_ ? p_->size() : 0; }
  const_iterator begin() const noexcept { return p_ ? p_->cbegin() : const_iterator{}; }
  const_iterator end() const noexcept { return p_ ? p_->cend() : const_iterator{}; }
  const transfer_part& operator[](std::size_t i) const noexcept { return (*p_)[i]; }
  /// The shared list's address (null when empty): equal for the copies that share it.
  const void* identity() const noexcept { return p_.get(); }
  friend bool operator==(const part_list& a, const part_list& b) noexcept {
    return a.p_ == b.p_ || (a.empty() && b.empty()) || (a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin()));
  }

 private:
  std::vector<transfer_part>& own() {
    if (!p_) p_ = std::make_shared<std::vector<transfer_part>>();
    else if (p_.use_count() > 1) p_ = std::make_shared<std::vector<transfer_part>>(*p_);
    return *p_;
  }
  std::shared_ptr<std::vector<transfer_part>> p_;
};

struct transfer {
  transfer_kind kind = transfer_kind::point_to_point;
  std::int32_t tensor = 0;  ///< which tensor of a batch (0 for a single one)
  index_t task = 0;         ///< that tensor's plan task the region belongs to
  box region;
  index_t bytes = 0;
  index_t sender = 0;
  std::vector<index_t> receivers;
  /// Transfers (indices in the schedule) that must be complete before this one starts: the
  /// receives a forward passes on.
  std::vector<std::int32_t> waits_for;
  /// A bundle: the pieces after the first (tensor, task, region) that travel in the same message,
  /// packed one after another; `bytes` counts them all.
  part_list parts;
  /// A chain: the bytes of each piece its message is cut into, as the model chose them for the
  /// link (0: the backend's own rule, chain_piece_bytes(bytes, members)).
  index_t piece_bytes = 0;
  friend bool operator==(const transfer&, const transfer&) = default;
};

/// Resources of the ordered model, each carrying one operation at a time: the egress and the
/// ingress direction of every NIC port, then every device's two lanes. A device is full duplex:
/// it sends one transfer at a time (its send lane) while it receives one at a time (its receive
/// lane).
struct resource_space {
  int ports = 0;
  index_t devices = 0;
  constexpr int egress(int port) const noexcept { return port; }
  constexpr int ingress(int port) const noexcept { return ports + port; }
  constexpr int send_lane(index_t device) const noexcept { return 2 * ports + 2 * static_cast<int>(device); }
  constexpr int receive_lane(index_t device) const noexcept { return 2 * ports + 2 * static_cast<int>(device) + 1; }
  constexpr int size() const noexcept { return 2 * ports + 2 * static_cast<int>(devices); }
  /// NIC directions come first: resources [0, port_directions()) are ports' egress then ingress.
  constexpr int port_directions() const noexcept { return 2 * ports; }
  constexpr bool is_port(int resource) const noexcept { return resource < 2 * ports; }
  constexpr bool is_egress(int resource) const noexcept { return resource < ports; }
  constexpr bool is_ingress(int resource) const noexcept { return resource >= ports && resource < 2 * ports; }
  constexpr bool is_lane(int resource) const noexcept { return resource >= 2 * ports; }
  /// The port whose egress or ingress direction `resource` is (is_port(resource)).
  constexpr int port_of(int resource) const noexcept { return resource < ports ? resource : resource - ports; }
  /// The index of lane `resource` among all lanes (is_lane(resource)): 2 * device + (0 send, 1 receive).
  constexpr int lane_index(int resource) const noexcept { return resource - 2 * ports; }
};

/// What the network model says about a transfer.
struct transfer_model {
  std::vector<int> resources;          ///< ports and streams it occupies, see resource_space
  std::vector<index_t> holders;        ///< beside `resources`: the device that drives each one
  std::vector<index_t> egress_hosts;   ///< hosts whose NIC sends for it (chain forwarders too)
  std::vector<index_t> ingress_hosts;  ///< hosts whose NIC receives for it
  double latency_s = 0;                ///< the fixed part of `duration`
  double duration = 0;                 ///< on an otherwise idle network
  double start = 0, end = 0;           ///< when the schedule's model runs it
  /// When it holds each resource, relative to its start (beside `resources`; both empty: every
  /// one for the whole op): a pipelined chain holds a member's lanes and NIC directions only
  /// while its bytes pass that member, and its sender's only until its last piece has left.
  std::vector<double> hold_from, hold_until;
  /// Its connection's slot for its direction (the other direction: `connection ^ 1`), or -1, and
  /// whether it goes eagerly (connections.hpp).
  int connection = -1;
  bool eager = false;
  friend bool operator==(const transfer_model&, const transfer_model&) = default;

  /// Adds a resource it occupies and the device that drives it, keeping `resources` and
  /// `holders` in step (their owners hold resources whole until a strategy sets hold_from/until).
  void occupy(int resource, index_t holder) {
    resources.push_back(resource);
    holders.push_back(holder);
  }

  /// When it starts and stops holding its k-th resource (seconds after its start), and how long.
  double held_from(std::size_t k) const noexcept { return hold_from.empty() ? 0.0 : hold_from[k]; }
  double held_until(std::size_t k) const noexcept { return hold_until.empty() ? duration : hold_until[k]; }
  double held_for(std::size_t k) const noexcept { return held_until(k) - held_from(k); }
  /// Whether it holds some resource for less than the whole op.
  bool holds_briefly() const noexcept { return !hold_until.empty(); }

  bool uses_nic(const resource_space& rs) const noexcept {
    for (int r : resources)
      if (rs.is_port(r)) return true;
    return false;
  }
};

/// A transfer with its model and its place in an instance.
struct op : transfer, transfer_model {
  /// Position among the ops of its option (`after`: the one that must finish first, or -1), and
  /// where it comes from in its instance: unit, option of that unit, position in the option (-1
  /// when made outside an instance). `solve` checks a solver's answer against these.
  int after = -1;
  index_t unit = -1;
  int option = -1;
  int part = -1;
};

}  // namespace meshcast

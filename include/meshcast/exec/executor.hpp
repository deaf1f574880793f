// The generic executor: runs any schedule on one rank, in the schedule's execution mode. The
// backend is a template parameter, so every call below resolves at compile time: no virtual
// calls, no tables. Each transfer says what it is (its kind), so no strategy is needed here.
//
// The constructor keeps only this rank's part of the schedule, as a list of steps with their
// message buffers, so that `run` does what a hand-written loop would.
//
// ordered: the rank takes its steps in schedule order on two lanes, one for what it sends and one
//   for what it receives (a device is full duplex); a step starts when the previous step of each
//   of its lanes is complete. A send is complete when the receiver has the data: over
//   tag-matched transports the receiver answers with a one-byte acknowledgement each message
//   that the backend may complete before delivery (an eager send is done once its bytes are
//   buffered, a synchronous one once its first fragment matched; a rendezvous send once its data
//   has gone, so it needs none: an acknowledgement crosses the receiver's NIC, where it can queue
//   behind data). Such a send of more than 64 KiB also waits for its receiver's clearance, sent
//   when the receive step starts: eager data would otherwise flow as soon as it is sent, into a
//   NIC still busy with the transfer before it in schedule order (a rendezvous is held back by
//   its handshake). Over NCCL a send holds its stream until received. Before a step the rank waits for a token from
//   each device that used one of the step's NIC directions last (devices of one host share their NIC: tokens
//   go between devices of one host, never across a NIC where they would queue behind data), and
//   when it completes it passes tokens on. Every NIC direction and every lane then carries one
//   transfer at a time in schedule order, as the ordered model assumes. While it waits, a rank
//   completes whatever else it has posted, so tokens never wait on it. Between two devices, a
//   transfer that the model does not start with the last one the other way (connections.hpp)
//   waits for it to complete.
//   A send to a peer and a receive from the same peer that the model starts at one time (the two
//   directions of an exchange) are posted together, the rendezvous send first. Over a transport
//   with one connection per pair of devices (UCX over TCP), the handshake of a transfer travels
//   against the other direction's data: posted apart, one end's receive lets the reverse data
//   flow first, and the handshake of its own send then waits behind all of it (a transfer took
//   twice its time). Posted together, both handshakes go before either direction's data.
// concurrent: every step is posted at once, a forward when the receives it passes on are complete
//   (over NCCL, whose calls go in one order on every rank, steps are posted in list order).
// Every transfer a rank waits for comes earlier in the schedule, so no cycle of waits can form in
// either mode.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <thread>
#include <string>
#include <utility>
#include <vector>

#include "../backend.hpp"
#include "../plan.hpp"
#include "../schedule.hpp"
#include "../error.hpp"
#include "pack.hpp"
#include "staging_arena.hpp"

namespace meshcast {

/// Data messages of transfer i use tag `i % transfer_tags`; ordered-mode tokens use
/// `transfer_tags + i % transfer_tags`, ordered-mode acknowledgements `2 * transfer_tags + i %
/// transfer_tags` and clearances `3 * transfer_tags + i % transfer_tags` (messages of one tag
/// between one pair match in posting order).
inline constexpr int transfer_tags = 32768;

/// Whether a backend passes ordered-mode NIC tokens between devices (the default). A backend whose
/// sends block its stream until matched (NCCL) declares `static constexpr bool port_tokens =
/// false`: there, a token would hold back the sender's next transfer, so ordered mode keeps each
/// device's transfers in order and lets devices that share a NIC share it.
template <class B>
constexpr bool passes_port_tokens() {
  if constexpr (requires { B::port_tokens; }) return B::port_tokens;
  else return true;
}

/// Devices the plans of a batch use together.
inline index_t device_count(std::span<const plan> plans) noexcept {
  index_t n = 0;
  for (const plan& p : plans) n = std::max(n, p.device_count);
  return n;
}

/// Throws when `s` does not fit `plans` (one per tensor): devices, regions and byte counts,
/// kinds and dependencies. A schedule from elsewhere (another rank, a file) is checked, not trusted.
inline void check_schedule_fits(std::span<const plan> plans, const schedule& s) {
  auto bad = [](std::size_t i, const std::string& why) {
    throw error("transfer " + std::to_string(i) + " of the schedule " + why + "; was it made for another plan?");
  };
  if (!s.model.empty() && s.model.size() != s.transfers.size()) throw error("the schedule's model does not match its transfers");
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer& t = s.transfers[i];
    if (t.tensor < 0 || static_cast<std::size_t>(t.tensor) >= plans.size()) bad(i, "names a tensor the batch does not have");
    const plan& p = plans[static_cast<std::size_t>(t.tensor)];
    const box whole = p.src.whole();
    if (t.sender < 0 || t.sender >= p.device_count) bad(i, "names a sender that is not a device of the plan");
    if (t.receivers.empty()) bad(i, "has no receiver");
    for (index_t r : t.receivers)
      if (r < 0 || r >= p.device_count) bad(i, "names a receiver that is not a device of the plan");
    if (t.region.rank != whole.rank || !whole.contains(t.region) || t.region.empty()) bad(i, "moves a region outside the tensor");
    if (t.parts.empty() && t.bytes != t.region.volume() * p.element_bytes) bad(i, "has a byte count that does not match its region");
    if (t.task < 0 || t.task >= static_cast<index_t>(p.tasks.size()) || !p.tasks[static_cast<std::size_t>(t.task)].region.contains(t.region))
      bad(i, "moves a region outside its task");
    if (t.kind == transfer_kind::local_copy && (t.receivers.size() != 1 || t.receivers[0] != t.sender))
      bad(i, "is a local copy between two devices");
    if (t.kind != transfer_kind::local_copy &&
        std::find(t.receivers.begin(), t.receivers.end(), t.sender) != t.receivers.end())
      bad(i, "sends to its own sender");
    for (std::int32_t w : t.waits_for)
      if (w < 0 || static_cast<std::size_t>(w) >= i) bad(i, "waits for a transfer that does not come before it");
    if (!s.model.empty() && s.model[i].holders.size() != s.model[i].resources.size())
      bad(i, "has a model whose resources and holders differ in number");
    if (t.piece_bytes < 0 || (t.piece_bytes > 0 && t.kind != transfer_kind::chain)) bad(i, "has a piece size but is no chain");
    if (t.piece_bytes > 0 && static_cast<std::size_t>(t.bytes / t.piece_bytes) >= max_chain_pieces)
      bad(i, "cuts its chain into more than " + std::to_string(max_chain_pieces) + " pieces");
    if (t.parts.empty()) continue;
    index_t sum = t.region.volume() * p.element_bytes;
    for (const transfer_part& q : t.parts) {
      if (q.tensor < 0 || static_cast<std::size_t>(q.tensor) >= plans.size()) bad(i, "bundles a tensor the batch does not have");
      const plan& pq = plans[static_cast<std::size_t>(q.tensor)];
      const box w = pq.src.whole();
      for (index_t r : t.receivers)
        if (t.sender >= pq.device_count || r >= pq.device_count) bad(i, "bundles a piece of a tensor its devices do not hold");
      if (q.region.rank != w.rank || !w.contains(q.region) || q.region.empty()) bad(i, "bundles a region outside its tensor");
      if (q.bytes != q.region.volume() * pq.element_bytes) bad(i, "bundles a piece whose byte count does not match its region");
      if (q.task < 0 || q.task >= static_cast<index_t>(pq.tasks.size()) || !pq.tasks[static_cast<std::size_t>(q.task)].region.contains(q.region))
        bad(i, "bundles a region outside its task");
      if (__builtin_add_overflow(sum, q.bytes, &sum)) bad(i, "bundles more bytes than 64 bits count");
    }
    if (sum != t.bytes) bad(i, "has a byte count that is not the sum of its pieces");
  }
}
inline void check_schedule_fits(const plan& p, const schedule& s) { check_schedule_fits(std::span<const plan>(&p, 1), s); }

template <backend Backend>
class executor {
 public:
  /// `s` is the schedule, the same on every rank. The executor keeps its own copy of the backend
  /// (a handle: communicator, stream), so it never refers to a temporary. Throws
  /// `meshcast::error` when the communicator has fewer ranks than the plan has devices or the
  /// schedule does not fit the plan.
  /// `max_staging_bytes` caps the message buffers this rank holds at once (0: no cap); see
  /// `plan_staging`.
  executor(Backend b, const plan& p, const schedule& s, std::size_t max_staging_bytes = 0)
      : executor(std::move(b), std::span<const plan>(&p, 1), s, max_staging_bytes) {}

  /// A batch: `plans[k]` is the plan of tensor k; the schedule's transfers name their tensor.
  executor(Backend b, std::span<const plan> plans, const schedule& s, std::size_t max_staging_bytes = 0)
      : b_(std::move(b)), mode_(s.mode) {
    me_ = b_.device();
    if (plans.empty()) throw error("an executor needs at least one plan");
    const index_t devices = device_count(plans);
    if (b_.size() < devices)
      throw error("the plan uses " + std::to_string(devices) + " devices but the communicator has " +
                  std::to_string(b_.size()) + " ranks; run one rank per device");
    check_schedule_fits(plans, s);
    for (const plan& p : plans) {
      tensor_state t;
      t.eb = static_cast<std::size_t>(p.element_bytes);
      t.src_tile = p.source_tile(me_);
      t.dst_tile = p.destination_tile(me_);
      const bool is_src = std::find(p.src_devices.begin(), p.src_devices.end(), me_) != p.src_devices.end();
      const bool is_dst = std::find(p.dst_devices.begin(), p.dst_devices.end(), me_) != p.dst_devices.end();
      t.source_bytes = is_src ? tile_bytes(t.src_tile, t.eb) : 0;
      t.destination_bytes = is_dst ? tile_bytes(t.dst_tile, t.eb) : 0;
      if (!is_src) t.src_tile = box{t.src_tile.rank, {}};  // holds nothing
      tensors_.push_back(t);
    }
    make_groups(s);
    plan_steps(s, plans);
    if (mode_ == execution::ordered) plan_lanes(s);
    plan_staging(max_staging_bytes);
    if (mode_ == execution::ordered && !s.model.empty() && passes_port_tokens<Backend>()) plan_tokens(s);
    if (mode_ == execution::ordered && !s.model.empty()) plan_exchanges(s);
    if (acknowledged()) plan_acknowledgements();
  }

  /// What one step of the last run did, in seconds from the start of `run` (kept only after
  /// `record_times(true)`): waiting for tokens from `wait`, moving bytes from `start` to `end`.
  struct step_time {
    std::size_t transfer;
    double wait, start, end;
  };
  void record_times(bool on) { record_ = on; }
  const std::vector<step_time>& times() const noexcept { return times_; }
  /// When the last run started, on this process's steady clock (seconds since its epoch): ranks
  /// that share a machine, and so that clock, line their times up by it.
  double run_began_s() const noexcept { return std::chrono::duration<double>(began_.time_since_epoch()).count(); }

  /// Bytes this rank's source and destination shards of tensor `k` must have (row-major over
  /// their tiles).
  std::size_t source_bytes(std::size_t k = 0) const noexcept { return tensors_[k].source_bytes; }
  std::size_t destination_bytes(std::size_t k = 0) const noexcept { return tensors_[k].destination_bytes; }
  std::size_t tensors() const noexcept { return tensors_.size(); }
  execution mode() const noexcept { return mode_; }
  /// Bytes of message buffers this rank holds (packing, receiving, forwarding), beyond its shards:
  /// one block, allocated at construction and never above the staging cap.
  std::size_t staging_bytes() const noexcept { return arena_.capacity(); }
  /// Whether the cap binds here: the steps' buffers then share the block as they run.
  bool staging_shared() const noexcept { return shared_staging_; }

  /// Reshards: reads `source` (never written), fills `destination`. May be called repeatedly.
  void run(std::span<const std::byte> source, std::span<std::byte> destination) {
    run(std::span<const std::span<const std::byte>>(&source, 1), std::span<const std::span<std::byte>>(&destination, 1));
  }
  /// Reshards a batch: `sources[k]` and `destinations[k]` are this rank's shards of tensor k.
  void run(std::span<const std::span<const std::byte>> sources, std::span<const std::span<std::byte>> destinations) {
    if (sources.size() != tensors_.size() || destinations.size() != tensors_.size())
      throw error("device " + std::to_string(me_) + ": " + std::to_string(sources.size()) + " source and " +
                  std::to_string(destinations.size()) + " destination shards for a batch of " +
                  std::to_string(tensors_.size()) + " tensors");
    for (std::size_t k = 0; k < tensors_.size(); ++k) {
      tensor_state& t = tensors_[k];
      if (sources[k].size() < t.source_bytes || destinations[k].size() < t.destination_bytes)
        throw error("device " + std::to_string(me_) + ": shard buffers of " + std::to_string(sources[k].size()) + " and " +
                    std::to_string(destinations[k].size()) + " bytes are smaller than its tiles (" +
                    std::to_string(t.source_bytes) + " and " + std::to_string(t.destination_bytes) + " bytes)" +
                    (tensors_.size() > 1 ? " of tensor " + std::to_string(k) : std::string()));
      t.src = sources[k].data();
      t.dst = destinations[k].data();
    }
    began_ = std::chrono::steady_clock::now();
    times_.clear();
    if (record_) times_.resize(steps_.size());
    tokens_sent_.clear();
    reset_staging();
    if (mode_ == execution::ordered) {
      if constexpr (passes_port_tokens<Backend>()) run_ordered();
      else run_ordered_in_rounds();
    }
    else run_concurrent();
    for (auto& r : tokens_sent_) b_.wait(r);
    b_.flush();
    if (record_)  // sends end here at the latest
      for (std::size_t k = 0; k < steps_.size(); ++k)
        if (times_[k].end == 0) times_[k].end = clock();
  }

 private:
  static constexpr std::size_t none = static_cast<std::size_t>(-1);
  using request = typename Backend::request;
  struct step {
    enum kind_t { copy, send, receive, collective } how;
    std::size_t transfer = 0;
    std::size_t tensor = 0;
    transfer_kind what = transfer_kind::point_to_point;
    box region;
    std::size_t bytes = 0;
    bool from_source = true;            // send / collective root: the region is in my source tile
    std::size_t from_buffer = none;     // send: pass on the buffer of this receive step as it is
    std::vector<std::size_t> needs;     // send: my receive steps that must be complete first
    std::vector<index_t> peers;         // send: receivers; receive: the sender
    bool root = false;                  // collective: I hold the data
    int tag = 0;
    std::size_t group = none;
    std::size_t staged = 0;     // bytes of message buffer it needs (0: none)
    std::vector<transfer_part> parts;  // a bundle: every piece, the first included, in message order
    std::size_t piece = 0;             // a chain: the size of its pieces (0: the backend's rule)
    std::vector<std::size_t> part_at;  // a bundle sent or received in place: each piece's offset in its shard
    std::size_t buffer = none;  // offset of its buffer in the staging block, once it has one
    std::size_t direct = none;  // byte offset of a contiguous region in the shard it is sent from or received into
    std::vector<std::pair<index_t, int>> tokens_in, tokens_out;  // ordered mode
    bool send_lane = false, receive_lane = false;  // ordered mode: the lanes it holds
    std::size_t prev_send = none, prev_receive = none;  // the steps before it on those lanes
    std::size_t next_send = none, next_receive = none;  // the steps after it on those lanes
    std::size_t partner = none;  // ordered mode: the other direction of an exchange, posted with it
    std::size_t after_other = none;  // ordered mode: the step the other way on its connection it follows
    double latest_dependency = -1;  // ordered mode: the latest model start of what it waits on (-1: none)
    std::size_t token_slot = 0;                          // its first token byte
    std::size_t ack_slot = 0;                            // send: its first acknowledgement byte
    std::vector<request> clear_reqs;  // acknowledged send: its receivers' clearances (data waits for them)
    bool data_sent = false;
    std::vector<request> token_reqs;
    double model_start = 0;  // when the ordered model starts it (rounds for stream backends)
    request req{};
    std::vector<request> reqs;         // send: its messages (and, ordered, their acknowledgements)
    bool posted = false, done = false;
  };

  void make_groups(const schedule& s) {
    std::map<std::vector<index_t>, std::size_t> index;
    for (std::size_t i = 0; i < s.transfers.size(); ++i) {
      const transfer& t = s.transfers[i];
      if (t.kind != transfer_kind::group_broadcast && t.kind != transfer_kind::chain) continue;
      std::vector<index_t> members = t.receivers;
      if (t.kind == transfer_kind::group_broadcast) std::sort(members.begin(), members.end());
      members.insert(members.begin(), t.sender);
      auto [it, fresh] = index.try_emplace(members, groups_.size());
      if (fresh) {
        const bool mine = std::find(members.begin(), members.end(), me_) != members.end();
        groups_.push_back(mine ? std::optional<typename Backend::group>(
                                     b_.make_group(members, static_cast<int>(it->second % transfer_tags)))
                               : std::nullopt);
      }
      group_of_[i] = it->second;
    }
  }

  void plan_steps(const schedule& s, std::span<const plan> plans) {
    std::map<std::size_t, std::size_t> my_receive;  // transfer -> my receive step
    for (std::size_t i = 0; i < s.transfers.size(); ++i) {
      const transfer& t = s.transfers[i];
      const bool sending = t.sender == me_;
      const bool receiving = std::find(t.receivers.begin(), t.receivers.end(), me_) != t.receivers.end();
      if (!sending && !receiving) continue;
      step x{};
      x.transfer = i;
      x.model_start = s.model.empty() ? static_cast<double>(i) : s.model[i].start;
      x.what = t.kind;
      x.region = t.region;
      x.tensor = static_cast<std::size_t>(t.tensor);
      const tensor_state& ts = tensors_[x.tensor];
      x.bytes = tile_bytes(t.region, ts.eb);
      x.tag = static_cast<int>(i % transfer_tags);
      x.piece = static_cast<std::size_t>(t.piece_bytes);
      const std::string who = "device " + std::to_string(me_);
      if (!t.parts.empty()) {  // a bundle: packed and unpacked piece by piece, through a buffer
        x.parts.push_back({t.tensor, t.task, t.region, t.region.volume() * static_cast<index_t>(ts.eb)});
        x.parts.insert(x.parts.end(), t.parts.begin(), t.parts.end());
        x.bytes = static_cast<std::size_t>(t.bytes);
        x.from_source = t.kind != transfer_kind::forward;  // a forward passes on what it received
        for (const transfer_part& q : x.parts) {
          const tensor_state& tq = tensors_[static_cast<std::size_t>(q.tensor)];
          const bool in_dst = tq.destination_bytes > 0 && tq.dst_tile.contains(q.region);
          if (sending && x.from_source && !tq.src_tile.contains(q.region)) throw error(who + " sends a region it does not hold");
          if ((receiving || !x.from_source) && !in_dst) throw error(who + " receives a region outside its destination tile");
        }
        if (t.kind == transfer_kind::local_copy) {
          x.how = step::copy;
        } else if (t.kind == transfer_kind::chain || t.kind == transfer_kind::group_broadcast) {
          x.how = step::collective;
          x.group = group_of_.at(i);
          x.root = sending;
          x.staged = x.bytes;
        } else if (sending) {
          x.how = step::send;
          x.peers = t.receivers;
          x.staged = x.bytes;
          for (std::int32_t w : t.waits_for) {  // a forward: the receives it passes on
            auto it = my_receive.find(static_cast<std::size_t>(w));
            if (it == my_receive.end()) throw error(who + " forwards transfer " + std::to_string(w) + ", which it does not receive");
            x.needs.push_back(it->second);
          }
          if (in_place(plans, t)) x.part_at = offsets_in(x.parts, x.from_source), x.staged = 0;
          else if (x.needs.size() == 1 && steps_[x.needs[0]].parts == x.parts && steps_[x.needs[0]].staged)
            x.from_buffer = x.needs[0], x.staged = 0;
        } else {
          x.how = step::receive;
          x.peers = {t.sender};
          if (in_place(plans, t)) x.part_at = offsets_in(x.parts, false), x.staged = 0;
          else x.staged = x.bytes;
          my_receive[i] = steps_.size();
        }
        step_of_[i] = steps_.size();
        steps_.push_back(std::move(x));
        continue;
      }
      if (t.kind == transfer_kind::local_copy) {
        if (!ts.src_tile.contains(t.region)) throw error(who + " copies a region it does not hold");
        x.how = step::copy;
      } else if (t.kind == transfer_kind::group_broadcast || t.kind == transfer_kind::chain) {
        x.how = step::collective;
        x.group = group_of_.at(i);
        x.root = sending;
        if (sending && !ts.src_tile.contains(t.region)) throw error(who + " broadcasts a region it does not hold");
        x.direct = sending ? detail::contiguous_offset(ts.src_tile, t.region, ts.eb)
                           : ts.destination_bytes > 0 ? detail::contiguous_offset(ts.dst_tile, t.region, ts.eb) : none;
        if (x.direct == none) x.staged = x.bytes;
      } else if (sending) {
        x.how = step::send;
        x.peers = t.receivers;
        if (t.kind == transfer_kind::point_to_point) {
          if (!ts.src_tile.contains(t.region)) throw error(who + " sends a region it does not hold");
        } else {  // forward: what arrived by the transfers it waits for
          x.from_source = false;
          for (std::int32_t w : t.waits_for) {
            auto it = my_receive.find(static_cast<std::size_t>(w));
            if (it == my_receive.end()) throw error(who + " forwards transfer " + std::to_string(w) + ", which it does not receive");
            x.needs.push_back(it->second);
          }
          if (x.needs.size() == 1 && steps_[x.needs[0]].region == t.region && steps_[x.needs[0]].parts.empty()) {
            if (steps_[x.needs[0]].staged) x.from_buffer = x.needs[0];
            else x.direct = steps_[x.needs[0]].direct;  // received into the shard: sent from there
          } else if (!ts.dst_tile.contains(t.region)) {
            throw error(who + " forwards a region outside its destination tile");
          }
        }
        if (x.from_buffer == none && x.direct == none)
          x.direct = detail::contiguous_offset(x.from_source ? ts.src_tile : ts.dst_tile, t.region, ts.eb);
        if (x.from_buffer == none && x.direct == none) x.staged = x.bytes;
      } else {
        x.how = step::receive;
        x.peers = {t.sender};
        if (ts.destination_bytes > 0) x.direct = detail::contiguous_offset(ts.dst_tile, t.region, ts.eb);
        if (x.direct == none) x.staged = x.bytes;
        my_receive[i] = steps_.size();
      }
      step_of_[i] = steps_.size();
      steps_.push_back(std::move(x));
    }
    tokens_sent_.reserve(steps_.size());
  }

  // A bundle sent point to point whose every piece is contiguous in the sender's shard (its source
  // shard, or for a forward its destination shard) and in each receiver's destination shard goes
  // as one message per piece, from and into the shards: no message buffer. Its messages leave back
  // to back, so they pay about one latency, as the model charges the bundle. Every rank decides
  // alike from the plans, so both ends of a message agree on its pieces.
  static bool in_place(std::span<const plan> plans, const transfer& t) {
    if (t.parts.empty() || (t.kind != transfer_kind::point_to_point && t.kind != transfer_kind::forward)) return false;
    auto fits = [&](const transfer_part& q) {
      const plan& p = plans[static_cast<std::size_t>(q.tensor)];
      const auto eb = static_cast<std::size_t>(p.element_bytes);
      const box from = t.kind == transfer_kind::forward ? p.destination_tile(t.sender) : p.source_tile(t.sender);
      if (detail::contiguous_offset(from, q.region, eb) == none) return false;
      for (index_t r : t.receivers)
        if (detail::contiguous_offset(p.destination_tile(r), q.region, eb) == none) return false;
      return true;
    };
    if (!fits({t.tensor, t.task, t.region, 0})) return false;
    for (const transfer_part& q : t.parts)
      if (!fits(q)) return false;
    return true;
  }
  // Each piece's offset in this rank's source (or destination) shard; in_place said they fit.
  std::vector<std::size_t> offsets_in(const std::vector<transfer_part>& parts, bool source) const {
    std::vector<std::size_t> at;
    for (const transfer_part& q : parts) {
      const tensor_state& tq = tensors_[static_cast<std::size_t>(q.tensor)];
      at.push_back(detail::contiguous_offset(source ? tq.src_tile : tq.dst_tile, q.region, tq.eb));
    }
    return at;
  }

  // Message buffers under the staging cap `cap` (0: none). Where every step's buffer fits in the
  // cap together, each keeps its own piece of the block for good (a repeated run allocates
  // nothing). Otherwise the cap binds, a forward packs what it passes on from the destination
  // shard (so a receive's buffer is free once unpacked), and
  // - ordered mode: a lane carries one step at a time, so a rank needs two buffers at once at most,
  //   one per lane. Each lane gets one slot, as large as its largest step; plans cut to half the
  //   cap (cut_for_staging) make both fit, and the run waits for nothing the model does not know.
  // - concurrent mode: steps take their buffers from the block in list order as room allows and
  //   give them back when complete. The earliest unfinished transfer of the schedule then always
  //   finds room at both ends: every earlier one gave its buffer back, no later one took one first.
  void plan_staging(std::size_t cap) {
    std::size_t total = 0;
    for (const step& x : steps_)
      if (__builtin_add_overflow(total, x.staged, &total)) throw error("the message buffers of one rank overflow 64 bits");
    if (cap == 0 || total <= cap) {
      std::size_t at = 0;
      for (step& x : steps_)
        if (x.staged) x.buffer = at, at += x.staged;
      arena_ = detail::staging_arena(total);
    } else {
      const std::string who = "device " + std::to_string(me_);
      for (step& x : steps_) {
        if (x.from_buffer == none) continue;
        const tensor_state& t = tensors_[x.tensor];
        if (t.destination_bytes == 0 || !t.dst_tile.contains(x.region))
          throw error(who + " forwards a region it does not keep, which a staging cap cannot bound");
        x.from_buffer = none;
        x.direct = x.parts.empty() ? detail::contiguous_offset(t.dst_tile, x.region, t.eb) : none;
        if (x.direct == none) x.staged = x.bytes;
      }
      std::size_t largest[2] = {0, 0};  // ordered: the send lane's slot, the receive lane's
      for (const step& x : steps_) {
        std::size_t& slot = mode_ == execution::ordered && !x.send_lane ? largest[1] : largest[0];
        slot = std::max(slot, x.staged);
      }
      const std::size_t need = mode_ == execution::ordered ? largest[0] + largest[1] : largest[0];
      if (need > cap)
        throw error(who + " needs " + std::to_string(need) + " bytes of message buffers at once (" +
                    (mode_ == execution::ordered ? "a send of " + std::to_string(largest[0]) + " bytes while it receives " +
                                                       std::to_string(largest[1])
                                                 : "its largest message") +
                    ") but the staging cap is " + std::to_string(cap) +
                    " bytes: cut the plans to the cap first (cut_for_staging)");
      if (mode_ == execution::ordered && passes_port_tokens<Backend>()) {
        for (step& x : steps_)
          if (x.staged) x.buffer = x.send_lane ? 0 : largest[0];
        arena_ = detail::staging_arena(need);
      } else if (mode_ == execution::ordered) {  // in rounds: a round takes its buffers when it starts
        arena_ = detail::staging_arena(need);
        shared_staging_ = true;
      } else {
        arena_ = detail::staging_arena(cap);
        arena_.reserve(steps_.size());
        shared_staging_ = true;
      }
    }
    if (arena_.capacity() > 0) block_ = b_.memory().allocate(arena_.capacity());
  }
  // Shared staging: the steps from next_to_take_ on take their buffers, in list order, while the
  // block has room.
  void take_buffers() {
    for (; next_to_take_ < steps_.size(); ++next_to_take_) {
      step& x = steps_[next_to_take_];
      if (!x.staged) continue;
      const auto at = arena_.take(x.staged);
      if (!at) return;
      x.buffer = *at;
    }
  }
  bool has_buffer(const step& x) const noexcept { return !shared_staging_ || !x.staged || x.buffer != none; }
  void release(step& x) {
    if (shared_staging_ && x.staged && x.buffer != none) arena_.give(x.buffer), x.buffer = none;
  }
  void reset_staging() {
    if (!shared_staging_) return;
    arena_.clear();
    next_to_take_ = 0;
    for (step& x : steps_) x.buffer = none;
  }

  // Ordered mode: each step's lanes and the step before it on each.
  void plan_lanes(const schedule& s) {
    std::size_t last_send = none, last_receive = none;
    for (std::size_t k = 0; k < steps_.size(); ++k) {
      step& x = steps_[k];
      const transfer& t = s.transfers[x.transfer];
      switch (x.how) {
        case step::copy: x.send_lane = x.receive_lane = true; break;
        case step::send: x.send_lane = true; break;
        case step::receive: x.receive_lane = true; break;
        case step::collective:
          x.send_lane = x.root || (t.kind == transfer_kind::chain && t.receivers.back() != me_);
          x.receive_lane = !x.root;
          break;
      }
      if (x.send_lane) {
        x.prev_send = last_send;
        (last_send == none ? first_send_ : steps_[last_send].next_send) = k;
        last_send = k;
      }
      if (x.receive_lane) {
        x.prev_receive = last_receive;
        (last_receive == none ? first_receive_ : steps_[last_receive].next_receive) = k;
        last_receive = k;
      }
    }
  }

  // Ordered mode: pairs a send to one peer with the receive from that peer that the model starts
  // at the same time (exactly: one model time, on every rank). Posting one waits until the other
  // may start too. They are paired only where everything either waits on (the steps before it on
  // its lanes, the receives it passes on, the transfers whose tokens it takes) starts earlier in
  // the model: then every wait points to an earlier model time, or to the partner at the same
  // time that itself waits only on earlier ones, and no cycle of waits can form. That holds where
  // the model's times follow the schedule's order (as `simulate` sets them); a schedule whose
  // times do not (one read from elsewhere) is run without pairing.
  static bool times_follow_order(const schedule& s) {
    std::map<int, double> free;  // resource -> end of its last transfer
    for (std::size_t i = 0; i < s.transfers.size(); ++i) {
      const transfer_model& m = s.model[i];
      if (!(m.end > m.start)) return false;
      for (std::int32_t w : s.transfers[i].waits_for)
        if (m.start < s.model[static_cast<std::size_t>(w)].end) return false;
      for (std::size_t k = 0; k < m.resources.size(); ++k) {
        const double until = m.start + m.held_until(k);
        auto [it, fresh] = free.try_emplace(m.resources[k], until);
        if (!fresh && m.start + m.held_from(k) < std::exchange(it->second, until)) return false;
      }
    }
    return true;
  }
  void plan_exchanges(const schedule& s) {
    // The connection rule (connections.hpp): a transfer that the model does not start with the
    // last one the other way between the same two devices starts once that one is complete
    // here (both ends keep this order; the receiver of an eager transfer then sends its
    // acknowledgement before its own data the other way).
    std::map<int, std::size_t> last_on;  // connection slot -> my last step on it
    for (std::size_t k = 0; k < steps_.size(); ++k) {
      step& x = steps_[k];
      const int slot = s.model[x.transfer].connection;
      if (slot < 0 || (x.how != step::send && x.how != step::receive)) continue;
      auto other = last_on.find(slot ^ 1);
      if (other != last_on.end() && steps_[other->second].model_start != x.model_start) x.after_other = other->second;
      last_on[slot] = k;
    }
    if (!times_follow_order(s)) return;
    // When each step takes its first lane or NIC direction in the model: a chain's member does
    // when the bytes reach it (transfer_model::held_from), after the chain's start. Every wait
    // points to a step that takes its resources earlier by this time.
    std::vector<double> takes(steps_.size());
    for (std::size_t k = 0; k < steps_.size(); ++k) {
      const transfer_model& m = s.model[steps_[k].transfer];
      double from = m.duration;
      for (std::size_t q = 0; q < m.resources.size(); ++q)
        if (m.holders[q] == me_) from = std::min(from, m.held_from(q));
      takes[k] = m.start + (from < m.duration ? from : 0.0);
    }
    for (step& x : steps_) {
      auto after = [&](std::size_t k) {
        if (k != none) x.latest_dependency = std::max(x.latest_dependency, takes[k]);
      };
      after(x.prev_send);
      after(x.prev_receive);
      after(x.after_other);
      for (std::size_t n : x.needs) after(n);
    }
    std::map<std::pair<index_t, double>, std::size_t> receive_at;  // (peer, model start) -> receive step
    for (std::size_t k = 0; k < steps_.size(); ++k)
      if (steps_[k].how == step::receive) receive_at.emplace(std::pair{steps_[k].peers[0], steps_[k].model_start}, k);
    for (std::size_t k = 0; k < steps_.size(); ++k) {
      step& x = steps_[k];
      if (x.how != step::send || x.peers.size() != 1) continue;
      auto it = receive_at.find({x.peers[0], x.model_start});
      if (it == receive_at.end()) continue;
      step& y = steps_[it->second];
      if (y.partner != none || !(x.latest_dependency < x.model_start) || !(y.latest_dependency < y.model_start)) continue;
      x.partner = it->second;
      y.partner = k;
    }
  }

  // Ordered mode: who passes each NIC direction (or any other resource two devices share) on to
  // whom, in schedule order.
  void plan_tokens(const schedule& s) {
    std::map<int, std::pair<std::size_t, index_t>> last;  // resource -> (transfer, holder)
    for (std::size_t i = 0; i < s.transfers.size(); ++i) {
      const transfer_model& m = s.model[i];
      for (std::size_t k = 0; k < m.resources.size(); ++k) {
        const int r = m.resources[k];
        const index_t holder = m.holders[k];
        auto it = last.find(r);
        if (it != last.end() && it->second.second != holder) {
          const auto [before, from] = it->second;
          const int tag = transfer_tags + static_cast<int>(before % transfer_tags);
          if (holder == me_) {
            step& x = steps_[step_of_.at(i)];
            add_token(x.tokens_in, from, tag);
            x.latest_dependency = std::max(x.latest_dependency, s.model[before].start);
          }
          if (from == me_) add_token(steps_[step_of_.at(before)].tokens_out, holder, tag);
        }
        last[r] = {i, holder};
      }
    }
    std::size_t slots = 0;
    for (step& x : steps_) x.token_slot = slots, slots += x.tokens_in.size();
    scratch_ = b_.memory().allocate(1 + slots);  // one byte to send from, one per token received
  }
  // Ordered mode over tag-matched transports: a send that the backend may complete before
  // delivery waits for its receivers' acknowledgements (both ends decide alike: same size).
  bool acknowledged() const noexcept { return mode_ == execution::ordered && passes_port_tokens<Backend>(); }
  bool acknowledged(const step& x) const noexcept {
    if (!acknowledged()) return false;
    if constexpr (requires(const Backend& b) {
                    { b.send_completes_early(std::size_t{}) } -> std::convertible_to<bool>;
                  })
      return b_.send_completes_early(smallest_message(x));
    else return true;
  }
  // The smallest message a step sends (a bundle in place sends one per piece).
  static std::size_t smallest_message(const step& x) noexcept {
    std::size_t least = x.bytes;
    for (std::size_t k = 0; k < x.part_at.size(); ++k) least = std::min(least, static_cast<std::size_t>(x.parts[k].bytes));
    return least;
  }
  void plan_acknowledgements() {
    std::size_t slots = 0;
    for (step& x : steps_)
      if (x.how == step::send) x.ack_slot = slots, slots += x.peers.size();
    acks_ = b_.memory().allocate(1 + slots);    // one byte to send from, one per acknowledgement received
    clears_ = b_.memory().allocate(1 + slots);  // the same for clearances
  }
  static int ack_tag(const step& x) noexcept { return 2 * transfer_tags + x.tag; }
  static int clear_tag(const step& x) noexcept { return 3 * transfer_tags + x.tag; }
  // An acknowledged message longer than this waits for its receiver's clearance (shorter ones
  // would hardly share a NIC, and would pay a round trip each).
  static constexpr std::size_t cleared_above = std::size_t{64} << 10;
  bool cleared(const step& x) const noexcept { return x.bytes > cleared_above && acknowledged(x); }
  static void add_token(std::vector<std::pair<index_t, int>>& list, index_t device, int tag) {
    if (std::find(list.begin(), list.end(), std::pair{device, tag}) == list.end()) list.push_back({device, tag});
  }

  std::byte* buffer(std::size_t offset) { return block_->data() + offset; }
  double clock() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count(); }
  void mark(step& x, double step_time::*field) {
    if (!record_) return;
    step_time& t = times_[static_cast<std::size_t>(&x - steps_.data())];
    t.transfer = x.transfer;
    t.*field = clock();
  }

  std::byte* token() { return scratch_->data(); }
  std::byte* token_in(std::size_t slot) { return scratch_->data() + 1 + slot; }

  // Ordered mode: whether a posted step is complete, without blocking.
  bool completed(step& x) {
    switch (x.how) {
      case step::copy: return true;
      case step::receive:
        if (!x.part_at.empty()) {
          for (request& r : x.reqs)
            if (!b_.test(r)) return false;
          return true;
        }
        return b_.test(x.req);
      case step::send:
        if (!x.data_sent) {
          for (request& r : x.clear_reqs)
            if (!b_.test(r)) return false;
          b_.begin_round();
          send_data(x);
          b_.end_round();
          return false;
        }
        for (request& r : x.reqs)
          if (!b_.test(r)) return false;
        return true;
      case step::collective: return b_.test(x.req);
    }
    return true;
  }
  // Ordered mode: a step is complete: unpack, pass the NIC tokens on.
  void finish(step& x) {
    x.done = true;
    mark(x, &step_time::end);
    const tensor_state& t = tensors_[x.tensor];
    if (!x.parts.empty() && x.part_at.empty() && (x.how == step::receive || (x.how == step::collective && !x.root))) {
      const std::byte* in = buffer(x.buffer);
      for (const transfer_part& q : x.parts) {
        const tensor_state& tq = tensors_[static_cast<std::size_t>(q.tensor)];
        unpack(b_.memory(), in, tq.dst_tile, tq.dst, q.region, tq.eb);
        in += q.bytes;
      }
    } else if (x.parts.empty() && (x.how == step::receive || (x.how == step::collective && !x.root)) && t.destination_bytes > 0 &&
               x.direct == none)
      unpack(b_.memory(), buffer(x.buffer), t.dst_tile, t.dst, x.region, t.eb);
    release(x);
    const bool ack = x.how == step::receive && acknowledged(x);
    if (x.tokens_out.empty() && !ack) return;
    b_.begin_round();
    if (ack) tokens_sent_.push_back(b_.send(acks_->data(), 1, x.peers[0], ack_tag(x)));
    for (const auto& [to, tag] : x.tokens_out) tokens_sent_.push_back(b_.send(token(), 1, to, tag));
    b_.end_round();
  }
  void progress() {
    for (std::size_t k : in_flight_) {
      step& x = steps_[k];
      if (!x.done && completed(x)) finish(x);
    }
    std::erase_if(in_flight_, [&](std::size_t k) { return steps_[k].done; });
  }
  // Polls until `ready()`, completing what is in flight meanwhile; gives up after the backend's
  // timeout without progress, naming the devices this rank waits on.
  template <class Ready>
  void await(Ready&& ready) {
    const double limit = b_.timeout_s();
    auto pause = std::chrono::microseconds(5);
    auto last_progress = std::chrono::steady_clock::now();
    std::size_t last_count = in_flight_.size();
    for (int spins = 0;; ++spins) {
      progress();
      if (ready()) return;
      if (in_flight_.size() != last_count) last_count = in_flight_.size(), last_progress = std::chrono::steady_clock::now();
      if (limit > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - last_progress).count() > limit)
        stalled(limit);
      if (spins < 64) continue;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(100));
    }
  }
  [[noreturn]] void stalled(double limit) {
    std::vector<int> peers;
    for (std::size_t k : in_flight_) {
      const step& x = steps_[k];
      for (index_t d : x.peers) peers.push_back(static_cast<int>(d));
      // A collective has no peers of its own: a chain waits on its neighbours, a broadcast on its group.
      if (x.how == step::collective && x.group != none && groups_[x.group]) {
        const auto& m = groups_[x.group]->members;
        const auto at = static_cast<std::size_t>(std::find(m.begin(), m.end(), me_) - m.begin());
        for (std::size_t j = 0; j < m.size(); ++j)
          if (j != at && (x.what != transfer_kind::chain || j + 1 == at || j == at + 1)) peers.push_back(static_cast<int>(m[j]));
      }
    }
    // Ordered mode, nothing in flight: the next steps of the lanes wait for NIC tokens.
    if (peers.empty())
      for (step& x : steps_)
        if (!x.posted && (x.prev_send == none || steps_[x.prev_send].done) &&
            (x.prev_receive == none || steps_[x.prev_receive].done))
          for (std::size_t t = 0; t < x.token_reqs.size(); ++t)
            if (!b_.test(x.token_reqs[t])) peers.push_back(static_cast<int>(x.tokens_in[t].first));
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    std::string who;
    for (std::size_t i = 0; i < peers.size() && i < 16; ++i) who += (i ? ", " : "") + std::to_string(peers[i]);
    throw timeout_error("device " + std::to_string(me_) + ": no progress for " + std::to_string(limit) +
                            " s waiting on device(s) " + (who.empty() ? std::string("?") : who) +
                            " (unreachable, stopped or gone)",
                        peers);
  }

  // A step may start: the previous steps of its lanes are complete, so are the receives it
  // passes on, and the tokens of its NIC directions have arrived.
  bool may_start(step& x) {
    if (x.prev_send != none && !steps_[x.prev_send].done) return false;
    if (x.prev_receive != none && !steps_[x.prev_receive].done) return false;
    for (std::size_t n : x.needs)
      if (!steps_[n].done) return false;
    if (x.after_other != none && !steps_[x.after_other].done) return false;
    for (request& r : x.token_reqs)
      if (!b_.test(r)) return false;
    return true;
  }

  // The two lanes advance independently: each starts its next step as soon as it may, so a
  // device receives while a send of its waits for a token, and no step waits behind a step of
  // the other lane that comes earlier in the schedule.
  // Ordered mode on a backend whose sends hold its stream until matched (NCCL): a device's
  // transfers that the model starts at one time form one group (a round: its sends and receives
  // progress together, so a device sends while it receives), rounds in the model's time order.
  // Both ends of a transfer put it in the round of its start time, so the rounds of all devices
  // line up and none waits for a later one.
  void run_ordered_in_rounds() {
    for (step& x : steps_) x.done = x.posted = false;
    std::vector<std::size_t> order(steps_.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return steps_[a].model_start < steps_[b].model_start; });
    for (std::size_t i = 0; i < order.size();) {
      std::size_t j = i;
      const double at = steps_[order[i]].model_start;
      while (j < order.size() && steps_[order[j]].model_start <= at + 1e-12 * (1 + at)) ++j;
      for (std::size_t k = i; k < j && shared_staging_; ++k) {  // every earlier round gave its buffers back
        step& x = steps_[order[k]];
        if (!x.staged) continue;
        const auto at = arena_.take(x.staged);
        if (!at)
          throw error("device " + std::to_string(me_) + ": the transfers the model starts together at " +
                      std::to_string(x.model_start) + " s need more message buffers than the staging cap leaves");
        x.buffer = *at;
      }
      b_.begin_round();
      for (std::size_t k = i; k < j; ++k) {
        step& x = steps_[order[k]];
        if (k > i && group_of_transfer(x.transfer) != group_of_transfer(steps_[order[k - 1]].transfer))
          b_.end_round(), b_.begin_round();  // a bounded group (both ends of a transfer agree on it)
        mark(x, &step_time::wait);
        mark(x, &step_time::start);
        x.reqs.clear();
        post_step(x);
        x.posted = true;
      }
      b_.end_round();
      for (std::size_t k = i; k < j; ++k) {
        step& x = steps_[order[k]];
        await([&] { return completed(x); });
        finish(x);
      }
      i = j;
    }
  }

  void run_ordered() {
    for (step& x : steps_) x.done = x.posted = false;
    in_flight_.clear();
    b_.begin_round();
    for (step& x : steps_) {
      x.token_reqs.clear();
      for (std::size_t t = 0; t < x.tokens_in.size(); ++t)
        x.token_reqs.push_back(b_.recv(token_in(x.token_slot + t), 1, x.tokens_in[t].first, x.tokens_in[t].second));
      x.clear_reqs.clear();
      if (x.how == step::send && cleared(x))
        for (std::size_t j = 0; j < x.peers.size(); ++j)
          x.clear_reqs.push_back(b_.recv(clears_->data() + 1 + x.ack_slot + j, 1, x.peers[j], clear_tag(x)));
    }
    b_.end_round();
    std::size_t next_send = first_send_, next_receive = first_receive_, started = 0;
    auto start = [&](std::size_t k) {
      step& x = steps_[k];
      mark(x, &step_time::wait);
      mark(x, &step_time::start);
      x.reqs.clear();
      b_.begin_round();
      post_step(x);
      b_.end_round();
      x.posted = true;
      ++started;
      if (x.send_lane) next_send = x.next_send;
      if (x.receive_lane) next_receive = x.next_receive;
      if (x.how == step::copy) finish(x);
      else in_flight_.push_back(k);
    };
    auto ready = [&](std::size_t k) {
      const step& x = steps_[k];
      // A step on both lanes starts when it is next on both.
      if ((x.send_lane && next_send != k) || (x.receive_lane && next_receive != k)) return false;
      return may_start(steps_[k]);
    };
    auto advance = [&] {
      bool moved = true;
      while (moved) {
        moved = false;
        for (std::size_t k : {next_send, next_receive}) {
          if (k == none || steps_[k].posted || !ready(k)) continue;
          const std::size_t p = steps_[k].partner;
          if (p != none && !steps_[p].posted) {
            if (!ready(p)) continue;
            // An eager send needs no handshake: the receive's handshake goes first, then its data.
            const std::size_t send = steps_[k].how == step::send ? k : p, receive = send == k ? p : k;
            const bool eager = acknowledged(steps_[send]);
            start(eager ? receive : send);
            start(eager ? send : receive);
          } else {
            start(k);
          }
          moved = true;
        }
      }
    };
    await([&] {
      advance();
      return started == steps_.size() && in_flight_.empty();
    });
  }
  // Posts a step's transfer (a send packs first; a forward sends what arrived).
  void post_step(step& x) {
    auto& mem = b_.memory();
    const tensor_state& t = tensors_[x.tensor];
    switch (x.how) {
      case step::copy:
        if (x.parts.empty()) copy_region(mem, t.src_tile, t.src, t.dst_tile, t.dst, x.region, t.eb);
        for (const transfer_part& q : x.parts) {
          const tensor_state& tq = tensors_[static_cast<std::size_t>(q.tensor)];
          copy_region(mem, tq.src_tile, tq.src, tq.dst_tile, tq.dst, q.region, tq.eb);
        }
        break;
      case step::send: {
        if (x.from_buffer == none && !x.parts.empty() && x.part_at.empty()) pack_parts(x);
        else if (x.parts.empty() && x.from_buffer == none && x.direct == none) {
          if (x.from_source) pack(mem, t.src_tile, t.src, x.region, t.eb, buffer(x.buffer));
          else pack(mem, t.dst_tile, t.dst, x.region, t.eb, buffer(x.buffer));
        }
        x.data_sent = false;
        if (!cleared(x)) send_data(x);  // else once every receiver has cleared it (completed)
        break;
      }
      case step::receive:
        for (std::size_t k = 0; k < x.part_at.size(); ++k) {  // a bundle received in place, piece by piece
          const transfer_part& q = x.parts[k];
          x.reqs.push_back(b_.recv(tensors_[static_cast<std::size_t>(q.tensor)].dst + x.part_at[k], static_cast<std::size_t>(q.bytes),
                                   x.peers[0], x.tag));
        }
        if (x.part_at.empty()) x.req = b_.recv(x.direct != none ? t.dst + x.direct : buffer(x.buffer), x.bytes, x.peers[0], x.tag);
        if (cleared(x)) tokens_sent_.push_back(b_.send(clears_->data(), 1, x.peers[0], clear_tag(x)));
        break;
      case step::collective: {
        if (x.root && !x.parts.empty()) pack_parts(x);
        else if (x.root && x.direct == none) pack(mem, t.src_tile, t.src, x.region, t.eb, buffer(x.buffer));
        auto& g = *groups_[x.group];
        // The root's shard is only read by the broadcast (the transport's API takes one pointer).
        std::byte* data = x.direct == none ? buffer(x.buffer)
                          : x.root         ? const_cast<std::byte*>(t.src) + x.direct
                                           : t.dst + x.direct;
        x.req = x.what == transfer_kind::chain ? b_.chain(data, x.bytes, g, x.tag, x.piece)
                                               : b_.broadcast(data, x.bytes, g.members.front(), g);
        break;
      }
    }
  }

  // A bundle's pieces, one after another in its buffer (a forward's from what it received).
  void pack_parts(step& x) {
    std::byte* out = buffer(x.buffer);
    for (const transfer_part& q : x.parts) {
      const tensor_state& tq = tensors_[static_cast<std::size_t>(q.tensor)];
      if (x.from_source) pack(b_.memory(), tq.src_tile, tq.src, q.region, tq.eb, out);
      else pack(b_.memory(), tq.dst_tile, tq.dst, q.region, tq.eb, out);
      out += q.bytes;
    }
  }

  // Sends a posted step's message to each receiver (and, acknowledged, waits for their answers).
  void send_data(step& x) {
    if (x.data_sent) return;
    x.data_sent = true;
    const tensor_state& t = tensors_[x.tensor];
    const std::byte* message = !x.part_at.empty()       ? nullptr  // piece by piece, below
                               : x.from_buffer != none ? buffer(steps_[x.from_buffer].buffer)
                               : x.direct != none      ? (x.from_source ? t.src : t.dst) + x.direct
                                                       : buffer(x.buffer);
    if (cleared(x)) mark(x, &step_time::start);  // the data starts now
    for (std::size_t j = 0; j < x.peers.size(); ++j) {
      for (std::size_t k = 0; k < x.part_at.size(); ++k) {  // a bundle sent in place, piece by piece
        const transfer_part& q = x.parts[k];
        const tensor_state& tq = tensors_[static_cast<std::size_t>(q.tensor)];
        x.reqs.push_back(b_.send((x.from_source ? tq.src : tq.dst) + x.part_at[k], static_cast<std::size_t>(q.bytes), x.peers[j], x.tag));
      }
      if (x.part_at.empty()) x.reqs.push_back(b_.send(message, x.bytes, x.peers[j], x.tag));
      if (acknowledged(x)) x.reqs.push_back(b_.recv(acks_->data() + 1 + x.ack_slot + j, 1, x.peers[j], ack_tag(x)));
    }
  }

  // Everything is posted at once; a forward is posted when the receives it passes on are
  // complete. While it waits, the rank keeps every posted transfer moving (a chain's first member
  // passes its chunks on only when asked), so no wait of one rank holds up another's.
  void run_concurrent() {
    for (step& x : steps_) x.done = x.posted = false;
    in_flight_.clear();
    if constexpr (passes_port_tokens<Backend>()) run_concurrent_eager();
    else run_concurrent_in_list_order();
  }
  void post_concurrent(step& x, std::size_t k) {
    mark(x, &step_time::wait);
    mark(x, &step_time::start);
    x.reqs.clear();
    post_step(x);
    x.posted = true;
    if (x.how == step::copy) finish(x);
    else in_flight_.push_back(k);
  }
  bool inputs_arrived(const step& x) const {
    for (std::size_t n : x.needs)
      if (!steps_[n].done) return false;
    return true;
  }
  // Tag-matched transports (MPI): every step that can go is posted at once, a forward as soon as
  // its inputs are in, so no receive or send behind a waiting forward is posted late (its sender
  // would stall in the rendezvous meanwhile; the concurrent model starts it at time 0). Messages
  // of one tag between one pair match in posting order, so a step is never posted before an
  // earlier step of its tag (tags repeat beyond `transfer_tags` transfers): both ends then post
  // them in list order. Such a step waits only for earlier ones, so no cycle of waits forms.
  void run_concurrent_eager() {
    std::vector<std::size_t> waiting(steps_.size());  // not yet posted, in list order
    for (std::size_t k = 0; k < waiting.size(); ++k) waiting[k] = k;
    std::vector<unsigned char> held(static_cast<std::size_t>(transfer_tags), 0);  // tags of those
    auto post_ready = [&] {
      std::vector<std::size_t> still;
      bool open = false;
      take_buffers();
      for (std::size_t k : waiting) {
        step& x = steps_[k];
        const auto tag = static_cast<std::size_t>(x.tag) % held.size();
        if (!held[tag] && inputs_arrived(x) && has_buffer(x)) {
          if (!open) b_.begin_round(), open = true;
          post_concurrent(x, k);
        } else {
          still.push_back(k);
          held[tag] = 1;
        }
      }
      if (open) b_.end_round();
      for (std::size_t k : still) held[static_cast<std::size_t>(steps_[k].tag) % held.size()] = 0;
      waiting = std::move(still);
    };
    post_ready();
    await([&] {
      if (!waiting.empty()) post_ready();
      return waiting.empty() && in_flight_.empty();
    });
  }
  // Transports whose operations must be issued in one order on every rank (NCCL): list order; a
  // forward first completes the receives it passes on.
  void run_concurrent_in_list_order() {
    b_.begin_round();
    for (std::size_t k = 0; k < steps_.size(); ++k) {
      step& x = steps_[k];
      if (k > 0 && group_of_transfer(x.transfer) != group_of_transfer(steps_[k - 1].transfer))
        b_.end_round(), b_.begin_round();  // a bounded group (both ends of a transfer agree on it)
      auto ready = [&] {
        take_buffers();
        return inputs_arrived(x) && has_buffer(x);
      };
      if (!ready()) {
        b_.end_round();
        await(ready);
        b_.begin_round();
      }
      post_concurrent(x, k);
    }
    b_.end_round();
    await([&] { return in_flight_.empty(); });
  }

  // Which bounded group a transfer's operations go in, where the backend bounds its groups (NCCL):
  // transfers [g * L, (g + 1) * L) of the schedule. Every rank closes its groups at the same
  // transfer indices and issues them in that order, so each group's peers are in the matching one.
  std::size_t group_of_transfer(std::size_t transfer) const noexcept {
    if constexpr (requires(const Backend& b) { { b.max_group_transfers() } -> std::convertible_to<std::size_t>; })
      return transfer / b_.max_group_transfers();
    else
      return 0;
  }

  Backend b_;
  execution mode_;
  bool record_ = false;
  std::chrono::steady_clock::time_point began_;
  std::vector<step_time> times_;
  index_t me_ = -1;
  struct tensor_state {  // one per tensor of the batch: this rank's tiles and the run's buffers
    std::size_t eb = 1;
    box src_tile{}, dst_tile{};
    std::size_t source_bytes = 0, destination_bytes = 0;
    const std::byte* src = nullptr;
    std::byte* dst = nullptr;
  };
  std::vector<tensor_state> tensors_;
  std::vector<step> steps_;
  std::map<std::size_t, std::size_t> step_of_;  // transfer -> my step
  std::optional<typename Backend::memory_type::buffer> block_;  // the message buffers (staging)
  detail::staging_arena arena_;    // where each step's buffer lies in block_
  bool shared_staging_ = false;    // concurrent mode under a binding cap: taken and given back as steps run
  std::size_t next_to_take_ = 0;   // shared staging: steps take their buffers in list order, from here
  std::optional<typename Backend::memory_type::buffer> scratch_;  // the token byte
  std::optional<typename Backend::memory_type::buffer> acks_;     // acknowledgement bytes
  std::optional<typename Backend::memory_type::buffer> clears_;   // clearance bytes
  std::vector<std::size_t> in_flight_;  // ordered mode: posted steps not yet complete
  std::size_t first_send_ = none, first_receive_ = none;  // ordered mode: each lane's first step
  std::vector<request> tokens_sent_;
  std::vector<std::optional<typename Backend::group>> groups_;
  std::map<std::size_t, std::size_t> group_of_;
};

}  // namespace meshcast

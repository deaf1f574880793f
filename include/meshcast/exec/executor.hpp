// The generic executor: runs a schedule on one rank. Backend and strategy are template
// parameters, so every call below resolves at compile time: no virtual calls, no tables.
//
// The constructor keeps only this rank's part of the schedule, as a list of steps with their
// message buffers, so that `run` does what a hand-written loop would: post each transfer in
// schedule order, pack and unpack whole contiguous runs, wait. A rank that forwards data it
// received (a local all-gather step) first completes its pending receives; every transfer it
// waits for comes earlier in the order, so no cycle of waits can form.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "../backend.hpp"
#include "../plan.hpp"
#include "../schedule.hpp"
#include "../strategy.hpp"

namespace meshcast {

template <backend Backend, strategy Strategy>
class executor {
 public:
  /// `ops` is the schedule (issue order), the same on every rank. The executor keeps its own
  /// copy of the backend (a handle: communicator, stream), so it never refers to a temporary.
  /// Throws `meshcast::error` when the communicator has fewer ranks than the plan has devices or
  /// an op does not fit the plan (a schedule from elsewhere is checked, not trusted).
  executor(Backend b, const plan& p, const std::vector<op>& ops) : b_(std::move(b)) {
    me_ = b_.device();
    if (b_.size() < p.device_count)
      throw error("the plan uses " + std::to_string(p.device_count) + " devices but the communicator has " +
                  std::to_string(b_.size()) + " ranks; run one rank per device");
    check_ops(p, ops);
    eb_ = static_cast<std::size_t>(p.element_bytes);
    src_tile_ = p.source_tile(me_);
    dst_tile_ = p.destination_tile(me_);
    is_src_ = std::find(p.src_devices.begin(), p.src_devices.end(), me_) != p.src_devices.end();
    is_dst_ = std::find(p.dst_devices.begin(), p.dst_devices.end(), me_) != p.dst_devices.end();
    source_bytes_ = is_src_ ? tile_bytes(src_tile_) : 0;
    destination_bytes_ = is_dst_ ? tile_bytes(dst_tile_) : 0;
    if constexpr (!Strategy::point_to_point) make_groups(ops);
    plan_steps(ops);
  }

  /// Bytes this rank's source and destination shards must have (row-major over their tiles).
  std::size_t source_bytes() const noexcept { return source_bytes_; }
  std::size_t destination_bytes() const noexcept { return destination_bytes_; }

  /// Reshards: reads `source` (never written), fills `destination`. May be called repeatedly.
  void run(std::span<const std::byte> source, std::span<std::byte> destination) {
    if (source.size() < source_bytes() || destination.size() < destination_bytes())
      throw error("device " + std::to_string(me_) + ": shard buffers of " + std::to_string(source.size()) + " and " +
                  std::to_string(destination.size()) + " bytes are smaller than its tiles (" + std::to_string(source_bytes()) +
                  " and " + std::to_string(destination_bytes()) + " bytes)");
    pending_.clear();
    sent_.clear();
    b_.begin_round();
    for (step& s : steps_) {
      switch (s.how) {
        case step::copy:
          b_.copy_region(src_tile_, source.data(), dst_tile_, destination.data(), s.region, eb_);
          break;
        case step::send: {
          if (!s.from_source) {  // forwarding what arrived earlier: finish those receives first
            b_.end_round();
            complete(destination);
            b_.begin_round();
          }
          const box& tile = s.from_source ? src_tile_ : dst_tile_;
          const std::byte* from = s.from_source ? source.data() : destination.data();
          if (s.keep_copy) b_.copy_region(tile, from, dst_tile_, destination.data(), s.region, eb_);
          std::byte* message = buffers_[s.buffer].data();
          b_.pack(tile, from, s.region, eb_, message);
          if (s.group != no_group) {
            sent_.push_back(b_.broadcast(message, s.bytes, me_, *groups_[s.group]));
          } else {
            for (index_t peer : s.peers) sent_.push_back(b_.send(message, s.bytes, peer, s.tag));
          }
          break;
        }
        case step::receive:
          s.request = s.group != no_group ? b_.broadcast(buffers_[s.buffer].data(), s.bytes, s.peers[0], *groups_[s.group])
                                          : b_.recv(buffers_[s.buffer].data(), s.bytes, s.peers[0], s.tag);
          pending_.push_back(&s);
          break;
      }
    }
    b_.end_round();
    complete(destination);
    for (auto& r : sent_) b_.wait(r);
    b_.flush();
  }

 private:
  static constexpr std::size_t no_group = static_cast<std::size_t>(-1);
  struct step {
    enum kind { copy, send, receive } how;
    box region;
    std::size_t bytes = 0;
    bool from_source = true;  // send: the region is in this rank's source tile (else it arrived here)
    bool keep_copy = false;   // send: this rank is also a receiver (local copy)
    std::vector<index_t> peers;  // send: receivers; receive: the sender
    int tag = 0;
    std::size_t group = no_group;
    std::size_t buffer = 0;
    typename Backend::request request{};
  };

  // Point-to-point strategies send to each receiver; broadcast sends once to a group.
  static bool collective(const op& o) noexcept { return !Strategy::point_to_point && o.receivers.size() >= 2; }

  std::size_t tile_bytes(const box& b) const noexcept { return static_cast<std::size_t>(b.volume()) * eb_; }

  // Every op names devices of the plan, a region inside the tensor and its exact byte count.
  static void check_ops(const plan& p, const std::vector<op>& ops) {
    const box whole = p.src.whole();
    auto bad = [](std::size_t i, const char* why) {
      throw error("op " + std::to_string(i) + " of the schedule " + why + "; was it made for another plan?");
    };
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const op& o = ops[i];
      if (o.sender < 0 || o.sender >= p.device_count) bad(i, "names a sender that is not a device of the plan");
      for (index_t r : o.receivers)
        if (r < 0 || r >= p.device_count) bad(i, "names a receiver that is not a device of the plan");
      if (o.receivers.empty()) bad(i, "has no receiver");
      if (o.region.rank != whole.rank || !whole.contains(o.region) || o.region.empty())
        bad(i, "moves a region outside the tensor");
      if (o.bytes != o.region.volume() * p.element_bytes) bad(i, "has a byte count that does not match its region");
    }
  }

  void plan_steps(const std::vector<op>& ops) {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const op& o = ops[i];
      const bool sending = o.sender == me_;
      const bool receiving = std::find(o.receivers.begin(), o.receivers.end(), me_) != o.receivers.end();
      if (!sending && !receiving) continue;
      step s{};
      s.region = o.region;
      s.bytes = tile_bytes(o.region);
      s.tag = static_cast<int>(i % 32768);
      if (collective(o)) s.group = group_index_.at(i);
      if (sending) {
        s.from_source = is_src_ && src_tile_.contains(o.region);
        s.keep_copy = receiving;
        for (index_t r : o.receivers)
          if (r != me_) s.peers.push_back(r);
        if (s.peers.empty()) {  // a local copy, from the source shard by construction
          if (!s.from_source) throw error("device " + std::to_string(me_) + " copies a region it does not hold");
          s.how = step::copy;
        } else {
          s.how = step::send;
          s.buffer = buffers_.size();
          buffers_.push_back(b_.allocate(s.bytes));
        }
      } else {
        s.how = step::receive;
        s.peers = {o.sender};
        s.buffer = buffers_.size();
        buffers_.push_back(b_.allocate(s.bytes));
      }
      steps_.push_back(std::move(s));
    }
    pending_.reserve(steps_.size());
    sent_.reserve(steps_.size() * 2);
  }

  void complete(std::span<std::byte> destination) {
    for (step* s : pending_) {
      b_.wait(s->request);
      b_.unpack(buffers_[s->buffer].data(), dst_tile_, destination.data(), s->region, eb_);
    }
    pending_.clear();
  }

  // Broadcast groups: one per distinct {sender} + receivers set of a multi-receiver op, created
  // by every member in the order of first use.
  void make_groups(const std::vector<op>& ops) {
    std::map<std::vector<index_t>, std::size_t> index;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const op& o = ops[i];
      if (!collective(o)) continue;
      std::vector<index_t> members = o.receivers;
      members.insert(members.begin(), o.sender);
      std::sort(members.begin() + 1, members.end());
      auto [it, fresh] = index.try_emplace(members, groups_.size());
      if (fresh) {
        bool mine = std::find(members.begin(), members.end(), me_) != members.end();
        groups_.push_back(mine ? std::optional<typename Backend::group>(
                                     b_.make_group(members, static_cast<int>(it->second % 32768)))
                               : std::nullopt);
      }
      group_index_[i] = it->second;
    }
  }

  Backend b_;
  index_t me_ = -1;
  std::size_t eb_ = 1;
  box src_tile_{}, dst_tile_{};
  bool is_src_ = false, is_dst_ = false;
  std::size_t source_bytes_ = 0, destination_bytes_ = 0;
  std::vector<step> steps_;
  std::vector<typename Backend::buffer> buffers_;
  std::vector<step*> pending_;
  std::vector<typename Backend::request> sent_;
  std::vector<std::optional<typename Backend::group>> groups_;
  std::map<std::size_t, std::size_t> group_index_;
};

}  // namespace meshcast

// The generic executor: runs a schedule on one rank. Backend and strategy are template
// parameters, so every call below resolves at compile time: no virtual calls, no tables.
//
// Each rank posts its part of every op in schedule order. A rank that forwards data it received
// (a local all-gather step) first completes its pending receives; every op it waits for comes
// earlier in the order, so no cycle of waits can form.
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
  /// `ops` is the schedule (issue order), the same on every rank.
  executor(Backend& b, const plan& p, const std::vector<op>& ops) : b_(b), ops_(ops) {
    me_ = b_.device();
    eb_ = static_cast<std::size_t>(p.element_bytes);
    for (std::size_t i = 0; i < p.src_devices.size(); ++i)
      if (p.src_devices[i] == me_) src_tile_ = p.src.tile(static_cast<index_t>(i)), is_src_ = true;
    for (std::size_t j = 0; j < p.dst_devices.size(); ++j)
      if (p.dst_devices[j] == me_) dst_tile_ = p.dst.tile(static_cast<index_t>(j)), is_dst_ = true;
    if constexpr (!Strategy::point_to_point) make_groups();
  }

  /// Bytes this rank's source and destination shards must have (row-major over their tiles).
  std::size_t source_bytes() const noexcept { return is_src_ ? tile_bytes(src_tile_) : 0; }
  std::size_t destination_bytes() const noexcept { return is_dst_ ? tile_bytes(dst_tile_) : 0; }

  /// Reshards: reads `source` (never written), fills `destination`.
  void run(std::span<const std::byte> source, std::span<std::byte> destination) {
    if (source.size() < source_bytes() || destination.size() < destination_bytes())
      throw error("device " + std::to_string(me_) + ": shard buffers are smaller than its tiles");
    pending_.clear();
    b_.begin_round();
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      const op& o = ops_[i];
      const bool sending = o.sender == me_;
      const bool receiving = std::find(o.receivers.begin(), o.receivers.end(), me_) != o.receivers.end();
      if (!sending && !receiving) continue;
      const int tag = static_cast<int>(i % 32768);
      const std::size_t n = tile_bytes(o.region);
      if (sending) {
        const bool from_source = is_src_ && src_tile_.contains(o.region);
        if (!from_source) {  // forwarding what arrived earlier: finish those receives first
          b_.end_round();
          complete(destination);
          b_.begin_round();
        }
        const box& tile = from_source ? src_tile_ : dst_tile_;
        const std::byte* from = from_source ? source.data() : destination.data();
        if (receiving) b_.copy_region(tile, from, dst_tile_, destination.data(), o.region, eb_);
        const bool remote = o.receivers.size() > (receiving ? 1u : 0u);
        if (!remote) continue;
        auto& message = outgoing_.emplace_back(b_.allocate(n));
        b_.pack(tile, from, o.region, eb_, message.data());
        if (collective(o)) {
          requests_.push_back(b_.broadcast(message.data(), n, me_, group_of(i)));
        } else {
          for (index_t r : o.receivers)
            if (r != me_) requests_.push_back(b_.send(message.data(), n, r, tag));
        }
      } else {
        auto& message = pending_.emplace_back(incoming{o.region, b_.allocate(n), {}});
        message.request = collective(o) ? b_.broadcast(message.data.data(), n, o.sender, group_of(i))
                                        : b_.recv(message.data.data(), n, o.sender, tag);
      }
    }
    b_.end_round();
    complete(destination);
    for (auto& r : requests_) b_.wait(r);
    b_.flush();
    requests_.clear();
    outgoing_.clear();
  }

 private:
  struct incoming {
    box region;
    typename Backend::buffer data;
    typename Backend::request request;
  };

  // Point-to-point strategies send to each receiver; broadcast sends once to a group.
  static bool collective(const op& o) noexcept { return !Strategy::point_to_point && o.receivers.size() >= 2; }

  std::size_t tile_bytes(const box& b) const noexcept { return static_cast<std::size_t>(b.volume()) * eb_; }

  void complete(std::span<std::byte> destination) {
    for (incoming& m : pending_) {
      b_.wait(m.request);
      b_.unpack(m.data.data(), dst_tile_, destination.data(), m.region, eb_);
    }
    pending_.clear();
  }

  // Broadcast groups: one per distinct {sender} + receivers set of a multi-receiver op, created
  // by every member in the order of first use.
  void make_groups() {
    std::map<std::vector<index_t>, std::size_t> index;
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      const op& o = ops_[i];
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
  typename Backend::group& group_of(std::size_t op_index) { return *groups_[group_index_.at(op_index)]; }

  Backend& b_;
  const std::vector<op>& ops_;
  index_t me_ = -1;
  std::size_t eb_ = 1;
  box src_tile_{}, dst_tile_{};
  bool is_src_ = false, is_dst_ = false;
  std::vector<incoming> pending_;
  std::vector<typename Backend::buffer> outgoing_;
  std::vector<typename Backend::request> requests_;
  std::vector<std::optional<typename Backend::group>> groups_;
  std::map<std::size_t, std::size_t> group_index_;
};

}  // namespace meshcast

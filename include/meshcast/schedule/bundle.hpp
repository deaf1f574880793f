// Bundles: the tasks of a batch that go from the same senders to the same receivers (the pieces of
// many tensors between the same devices) gathered into units of work of at most a bundle's bytes.
// A model of thousands of tensors is then scheduled, and pays its latencies, per bundle rather
// than per task: its instance has one unit per bundle, and each op of a unit moves every piece of
// the bundle as one message (transfer::parts). Receivers served on their own host (local copies)
// and the receivers across the network are bundled apart, as make_instance serves them apart.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "../core/detail/checked.hpp"
#include "../model/network.hpp"
#include "../model/op.hpp"
#include "../plan/plan.hpp"
#include "../layout/slice.hpp"

namespace meshcast {

/// Pieces of tasks with one set of senders and one set of receivers, moved together.
struct bundle {
  std::vector<transfer_part> pieces;  ///< in plan order; the first leads (names the unit)
  index_t bytes = 0;
  bool local = false;  ///< the receivers served on their host (else those across the network)
  std::span<const index_t> senders, receivers;  ///< the lead task's (every piece's) devices
  index_t slice = 0;   ///< under replica splitting: which slice of their tasks the pieces are
};

namespace detail {
// Whether some receiver is served on its own host (holds the region, or shares a host with a
// holder) and whether some is not: the split deliver_locally makes.
inline std::pair<bool, bool> local_and_remote(const network& net, std::span<const index_t> senders,
                                              std::span<const index_t> receivers) {
  bool local = false, remote = false;
  for (index_t r : receivers) {
    bool here = false;
    for (index_t s : senders) here |= net.host_of(s) == net.host_of(r);
    (here ? local : remote) = true;
  }
  return {local, remote};
}

// The receivers that no sender shares a host with (those deliver_locally leaves for the network).
inline std::vector<index_t> remote_receivers(const network& net, std::span<const index_t> senders,
                                             std::span<const index_t> receivers) {
  std::vector<index_t> remote;
  for (index_t r : receivers)
    if (std::none_of(senders.begin(), senders.end(), [&](index_t s) { return net.host_of(s) == net.host_of(r); }))
      remote.push_back(r);
  return remote;
}

inline std::uint64_t mix_hash(std::uint64_t h, std::uint64_t v) noexcept {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}
}  // namespace detail

/// The bundles of a batch (see the file comment), in the order of their first pieces. A piece
/// joins the open bundle of its kind (local, or slice k of n across the network) and devices
/// while that stays within `max_bytes`; a piece of `max_bytes` or more is a bundle of its own.
/// With `split_replicas`, the network part of a task is first cut into one slice per sender port
/// (at most `max_slices`), and slices bundle with the same slice of other tasks.
inline std::vector<bundle> make_bundles(std::span<const std::shared_ptr<const plan>> plans, const network& net,
                                        std::size_t max_bytes, bool split_replicas, index_t max_slices) {
  std::vector<bundle> out;
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> open;  // key's hash -> open bundles
  auto same = [](std::span<const index_t> a, std::span<const index_t> b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  };
  auto add = [&](std::uint64_t hash, const transfer_part& piece, bool local, index_t slice, std::span<const index_t> senders,
                 std::span<const index_t> receivers) {
    if (static_cast<std::size_t>(piece.bytes) >= max_bytes) {
      out.push_back({{piece}, piece.bytes, local, senders, receivers, slice});
      return;
    }
    std::vector<std::size_t>& list = open[hash];
    for (std::size_t& b : list) {
      bundle& x = out[b];
      if (x.local != local || x.slice != slice || !same(x.senders, senders) || !same(x.receivers, receivers)) continue;
      if (detail::sum_within(x.bytes, piece.bytes, max_bytes)) {
        x.pieces.push_back(piece);
        x.bytes += piece.bytes;
        return;
      }
      b = out.size();  // full: a new bundle takes its place
      out.push_back({{piece}, piece.bytes, local, senders, receivers, slice});
      return;
    }
    list.push_back(out.size());
    out.push_back({{piece}, piece.bytes, local, senders, receivers, slice});
  };
  for (std::size_t k = 0; k < plans.size(); ++k) {
    const plan& p = *plans[k];
    const auto tensor = static_cast<std::int32_t>(k);
    for (std::size_t i = 0; i < p.tasks.size(); ++i) {
      const send_task& t = p.tasks[i];
      const auto senders = p.senders(t), receivers = p.receivers(t);
      std::uint64_t hash = senders.size();
      for (index_t s : senders) hash = detail::mix_hash(hash, static_cast<std::uint64_t>(s));
      for (index_t r : receivers) hash = detail::mix_hash(hash, static_cast<std::uint64_t>(r) + 0x100000000ULL);
      const auto [local, remote] = detail::local_and_remote(net, senders, receivers);
      const transfer_part whole{tensor, static_cast<index_t>(i), t.region, t.bytes};
      if (local) add(detail::mix_hash(hash, 1), whole, true, 0, senders, receivers);
      if (!remote) continue;
      if (!split_replicas) {
        add(hash, whole, false, 0, senders, receivers);
        continue;
      }
      std::vector<int> ports;
      for (index_t s : senders)
        if (std::find(ports.begin(), ports.end(), net.port_of(s)) == ports.end()) ports.push_back(net.port_of(s));
      const std::vector<box> slices = slice_region(t.region, std::min<index_t>(static_cast<index_t>(ports.size()), max_slices));
      for (std::size_t j = 0; j < slices.size(); ++j) {
        const transfer_part piece{tensor, static_cast<index_t>(i), slices[j], slices[j].volume() * p.element_bytes};
        add(detail::mix_hash(hash, 2 + j), piece, false, static_cast<index_t>(j), senders, receivers);
      }
    }
  }
  return out;
}

}  // namespace meshcast

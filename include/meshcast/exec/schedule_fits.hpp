// What an executor checks before it trusts a schedule: that it fits the plans of its batch
// (devices, regions, byte counts, kinds, dependencies), and whether a backend passes ordered-mode
// NIC tokens. A schedule from elsewhere (another rank, a file) is checked, not trusted.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>

#include "../core/error.hpp"
#include "../model/schedule.hpp"
#include "../plan/plan.hpp"

namespace meshcast {

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

}  // namespace meshcast

// What an executor checks before it trusts a schedule: that it fits the plans of its batch
// (devices, regions, byte counts, kinds, dependencies), and whether a backend passes ordered-mode
// NIC tokens. A schedule from elsewhere (another rank, a file) is checked, not trusted.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../core/detail/checked.hpp"
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

namespace detail {
/// Throws unless `s` gives every receiver of every task as many elements of the task's region as
/// it holds, and nothing to a device that needs none of it: a task left out would leave elements of
/// a destination unwritten, a second delivery would write one twice. Regions already lie inside
/// their tasks (check_schedule_fits), so counts are what is left to check. O(n log n).
inline void check_delivery(std::span<const plan> plans, const schedule& s) {
  struct count {
    std::int32_t tensor;
    index_t task, device, elements;
    auto key() const noexcept { return std::tuple(tensor, task, device); }
  };
  std::vector<count> got;
  for (const transfer& t : s.transfers) {
    for (index_t r : t.receivers) got.push_back({t.tensor, t.task, r, t.region.volume()});
    for (const transfer_part& q : t.parts)
      for (index_t r : t.receivers) got.push_back({q.tensor, q.task, r, q.region.volume()});
  }
  std::vector<count> want;  // a group's receivers follow its mesh, not their ids: sorted here
  for (std::size_t k = 0; k < plans.size(); ++k)
    for (std::size_t i = 0; i < plans[k].tasks.size(); ++i)
      for (index_t r : plans[k].receivers(i))
        want.push_back({static_cast<std::int32_t>(k), static_cast<index_t>(i), r, plans[k].tasks[i].region.volume()});
  const auto by_key = [](const count& a, const count& b) { return a.key() < b.key(); };
  std::sort(got.begin(), got.end(), by_key);
  std::sort(want.begin(), want.end(), by_key);
  auto what = [](const count& c) {
    return "tensor " + std::to_string(c.tensor) + "'s task " + std::to_string(c.task) + " for device " + std::to_string(c.device);
  };
  std::size_t at = 0;
  for (const count& w : want) {
    if (at < got.size() && got[at].key() < w.key())
      throw error("the schedule delivers a region of " + what(got[at]) + ", which that device does not need; was it made for another plan?");
    index_t sum = 0;
    for (; at < got.size() && got[at].key() == w.key(); ++at)
      if (sum >= 0 && !detail::sum_fits(sum, got[at].elements, sum)) sum = -1;
    if (sum != w.elements)
      throw error("the schedule delivers " + (sum < 0 ? std::string("more than 2^63") : std::to_string(sum)) + " of the " +
                  std::to_string(w.elements) + " elements of " + what(w) + "; was it made for another plan?");
  }
  if (at < got.size())
    throw error("the schedule delivers a region of " + what(got[at]) + ", which that device does not need; was it made for another plan?");
}

/// Throws (through `bad`) unless forward `i` of `s` passes on only what the transfers it waits for
/// bring its sender: each of its pieces covered exactly by theirs. Without it a forward that waits
/// for nothing sends its receive buffer before anything arrived, and its receivers end wrong.
template <class Bad>
void check_forward(const schedule& s, std::size_t i, Bad bad) {
  const transfer& t = s.transfers[i];
  if (t.waits_for.empty()) bad(i, "is a forward that waits for no transfer: it would send before its sender has received");
  if (t.waits_for.size() == 1) {  // the usual forward: what one receive brought, a bundle's parts alike
    const transfer& from = s.transfers[static_cast<std::size_t>(t.waits_for[0])];
    if (from.tensor == t.tensor && from.region.contains(t.region) && from.parts == t.parts &&
        std::find(from.receivers.begin(), from.receivers.end(), t.sender) != from.receivers.end())
      return;
  }
  std::vector<std::pair<std::int32_t, box>> brought;
  for (std::int32_t w : t.waits_for) {
    const transfer& from = s.transfers[static_cast<std::size_t>(w)];
    if (std::find(from.receivers.begin(), from.receivers.end(), t.sender) == from.receivers.end())
      bad(i, "forwards transfer " + std::to_string(w) + ", whose receivers its sender is not one of");
    brought.emplace_back(from.tensor, from.region);
    for (const transfer_part& q : from.parts) brought.emplace_back(q.tensor, q.region);
  }
  auto covered = [&](std::int32_t tensor, const box& piece) {
    std::vector<box> in;  // what the waited transfers bring of it: disjoint, and all of it
    index_t volume = 0;
    for (const auto& [k, b] : brought) {
      if (k != tensor) continue;
      const box x = intersect(piece, b);
      if (x.empty()) continue;
      for (const box& y : in)
        if (!intersect(x, y).empty()) return false;
      in.push_back(x);
      volume += x.volume();
    }
    return volume == piece.volume();
  };
  bool fine = covered(t.tensor, t.region);
  for (const transfer_part& q : t.parts) fine = fine && covered(q.tensor, q.region);
  if (!fine) bad(i, "forwards a region that the transfers it waits for do not bring its sender exactly once");
}

/// The model of one transfer: the executor orders its rounds by these times, so a time that is
/// not a finite number of seconds (NaN compares false with every time) would stall it.
template <class Bad>
void check_model_fits(std::size_t i, const transfer& t, const transfer_model& m, Bad bad) {
  if (m.holders.size() != m.resources.size()) bad(i, "has a model whose resources and holders differ in number");
  // The executor passes NIC tokens between holders as ranks: one outside the transfer (-7, or
  // past the communicator) was an MPI abort, not an error.
  for (std::size_t k = 0; k < m.holders.size(); ++k)
    if (m.resources[k] < 0 || (m.holders[k] != t.sender &&
                               std::find(t.receivers.begin(), t.receivers.end(), m.holders[k]) == t.receivers.end()))
      bad(i, "has a model whose resource is negative or held by a device that neither sends nor receives it");
  if (m.hold_from.size() != m.hold_until.size() || (!m.hold_from.empty() && m.hold_from.size() != m.resources.size()))
    bad(i, "has a model whose hold times do not match its resources");
  auto seconds = [](double x) { return std::isfinite(x) && x >= 0; };
  bool fine = seconds(m.start) && seconds(m.end) && seconds(m.duration) && seconds(m.latency_s) && m.start <= m.end;
  for (std::size_t k = 0; k < m.hold_from.size(); ++k) fine = fine && seconds(m.hold_from[k]) && seconds(m.hold_until[k]);
  if (!fine) bad(i, "has a model time that is not a finite, non-negative number of seconds, or ends before it starts");
}
}  // namespace detail

/// Throws when `s` does not fit `plans` (one per tensor): devices, regions and byte counts,
/// kinds and dependencies, and that it delivers every task to each of its receivers once. A
/// schedule from elsewhere (another rank, a file) is checked, not trusted.
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
    if (std::vector<index_t> rs = t.receivers; std::sort(rs.begin(), rs.end()), std::adjacent_find(rs.begin(), rs.end()) != rs.end())
      bad(i, "names a receiver twice");
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
    if (t.kind == transfer_kind::forward) detail::check_forward(s, i, bad);
    if (!s.model.empty()) detail::check_model_fits(i, t, s.model[i], bad);
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
      if (!detail::sum_fits(sum, q.bytes, sum)) bad(i, "bundles more bytes than 64 bits count");
    }
    if (sum != t.bytes) bad(i, "has a byte count that is not the sum of its pieces");
  }
  detail::check_delivery(plans, s);
}
inline void check_schedule_fits(const plan& p, const schedule& s) { check_schedule_fits(std::span<const plan>(&p, 1), s); }

}  // namespace meshcast

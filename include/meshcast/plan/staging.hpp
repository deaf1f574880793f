// The staging cap: no rank holds more than a cap of message buffers (packing, receiving,
// forwarding) at once beyond its shards. Plans are cut first, so that every task moves at most
// half the cap: in ordered mode a rank then sends one piece while it receives another within the
// cap, and the model, which schedules the pieces, describes what runs. The executor keeps the cap
// (exec/executor.hpp, plan_staging).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "plan.hpp"
#include "staging_cap.hpp"

namespace meshcast {

/// The most pieces a cap may cut the tasks of one batch into: past that the schedule would cost
/// more to make than the cap saves, and the cap is too small for the model.
inline constexpr std::size_t max_staging_pieces = std::size_t{1} << 20;

/// The largest task a staging cap of `cap` bytes leaves (0: no cap, no limit).
constexpr std::size_t staging_piece_bytes(std::size_t cap) noexcept { return cap / 2; }

/// Cuts `region` into boxes of at most `max_elements` elements, in row-major order: whole
/// slabs of the outermost dims where they fit, so that each piece stays as contiguous as it was.
/// Returns false, adding nothing, where `out` would then hold more than `max_boxes` (counted
/// first: a tiny piece size must not fill memory before the caller's limit is checked).
inline bool cut_region(const box& region, index_t max_elements, std::vector<box>& out,
                       std::size_t max_boxes = static_cast<std::size_t>(-1)) {
  if (region.rank < 1 || region.rank > max_rank)  // before its dims are read
    throw error("cut_region: a region of rank " + std::to_string(region.rank) + "; ranks are 1.." + std::to_string(max_rank));
  if (max_elements < 1)  // no dim's slabs would fit: the walk below would pass the last dim
    throw error("cut_region: pieces of at most " + std::to_string(max_elements) + " elements; a piece holds at least one");
  // box::volume does not check: a 2^32 x 2^32 region wrapped to one piece of 2^64 elements (found
  // by review).
  index_t inner = 1;
  for (int k = 0; k < region.rank; ++k)
    if (!detail::product_fits(inner, region.dims[k].size(), inner))
      throw error("cut_region: the region " + region.to_string() + " has more elements than fit in 64 bits");
  // The outermost dim d whose slabs (one index of it and of every dim before it) fit.
  int d = -1;
  while (inner > max_elements) {
    ++d;
    inner /= region[d].size();
  }
  if (d < 0) {
    if (out.size() >= max_boxes) return false;
    out.push_back(region);
    return true;
  }
  const index_t run = max_elements / inner;  // indices of dim d per piece (>= 1)
  // How many pieces, before making any: runs per slab times slabs (in double: it cannot wrap).
  double count = std::ceil(static_cast<double>(region[d].size()) / static_cast<double>(run));
  for (int k = 0; k < d; ++k) count *= static_cast<double>(region[k].size());
  if (count > static_cast<double>(max_boxes - std::min(out.size(), max_boxes))) return false;
  box piece = region;
  for (int k = 0; k < d; ++k) piece[k] = {region[k].lo, region[k].lo + 1};
  while (true) {
    for (index_t lo = region[d].lo; lo < region[d].hi;) {
      const index_t hi = region[d].hi - lo > run ? lo + run : region[d].hi;  // lo + run may pass 2^63
      piece[d] = {lo, hi};
      out.push_back(piece);
      lo = hi;
    }
    int k = d - 1;  // the next index of the dims before d, odometer-wise
    while (k >= 0 && piece[k].hi == region[k].hi) piece[k] = {region[k].lo, region[k].lo + 1}, --k;
    if (k < 0) return true;
    piece[k] = {piece[k].lo + 1, piece[k].hi + 1};
  }
}

/// Cuts the tasks of `plans` (one per tensor) so that none moves more than half of `cap` bytes
/// (0: leaves them whole). Each piece keeps its task's senders and receivers and names the task it
/// came from (`send_task::origin`). Throws `meshcast::error` where the cap cannot hold two
/// elements of a tensor (a rank sends one while it receives another), or where the pieces would
/// pass `max_staging_pieces`.
inline void cut_for_staging(std::vector<plan>& plans, std::size_t cap) {
  if (cap == 0) return;
  const std::size_t piece = staging_piece_bytes(cap);
  std::size_t pieces = 0;
  for (std::size_t k = 0; k < plans.size(); ++k) {
    plan& p = plans[k];
    const auto eb = static_cast<std::size_t>(p.element_bytes);
    const std::string tensor = plans.size() > 1 ? "tensor " + std::to_string(k) : std::string("the tensor");
    bool any = false;
    for (const send_task& t : p.tasks) any |= static_cast<std::size_t>(t.bytes) > piece;
    if (!any) {
      pieces += p.tasks.size();
      continue;
    }
    if (piece < eb)
      throw error("the staging cap of " + std::to_string(cap) + " bytes cannot move " + tensor + ": a rank sends one message while it receives another, so the cap must hold two of its " +
                  std::to_string(eb) + "-byte elements (at least " + std::to_string(2 * eb) + " bytes)");
    const auto max_elements = static_cast<index_t>(piece / eb);
    std::vector<send_task> cut;
    std::vector<box> boxes;
    for (std::size_t i = 0; i < p.tasks.size(); ++i) {
      const send_task& t = p.tasks[i];
      const index_t origin = t.origin >= 0 ? t.origin : static_cast<index_t>(i);
      boxes.clear();
      if (!cut_region(t.region, max_elements, boxes, max_staging_pieces - std::min(pieces, max_staging_pieces)))
        throw error("the staging cap of " + std::to_string(cap) + " bytes cuts the tasks into more than " +
                    std::to_string(max_staging_pieces) + " pieces (at " + tensor + "): give a larger cap");
      pieces += boxes.size();
      for (const box& b : boxes) {
        send_task s = t;
        s.region = b;
        s.bytes = b.volume() * p.element_bytes;
        s.origin = origin;
        cut.push_back(s);
      }
    }
    p.tasks = std::move(cut);
  }
}
/// The same for one plan.
inline void cut_for_staging(plan& p, std::size_t cap) {
  std::vector<plan> one{std::move(p)};
  cut_for_staging(one, cap);
  p = std::move(one[0]);
}

}  // namespace meshcast

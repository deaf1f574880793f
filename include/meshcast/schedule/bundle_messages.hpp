// The messages a bundle (a transfer with parts: bundle.hpp, bucket.hpp) makes when it runs, one
// rule for the executor and the model. Where every piece is one contiguous run in the sender's
// tile and in every receiver's, the executor sends it piece by piece, straight from and into the
// shards; else it packs the bundle into one message of all its bytes. Over a transport with eager
// messages the ordered executor waits for an acknowledgement after a step whose smallest message
// goes eagerly, so the model calls a bundle eager by that message (connections.hpp), not by its
// total: a bucket of a 4 KiB bias and a 4 MiB weight sent in place runs acknowledged.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "../core/box_runs.hpp"
#include "../model/network.hpp"
#include "../model/op.hpp"
#include "../plan/plan.hpp"

namespace meshcast {

namespace detail {
// `plan_of` over a batch's shared plans, as instances and solve_batch hold them.
inline auto plan_in(std::span<const std::shared_ptr<const plan>> plans) {
  return [plans](std::int32_t k) -> const plan& { return *plans[static_cast<std::size_t>(k)]; };
}
}  // namespace detail

namespace detail {
// Whether every piece of bundle `t` is one contiguous run in device d's source tile, or its
// destination tile.
template <class PlanOf>
bool pieces_fit(const PlanOf& plan_of, const transfer& t, index_t d, bool destination) {
  auto fits = [&](std::int32_t tensor, const box& region) {
    const plan& p = plan_of(tensor);
    const box tile = destination ? p.destination_tile(d) : p.source_tile(d);
    return contiguous_offset(tile, region, static_cast<std::size_t>(p.element_bytes)) != not_contiguous;
  };
  if (!fits(t.tensor, t.region)) return false;
  for (const transfer_part& q : t.parts)
    if (!fits(q.tensor, q.region)) return false;
  return true;
}

// The in-place rule over `fits_on(device, destination)`, pieces_fit or a memo of it.
template <class FitsOn>
bool bundle_in_place_by(const transfer& t, FitsOn&& fits_on) {
  if (t.parts.empty() || (t.kind != transfer_kind::point_to_point && t.kind != transfer_kind::forward)) return false;
  // A forward passes on what it received: its pieces sit in its destination tile.
  if (!fits_on(t.sender, t.kind == transfer_kind::forward)) return false;
  for (index_t r : t.receivers)
    if (!fits_on(r, true)) return false;
  return true;
}
}  // namespace detail

/// Whether the executor sends bundle `t` piece by piece, with no message buffer; `plan_of(tensor)`
/// gives each tensor's plan.
template <class PlanOf>
bool bundle_in_place(const PlanOf& plan_of, const transfer& t) {
  return detail::bundle_in_place_by(t, [&](index_t d, bool destination) { return detail::pieces_fit(plan_of, t, d, destination); });
}

/// pieces_fit remembered for the bundle last asked about. The options of a bundle's unit share its
/// part list (part_list), so what one option's devices found serves the next option's: an
/// instance asks once per device and unit, not per op.
class piece_fit_memo {
 public:
  template <class PlanOf>
  bool operator()(const PlanOf& plan_of, const transfer& t, index_t d, bool destination) {
    if (t.parts.identity() != parts_ || t.tensor != tensor_ || !(t.region == region_)) {
      parts_ = t.parts.identity();
      tensor_ = t.tensor;
      region_ = t.region;
      seen_.clear();
    }
    const index_t key = d * 2 + (destination ? 1 : 0);
    auto at = std::lower_bound(seen_.begin(), seen_.end(), key, [](const auto& e, index_t k) { return e.first < k; });
    if (at != seen_.end() && at->first == key) return at->second;
    const bool ok = detail::pieces_fit(plan_of, t, d, destination);
    seen_.insert(at, {key, ok});
    return ok;
  }

 private:
  const void* parts_ = nullptr;
  std::int32_t tensor_ = 0;
  box region_;
  std::vector<std::pair<index_t, bool>> seen_;  // sorted by device * 2 + destination
};

namespace detail {
// The bytes of bundle `t`'s smallest piece (the first, or one of its parts).
template <class PlanOf>
index_t smallest_piece_bytes(const PlanOf& plan_of, const transfer& t) {
  index_t least = t.region.volume() * plan_of(t.tensor).element_bytes;
  for (const transfer_part& q : t.parts) least = std::min(least, q.bytes);
  return least;
}
}  // namespace detail

/// The bytes of the smallest message the executor sends for `t`: its smallest piece where it
/// goes in place, else all of it.
template <class PlanOf>
index_t smallest_message_bytes(const PlanOf& plan_of, const transfer& t) {
  return bundle_in_place(plan_of, t) ? detail::smallest_piece_bytes(plan_of, t) : t.bytes;
}

/// Whether `t` (a bundle or not), given its connection slot, goes eagerly as the executor sends it.
/// Asks bundle_in_place (a tile per piece and receiver) only where its answer matters: where the
/// smallest piece would go eagerly and the whole bundle would not. A 256-device manifest asks it
/// for every option of every unit of four instances (its solve 0.20 -> 0.68 s when always asked).
template <class PlanOf>
bool goes_eagerly(const PlanOf& plan_of, const transfer& t, int connection, const network& net,
                  piece_fit_memo* memo = nullptr) {
  if (connection < 0) return false;
  const index_t eager = net.eager_bytes();
  if (t.parts.empty()) return t.bytes <= eager;  // not a bundle: one message of all its bytes
  const bool piece_eager = detail::smallest_piece_bytes(plan_of, t) <= eager;
  const bool whole_eager = t.bytes <= eager;
  if (piece_eager == whole_eager) return piece_eager;  // in place or packed, the same answer
  const bool in_place = memo ? detail::bundle_in_place_by(t, [&](index_t d, bool destination) {
    return (*memo)(plan_of, t, d, destination);
  })
                             : bundle_in_place(plan_of, t);
  return in_place ? piece_eager : whole_eager;
}

}  // namespace meshcast

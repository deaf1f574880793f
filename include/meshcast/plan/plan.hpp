// The resharding plan: the exact set of N-to-M send tasks that turns one layout into another.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "../core/detail/checked.hpp"
#include "../layout/layout.hpp"
#include "../layout/placement.hpp"

namespace meshcast {

/// One N-to-M send task: `region` must go from any one of its senders (all replicas holding it)
/// to every one of its receivers. Senders and receivers are read through `plan`.
struct send_task {
  box region;
  index_t bytes = 0;
  index_t src_group = 0;  ///< replica group (distinct source tile) that holds the region
  index_t dst_group = 0;  ///< replica group (distinct destination tile) that needs it
  index_t origin = -1;    ///< a piece (staging.hpp): the task of the uncut plan it is part of; -1: itself
};

/// Devices grouped by equal tile, in compressed rows: group g is members[offsets[g], offsets[g+1]).
struct replica_groups {
  std::vector<index_t> offsets{0};
  std::vector<index_t> members;  ///< global device ids, in mesh order (listed devices need not ascend)
  constexpr std::span<const index_t> operator[](index_t g) const noexcept {
    return {members.data() + offsets[g], static_cast<std::size_t>(offsets[g + 1] - offsets[g])};
  }
  constexpr index_t size() const noexcept { return static_cast<index_t>(offsets.size()) - 1; }
};

/// The most send tasks one plan may hold (a 4096-device S0 -> S1 transpose has this many). Past it
/// the tasks alone would take gigabytes before any budget downstream could refuse them: an N-device
/// S0,R -> R,S0 makes N * N tasks, and 2^40 at max_devices.
inline constexpr index_t max_plan_tasks = index_t{1} << 24;

struct plan_options {
  index_t element_bytes = 4;
  device_map devices{};
  /// Global id of each source mesh position; empty: 0..N-1. A model's tensors may start on
  /// different devices (a pipeline stage's mesh, an expert-parallel group).
  std::vector<index_t> src_devices{};
  /// Smallest `plan::device_count` (0: the largest device id + 1): the tensors of one batch share
  /// the devices of the whole job.
  index_t device_count = 0;
};

struct plan {
  layout_value src;
  layout_value dst;
  index_t element_bytes = 4;
  std::vector<index_t> src_devices;  ///< global id of each source mesh position (default 0..N-1)
  std::vector<index_t> dst_devices;  ///< global id of each destination mesh position
  index_t device_count = 0;          ///< global ids lie in [0, device_count)
  replica_groups src_groups;         ///< indexed by the source tile's chunk key
  replica_groups dst_groups;         ///< indexed by the destination tile's chunk key
  std::vector<send_task> tasks;

  constexpr std::span<const index_t> senders(const send_task& t) const noexcept { return src_groups[t.src_group]; }
  constexpr std::span<const index_t> receivers(const send_task& t) const noexcept { return dst_groups[t.dst_group]; }
  constexpr std::span<const index_t> senders(std::size_t i) const noexcept { return senders(tasks[i]); }
  constexpr std::span<const index_t> receivers(std::size_t i) const noexcept { return receivers(tasks[i]); }
  /// The tile device `d` starts with (an empty box if it is no source device).
  constexpr box source_tile(index_t d) const noexcept { return tile_of(src, src_devices, d); }
  /// The tile device `d` must end with (an empty box if it is no destination device).
  constexpr box destination_tile(index_t d) const noexcept { return tile_of(dst, dst_devices, d); }
  /// Bytes delivered, summed over receivers; throws when the sum does not fit in 64 bits.
  constexpr index_t total_bytes() const {
    index_t b = 0;
    for (const auto& t : tasks)
      b = detail::checked_add(b, detail::checked_mul(t.bytes, static_cast<index_t>(receivers(t).size()), "bytes delivered"),
                              "bytes delivered");
    return b;
  }
  /// Bytes of the whole tensor (checked by make_plan: it fits in 64 bits).
  constexpr index_t tensor_bytes() const noexcept { return src.whole().volume() * element_bytes; }

 private:
  static constexpr box tile_of(const layout_value& l, const std::vector<index_t>& ids, index_t d) noexcept {
    // A mesh's devices are most often consecutive ids: found at once (the bundle rule asks per piece).
    if (!ids.empty() && d >= ids.front() && d - ids.front() < static_cast<index_t>(ids.size()) &&
        ids[static_cast<std::size_t>(d - ids.front())] == d)
      return l.tile(d - ids.front());
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (ids[i] == d) return l.tile(static_cast<index_t>(i));
    box none;
    none.rank = l.shape.rank;  // all ranges [0, 0)
    return none;
  }
};

namespace detail {
// Row-major key of a tile over the grid of chunk indices (one digit per tensor dim).
constexpr index_t tile_key(const layout_value& l, const std::array<index_t, max_rank>& coord) noexcept {
  index_t key = 0;
  for (int d = 0; d < l.shape.rank; ++d) key = key * l.chunk_count(d) + l.chunk_index(d, coord);
  return key;
}

constexpr index_t key_count(const layout_value& l) noexcept {
  index_t n = 1;
  for (int d = 0; d < l.shape.rank; ++d) n *= l.chunk_count(d);
  return n;
}

// Groups the devices of a layout by tile (counting sort by key, so members stay ascending).
constexpr replica_groups group_by_tile(const layout_value& l, const std::vector<index_t>& ids) {
  replica_groups g;
  index_t keys = key_count(l), n = l.device_count();
  auto key_of = detail::filled_vector<index_t>(static_cast<std::size_t>(n), 0);
  g.offsets = detail::filled_vector<index_t>(static_cast<std::size_t>(keys + 1), 0);
  for (index_t i = 0; i < n; ++i) {
    key_of[i] = tile_key(l, mesh_coordinate(l.mesh, i));
    ++g.offsets[key_of[i] + 1];
  }
  for (index_t k = 0; k < keys; ++k) g.offsets[k + 1] += g.offsets[k];
  g.members = detail::filled_vector<index_t>(static_cast<std::size_t>(n), 0);
  std::vector<index_t> fill(g.offsets.begin(), g.offsets.end() - 1);
  for (index_t i = 0; i < n; ++i) g.members[fill[key_of[i]]++] = ids[i];
  return g;
}

// Refuses a plan of more than max_plan_tasks tasks before building any. Tiles are products of
// ranges, so the tasks number the product over dims of the (source chunk, destination chunk) pairs
// that meet: a bound counted in O(chunks), never larger than the count the enumeration reaches.
constexpr void check_task_count(const layout_value& src, const layout_value& dst, const std::array<index_t, max_rank>& src_k,
                                const std::array<index_t, max_rank>& dst_q) {
  index_t tasks = 1;
  bool fits = true;
  for (int d = 0; d < src.shape.rank && fits; ++d) {
    index_t pairs = 0;
    for (index_t j = 0; j < src_k[d]; ++j) {
      const range r = chunk_range(src.shape[d], src_k[d], j);
      if (!r.empty()) pairs += (r.hi - 1) / dst_q[d] - r.lo / dst_q[d] + 1;  // <= the dim's extent: no overflow
    }
    fits = product_fits(tasks, pairs, tasks) && tasks <= max_plan_tasks;
  }
  if (!fits)
    throw error("resharding " + src.to_string() + " to " + dst.to_string() + " makes more than " +
                std::to_string(max_plan_tasks) + " send tasks (meshcast::max_plan_tasks); split the tensor or the meshes");
}

// The source devices a plan was given: one distinct id in [0, max_devices) per mesh position.
constexpr std::vector<index_t> listed_sources(const std::vector<index_t>& ids, index_t n) {
  if (static_cast<index_t>(ids.size()) != n)
    throw error("the source device list has " + std::to_string(ids.size()) + " entries but the source mesh has " +
                std::to_string(n) + " devices");
  std::vector<index_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t j = 0; j < sorted.size(); ++j) {
    if (sorted[j] < 0 || sorted[j] >= max_devices)
      throw error("source device id " + std::to_string(sorted[j]) + " is outside 0.." + std::to_string(max_devices - 1) +
                  " (meshcast::max_devices)");
    if (j > 0 && sorted[j] == sorted[j - 1]) throw error("source device id " + std::to_string(sorted[j]) + " is listed twice");
  }
  return ids;
}
}  // namespace detail

/// Computes the send tasks from value-form layouts (both validated here).
constexpr plan make_plan(const layout_value& src, const layout_value& dst, const plan_options& options = {}) {
  validate(src);
  validate(dst);
  if (src.shape != dst.shape)
    throw error("source shape '" + src.shape.to_string() + "' and destination shape '" + dst.shape.to_string() +
                "' differ; resharding keeps the tensor's shape");
  if (options.element_bytes < 1 || options.element_bytes > max_element_bytes)
    throw error("element size must be 1.." + std::to_string(max_element_bytes) + " bytes, got " +
                std::to_string(options.element_bytes));
  index_t tensor_bytes = 0;
  if (!detail::product_fits(src.shape.product(), options.element_bytes, tensor_bytes))
    throw error("a tensor of shape " + src.shape.to_string() + " with " + std::to_string(options.element_bytes) +
                "-byte elements has more bytes than fit in 64 bits");

  plan p;
  p.src = src;
  p.dst = dst;
  p.element_bytes = options.element_bytes;
  index_t n = src.device_count(), m = dst.device_count();
  index_t after_sources = n;  // where disjoint destinations start
  if (options.src_devices.empty()) {
    p.src_devices.reserve(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) p.src_devices.push_back(i);
  } else {
    p.src_devices = detail::listed_sources(options.src_devices, n);
    after_sources = *std::max_element(p.src_devices.begin(), p.src_devices.end()) + 1;
  }
  p.dst_devices = options.devices.destination_ids(options.devices.how == device_map::kind::disjoint ? after_sources : n, m);
  if (options.devices.how == device_map::kind::same) p.dst_devices = p.src_devices;
  if (options.device_count < 0 || options.device_count > max_devices)
    throw error("plan_options::device_count " + std::to_string(options.device_count) + " is outside 0.." +
                std::to_string(max_devices));
  p.device_count = options.device_count;
  for (index_t id : p.src_devices) p.device_count = id + 1 > p.device_count ? id + 1 : p.device_count;
  for (index_t id : p.dst_devices) p.device_count = id + 1 > p.device_count ? id + 1 : p.device_count;
  p.src_groups = detail::group_by_tile(src, p.src_devices);
  p.dst_groups = detail::group_by_tile(dst, p.dst_devices);

  const int rank = src.shape.rank;
  std::array<index_t, max_rank> src_k{}, dst_k{}, dst_q{};
  for (int d = 0; d < rank; ++d) {
    src_k[d] = src.chunk_count(d);
    dst_k[d] = dst.chunk_count(d);
    dst_q[d] = chunk_size(src.shape[d], dst_k[d]);
  }

  detail::check_task_count(src, dst, src_k, dst_q);
  // For each source tile, the destination chunks it meets form a contiguous run along every dim,
  // so the tasks are enumerated directly: the work is proportional to the number of tasks.
  const index_t src_keys = p.src_groups.size();
  for (index_t ks = 0; ks < src_keys; ++ks) {
    if (p.src_groups[ks].empty()) continue;
    box tile;
    tile.rank = rank;
    std::array<index_t, max_rank> first{}, last{}, cur{};
    bool empty = false;
    index_t rem = ks;
    for (int d = rank - 1; d >= 0; --d) {
      index_t j = rem % src_k[d];
      rem /= src_k[d];
      tile.dims[d] = chunk_range(src.shape[d], src_k[d], j);
      if (tile.dims[d].empty()) {
        empty = true;
        break;
      }
      first[d] = tile.dims[d].lo / dst_q[d];
      last[d] = (tile.dims[d].hi - 1) / dst_q[d];
    }
    if (empty) continue;
    cur = first;
    while (true) {
      send_task t;
      t.region.rank = rank;
      index_t kd = 0;
      for (int d = 0; d < rank; ++d) {
        kd = kd * dst_k[d] + cur[d];
        t.region.dims[d] = intersect(tile.dims[d], chunk_range(dst.shape[d], dst_k[d], cur[d]));
      }
      t.bytes = t.region.volume() * options.element_bytes;
      t.src_group = ks;
      t.dst_group = kd;
      p.tasks.push_back(t);
      int d = rank - 1;
      while (d >= 0 && cur[d] == last[d]) cur[d] = first[d], --d;
      if (d < 0) break;
      ++cur[d];
    }
  }
  return p;
}

/// Computes the send tasks between two layouts (static, mixed or dynamic).
template <layout_like Src, layout_like Dst>
constexpr plan make_plan(const Src& src, const Dst& dst, const plan_options& options = {}) {
  static_assert(detail::static_shapes_agree<Src, Dst>(),
                "The source and destination layouts have different static shapes: resharding keeps the tensor's shape.");
  return make_plan(src.value(), dst.value(), options);
}

}  // namespace meshcast

// Resharding a tensor from one spec to another on the logical mesh, and its cost.
//
// For each tensor dim, the axes both specs list first (their common prefix) stay; the rest of the
// source list is removed, the rest of the destination list added. Then:
//   nothing removed, nothing added      -> none (0 s)
//   nothing removed                     -> slice: every device already holds its new shard (0 s)
//   nothing added                       -> all-gather over the removed axes (B = the gathered shard)
//   one dim's removed tail is exactly another dim's added tail, nothing else changes
//                                       -> all-to-all over those axes (B = the shard before)
//   anything else                       -> no single collective covers it: meshcast's plan and
//                                          model decide (reshard_cost.hpp)
// Costs are cached per (shape, source spec, destination spec).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectives.hpp"
#include "reshard_cost.hpp"
#include "sharding.hpp"

namespace meshcast::autoshard {

enum class reshard_kind { none, slice, all_gather, all_to_all, meshcast };

inline const char* reshard_kind_name(reshard_kind k) noexcept {
  switch (k) {
    case reshard_kind::none: return "none";
    case reshard_kind::slice: return "slice";
    case reshard_kind::all_gather: return "all_gather";
    case reshard_kind::all_to_all: return "all_to_all";
    case reshard_kind::meshcast: return "meshcast";
  }
  return "?";
}

struct reshard_cost {
  reshard_kind kind = reshard_kind::none;
  std::vector<int> axes;  ///< the collective's axes (all-gather, all-to-all)
  index_t bytes = 0;      ///< its B
  double seconds = 0;
};

/// Classifies the reshard of canonical specs (same rank); `seconds` is left 0 for kind meshcast.
inline reshard_cost classify_reshard(const mesh_model& m, const std::vector<index_t>& shape, const spec_value& from,
                                     const spec_value& to, index_t element_bytes) {
  reshard_cost r;
  std::vector<std::vector<int>> removed(shape.size()), added(shape.size());
  bool any_removed = false, any_added = false;
  for (int d = 0; d < from.rank; ++d) {
    int c = 0;
    while (c < from.dims[d].axis_count && c < to.dims[d].axis_count && from.dims[d].axes[c] == to.dims[d].axes[c]) ++c;
    for (int k = c; k < from.dims[d].axis_count; ++k) removed[d].push_back(from.dims[d].axes[k]);
    for (int k = c; k < to.dims[d].axis_count; ++k) added[d].push_back(to.dims[d].axes[k]);
    any_removed |= !removed[d].empty();
    any_added |= !added[d].empty();
  }
  if (!any_removed) {
    r.kind = any_added ? reshard_kind::slice : reshard_kind::none;
    return r;
  }
  if (!any_added) {
    r.kind = reshard_kind::all_gather;
    for (const auto& l : removed) r.axes.insert(r.axes.end(), l.begin(), l.end());
    std::sort(r.axes.begin(), r.axes.end());
    r.bytes = local_bytes(shape, to, m, element_bytes);
    r.seconds = collective_seconds(m, collective::all_gather, r.axes, r.bytes);
    return r;
  }
  int from_dim = -1, to_dim = -1, changed_from = 0, changed_to = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (!removed[d].empty()) from_dim = static_cast<int>(d), ++changed_from;
    if (!added[d].empty()) to_dim = static_cast<int>(d), ++changed_to;
  }
  if (changed_from == 1 && changed_to == 1 && from_dim != to_dim && removed[from_dim] == added[to_dim] &&
      static_cast<int>(removed[from_dim].size()) == from.dims[from_dim].axis_count - to.dims[from_dim].axis_count) {
    r.kind = reshard_kind::all_to_all;
    r.axes = removed[from_dim];
    std::sort(r.axes.begin(), r.axes.end());
    r.bytes = local_bytes(shape, from, m, element_bytes);
    r.seconds = collective_seconds(m, collective::all_to_all, r.axes, r.bytes);
    return r;
  }
  r.kind = reshard_kind::meshcast;
  r.bytes = local_bytes(shape, from, m, element_bytes);
  return r;
}

/// Reshard costs on one mesh for one element size, cached. Shapes and specs are interned to small
/// ids so that cost tables can be filled with cheap lookups.
class reshard_model {
 public:
  /// Validates `m` first: the network is built from it (an empty or oversized mesh was read out
  /// of bounds, or allocated 10^10 hosts, before cost_model validated it).
  reshard_model(const mesh_model& m, index_t element_bytes)
      : mesh_(m), element_bytes_(element_bytes), net_(mesh_network((m.validate(), m))) {}

  const mesh_model& mesh() const noexcept { return mesh_; }
  index_t element_bytes() const noexcept { return element_bytes_; }

  int shape_id(const std::vector<index_t>& shape) { return intern(shape_ids_, shapes_, shape, key(shape)); }
  int spec_id(const spec_value& s) { return intern(spec_ids_, specs_, s, s.to_string()); }
  const spec_value& spec(int id) const { return specs_[static_cast<std::size_t>(id)]; }
  const std::vector<index_t>& shape(int id) const { return shapes_[static_cast<std::size_t>(id)]; }

  /// The classified reshard with its seconds (canonical specs).
  reshard_cost cost(const std::vector<index_t>& shape, const spec_value& from, const spec_value& to) {
    reshard_cost r = classify_reshard(mesh_, shape, from, to, element_bytes_);
    if (r.kind == reshard_kind::meshcast) r.seconds = seconds(shape_id(shape), spec_id(from), spec_id(to));
    return r;
  }

  /// Seconds of the reshard between interned specs of an interned shape.
  double seconds(int shape, int from, int to) {
    if (from == to) return 0;
    const std::uint64_t k = (static_cast<std::uint64_t>(shape) << 42) | (static_cast<std::uint64_t>(from) << 21) |
                            static_cast<std::uint64_t>(to);
    auto it = cache_.find(k);
    if (it != cache_.end()) return it->second;
    const std::vector<index_t>& s = shapes_[static_cast<std::size_t>(shape)];
    reshard_cost r = classify_reshard(mesh_, s, specs_[static_cast<std::size_t>(from)],
                                      specs_[static_cast<std::size_t>(to)], element_bytes_);
    double t = r.seconds;
    if (r.kind == reshard_kind::meshcast) {
      t = meshcast_reshard_seconds(mesh_, net_, s, element_bytes_, specs_[static_cast<std::size_t>(from)],
                                   specs_[static_cast<std::size_t>(to)], stop_);
      ++meshcast_plans_;
    }
    cache_.emplace(k, t);
    return t;
  }
  /// Reshards costed from now on throw `time_limit_reached` once `stop` passes (nullptr: no
  /// limit); the caller keeps `stop` alive while it is set.
  void limit_costing(const deadline* stop) noexcept { stop_ = stop; }
  /// How many reshards were costed by meshcast's planner so far (each once).
  std::size_t meshcast_plans() const noexcept { return meshcast_plans_; }

 private:
  static std::string key(const std::vector<index_t>& shape) {
    std::string k;
    for (index_t d : shape) k += std::to_string(d) + 'x';
    return k;
  }
  template <class T>
  static int intern(std::unordered_map<std::string, int>& ids, std::vector<T>& values, const T& v, const std::string& k) {
    auto [it, fresh] = ids.emplace(k, static_cast<int>(values.size()));
    if (fresh) {
      if (values.size() >= (std::size_t{1} << 21)) throw error("too many distinct shapes or specs to cost");
      values.push_back(v);
    }
    return it->second;
  }

  mesh_model mesh_;
  index_t element_bytes_;
  network net_;
  std::unordered_map<std::string, int> shape_ids_, spec_ids_;
  std::vector<std::vector<index_t>> shapes_;
  std::vector<spec_value> specs_;
  std::unordered_map<std::uint64_t, double> cache_;
  std::size_t meshcast_plans_ = 0;
  const deadline* stop_ = nullptr;
};

}  // namespace meshcast::autoshard

// Placement: which global device id each mesh position is, and which host (NIC) each device sits on.
#pragma once

#include <string>
#include <vector>

#include "config.hpp"
#include "detail/filled_vector.hpp"
#include "error.hpp"

namespace meshcast {

/// How destination mesh positions map to global device ids. Source position i is always device i.
struct device_map {
  enum class kind {
    disjoint,  ///< destination device j is N + j: two meshes side by side (the default)
    same,      ///< destination device j is source device j: resharding in place on one mesh
    listed,    ///< destination device j is `dst_ids[j]`: overlapping meshes
  };
  kind how = kind::disjoint;
  std::vector<index_t> dst_ids{};

  static constexpr device_map disjoint() { return {}; }
  static constexpr device_map same() { return {kind::same, {}}; }
  static constexpr device_map listed(std::vector<index_t> ids) { return {kind::listed, std::move(ids)}; }

  /// Global ids of the M destination positions, given N source devices; validates the map.
  constexpr std::vector<index_t> destination_ids(index_t src_count, index_t dst_count) const {
    auto ids = detail::filled_vector<index_t>(static_cast<std::size_t>(dst_count), 0);
    switch (how) {
      case kind::disjoint:
        for (index_t j = 0; j < dst_count; ++j) ids[j] = src_count + j;
        break;
      case kind::same:
        if (src_count != dst_count)
          throw error("same-mesh resharding needs equal device counts, but the source mesh has " +
                      std::to_string(src_count) + " devices and the destination mesh " + std::to_string(dst_count));
        for (index_t j = 0; j < dst_count; ++j) ids[j] = j;
        break;
      case kind::listed: {
        if (static_cast<index_t>(dst_ids.size()) != dst_count)
          throw error("the destination device list has " + std::to_string(dst_ids.size()) +
                      " entries but the destination mesh has " + std::to_string(dst_count) + " devices");
        for (std::size_t j = 0; j < dst_ids.size(); ++j) {
          if (dst_ids[j] < 0) throw error("destination device id " + std::to_string(dst_ids[j]) + " is negative");
          for (std::size_t k = 0; k < j; ++k)
            if (dst_ids[k] == dst_ids[j])
              throw error("destination device id " + std::to_string(dst_ids[j]) + " is listed twice");
          ids[j] = dst_ids[j];
        }
        break;
      }
    }
    return ids;
  }
};

/// Default host of a global device: source devices 0..N-1 fill hosts 0, 1, ... with
/// `devices_per_host` each; devices N, N+1, ... start on the next fresh host.
constexpr index_t default_host_of(index_t device, index_t src_count, index_t devices_per_host) noexcept {
  if (device < src_count) return device / devices_per_host;
  return (src_count + devices_per_host - 1) / devices_per_host + (device - src_count) / devices_per_host;
}

/// Host of every device 0..device_count-1 under the default placement.
inline std::vector<index_t> default_hosts(index_t device_count, index_t src_count, index_t devices_per_host) {
  if (devices_per_host < 1)
    throw error("devices per host must be at least 1, got " + std::to_string(devices_per_host));
  std::vector<index_t> h(static_cast<std::size_t>(device_count));
  for (index_t d = 0; d < device_count; ++d) h[d] = default_host_of(d, src_count, devices_per_host);
  return h;
}

}  // namespace meshcast

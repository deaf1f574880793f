// Placement: which global device id each mesh position is, and which host (NIC) each device sits on.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/detail/filled_vector.hpp"
#include "../core/error.hpp"

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
    if (how == kind::disjoint && src_count + dst_count > max_devices)
      throw error("side by side, the meshes have " + std::to_string(src_count + dst_count) +
                  " devices, more than meshcast::max_devices (" + std::to_string(max_devices) + ")");
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
          if (dst_ids[j] < 0 || dst_ids[j] >= max_devices)
            throw error("destination device id " + std::to_string(dst_ids[j]) + " is outside 0.." +
                        std::to_string(max_devices - 1) + " (meshcast::max_devices)");
          ids[j] = dst_ids[j];
        }
        std::vector<index_t> sorted = ids;  // repeats, in O(M log M) and memory proportional to M
        std::sort(sorted.begin(), sorted.end());
        for (std::size_t j = 1; j < sorted.size(); ++j)
          if (sorted[j] == sorted[j - 1])
            throw error("destination device id " + std::to_string(sorted[j]) + " is listed twice");
        break;
      }
      default:
        throw error("device_map::how holds " + std::to_string(static_cast<int>(how)) +
                    ", which is not disjoint, same or listed");
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
  if (devices_per_host < 1 || devices_per_host > max_devices)
    throw error("devices per host must be in 1.." + std::to_string(max_devices) + ", got " + std::to_string(devices_per_host));
  if (device_count < 0 || device_count > max_devices || src_count < 0 || src_count > device_count)
    throw error("default_hosts: " + std::to_string(device_count) + " devices with " + std::to_string(src_count) +
                " sources is not a valid placement");
  std::vector<index_t> h(static_cast<std::size_t>(device_count));
  for (index_t d = 0; d < device_count; ++d) h[d] = default_host_of(d, src_count, devices_per_host);
  return h;
}

}  // namespace meshcast

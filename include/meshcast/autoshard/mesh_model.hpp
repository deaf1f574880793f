// The logical mesh automatic sharding costs against: mesh axes with a bandwidth and a latency
// each (the alpha-beta model of Alpa's intra-operator pass), a device speed, and an optional
// per-device memory limit.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "checked.hpp"
#include "../core/detail/number_text.hpp"

namespace meshcast::autoshard {

/// Most mesh axes automatic sharding accepts (the strategy count grows quickly with more).
inline constexpr int max_mesh_axes = 4;
/// Most devices automatic sharding accepts (the resharding plans it costs grow with them).
inline constexpr index_t max_mesh_devices = 4096;

struct mesh_model {
  std::vector<index_t> sizes;        ///< devices along each mesh axis
  std::vector<double> bandwidth;     ///< bytes per second along each axis (per device)
  std::vector<double> latency;       ///< seconds per step along each axis
  double device_flops = 100e12;      ///< floating-point operations per second of one device
  double memory_bytes = std::numeric_limits<double>::infinity();  ///< per device; infinity: no limit

  int rank() const noexcept { return static_cast<int>(sizes.size()); }
  /// The device count of a validated mesh (validate() checks the product).
  index_t devices() const noexcept {
    index_t n = 1;
    for (index_t s : sizes) n *= s;
    return n;
  }

  /// Every axis alike.
  static mesh_model uniform(std::vector<index_t> sizes, double bytes_per_s, double latency_s) {
    mesh_model m;
    m.bandwidth.assign(sizes.size(), bytes_per_s);
    m.latency.assign(sizes.size(), latency_s);
    m.sizes = std::move(sizes);
    m.validate();
    return m;
  }

  /// Throws `meshcast::error` naming the first bad value.
  void validate() const {
    if (sizes.empty() || sizes.size() > static_cast<std::size_t>(max_mesh_axes))
      throw error("mesh: automatic sharding takes 1 to " + std::to_string(max_mesh_axes) + " mesh axes, got " +
                  std::to_string(sizes.size()));
    index_t n = 1;
    for (std::size_t a = 0; a < sizes.size(); ++a) {
      if (sizes[a] < 1) throw error("mesh: axis " + std::to_string(a) + " has size " + std::to_string(sizes[a]));
      n = checked_mul(n, sizes[a], "mesh device count");
    }
    if (n > max_mesh_devices)
      throw error("mesh: " + std::to_string(n) + " devices; automatic sharding takes at most " +
                  std::to_string(max_mesh_devices));
    if (bandwidth.size() != sizes.size())
      throw error("mesh: " + std::to_string(bandwidth.size()) + " axis bandwidths for " + std::to_string(sizes.size()) +
                  " mesh axes");
    if (latency.size() != sizes.size())
      throw error("mesh: " + std::to_string(latency.size()) + " axis latencies for " + std::to_string(sizes.size()) +
                  " mesh axes");
    for (std::size_t a = 0; a < sizes.size(); ++a) {
      checked_real(bandwidth[a], 0, true, "bandwidth of mesh axis " + std::to_string(a));
      checked_real(latency[a], 0, false, "latency of mesh axis " + std::to_string(a));
    }
    checked_real(device_flops, 0, true, "device flops");
    if (!(memory_bytes > 0)) throw error("memory limit must be positive, got " + meshcast::detail::number(memory_bytes));
  }
};

}  // namespace meshcast::autoshard

// What the one-call reshard needs to know besides the layouts and buffers, for every transport.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../core/detail/deadline.hpp"
#include "../model/execution.hpp"
#include "../model/network.hpp"
#include "../layout/placement.hpp"
#include "../plan/staging.hpp"

namespace meshcast {

struct reshard_options {
  /// Where the destination devices are: beside the source devices (the default), the same
  /// devices (`device_map::same()`, resharding in place) or listed.
  device_map devices = device_map::disjoint();
  /// Devices per host for the network model; 0 (the default) takes each rank's host from the
  /// communicator (the ranks that share memory, MPI_COMM_TYPE_SHARED).
  index_t devices_per_host = 0;
  /// The host of every device, given outright (a manifest's d / devices_per_host); overrides
  /// `devices_per_host` when not empty.
  std::vector<index_t> host_of{};
  /// How the schedule runs (see execution.hpp); the solver optimises that mode's model.
  execution mode = execution::ordered;
  /// Let several replicas of a region send slices of it.
  bool split_replicas = true;
  /// The network model: NIC line rate and the payload fraction the transport gets of it,
  /// intra-host link, per-transfer latency, NICs per host.
  double nic_gbps = 100, nic_efficiency = 1, intra_gbps = 800, latency_us = 10;
  int nics_per_host = 1;
  /// Solver time limit and seed (the schedule is made once, on rank 0, and shared).
  double time_limit_s = 1.0;
  std::uint64_t seed = 1;
  /// Longest wait on other ranks without progress before every rank fails with an error.
  double timeout_s = 60;
  /// No rank holds more than this many bytes of message buffers (packing, receiving, forwarding)
  /// at once beyond its shards; tasks are cut to half of it before they are scheduled
  /// (staging.hpp). 0: no cap.
  std::size_t max_staging_bytes = default_max_staging_bytes;
  /// Let a batch's messages between two devices travel together, in buckets sized to the network
  /// (bucket.hpp), where that shortens the prediction.
  bool buckets = true;
};

/// The network model the options describe, for devices on hosts `host_of`.
inline network network_from(const reshard_options& o, std::vector<index_t> host_of) {
  return network::uniform(std::move(host_of), network::gbit_per_s(o.nic_gbps), network::gbit_per_s(o.intra_gbps),
                          o.latency_us * 1e-6, o.nics_per_host)
      .with_payload_fraction(o.nic_efficiency);
}

namespace detail {
/// FNV-1a of everything every rank must agree on before a collective reshard.
inline std::uint64_t agreement_key(const layout_value& src, const layout_value& dst, std::size_t element_bytes,
                                   const reshard_options& o, const std::string& policies) {
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&](std::int64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ static_cast<std::uint8_t>(v >> (8 * i))) * 1099511628211ULL;
  };
  for (const layout_value* l : {&src, &dst}) {
    mix(l->mesh.rank), mix(l->shape.rank), mix(l->spec.rank);
    for (int d = 0; d < l->mesh.rank; ++d) mix(l->mesh[d]);
    for (int d = 0; d < l->shape.rank; ++d) mix(l->shape[d]);
    for (int d = 0; d < l->spec.rank; ++d) {
      mix(-1 - l->spec.dims[d].axis_count);
      for (int a = 0; a < l->spec.dims[d].axis_count; ++a) mix(l->spec.dims[d].axes[a]);
    }
  }
  mix(static_cast<std::int64_t>(element_bytes));
  mix(static_cast<std::int64_t>(o.devices.how));
  for (index_t d : o.devices.dst_ids) mix(d);
  mix(o.devices_per_host), mix(static_cast<std::int64_t>(o.mode)), mix(o.split_replicas), mix(o.nics_per_host);
  mix(static_cast<std::int64_t>(o.max_staging_bytes)), mix(o.buckets);
  for (index_t h : o.host_of) mix(h);
  mix(static_cast<std::int64_t>(o.seed));
  for (char c : policies) mix(c);
  return h;
}
}  // namespace detail

}  // namespace meshcast

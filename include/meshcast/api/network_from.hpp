// The network model a reshard's options describe (NIC and intra-host rates, latency, NICs per
// host), for devices on given hosts.
#pragma once

#include <vector>

#include "../core/config.hpp"
#include "../model/network.hpp"
#include "reshard_options.hpp"

namespace meshcast {

/// The network model the options describe, for devices on hosts `host_of`.
inline network network_from(const reshard_options& o, std::vector<index_t> host_of) {
  return network::uniform(std::move(host_of), network::gbit_per_s(o.nic_gbps), network::gbit_per_s(o.intra_gbps),
                          o.latency_us * 1e-6, o.nics_per_host)
      .with_payload_fraction(o.nic_efficiency);
}

}  // namespace meshcast

// The network model: hosts with full-duplex NICs, an intra-host link and a per-message latency.
//
// Every host NIC direction is a "port" that carries one operation at a time in the ordered model.
// Device d uses NIC (d's position among its host's devices) mod (the host's NIC count), the usual
// rail-style pairing of GPUs and NICs.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/detail/number_text.hpp"

namespace meshcast {

/// NICs of one host; bandwidths are per NIC, in bytes per second.
struct host_nics {
  int count = 1;
  double egress_bps = 0;
  double ingress_bps = 0;
};

class network {
 public:
  /// Bandwidths lie in [min_bandwidth_bps, max_bandwidth_bps] bytes per second and latencies in
  /// [0, max_latency_s]: every duration the model computes is then finite.
  static constexpr double min_bandwidth_bps = 1;
  static constexpr double max_bandwidth_bps = 1e15;  // 8 Pbit/s
  static constexpr double max_latency_s = 3600;
  /// The least payload fraction: below it no transport moves data, and durations grow absurd.
  static constexpr double min_payload_fraction = 1e-3;

  network() = default;

  /// `host_of[d]` is the host of device d; `hosts[h]` its NICs. Throws on a bad description.
  network(std::vector<index_t> host_of, std::vector<host_nics> hosts, double intra_bps, double latency_s)
      : host_of_(std::move(host_of)), hosts_(std::move(hosts)), intra_bps_(intra_bps), latency_s_(latency_s) {
    check_bandwidth(intra_bps_, "the intra-host bandwidth");
    if (!(latency_s_ >= 0 && latency_s_ <= max_latency_s))
      throw error("the latency (" + detail::number(latency_s_) + " s) must be a number in [0, " +
                  detail::number(max_latency_s) + "] seconds");
    if (host_of_.size() > static_cast<std::size_t>(max_devices) || hosts_.size() > static_cast<std::size_t>(max_devices))
      throw error("a network may describe at most meshcast::max_devices devices and hosts");
    // Bounds and solvers walk every host: more hosts than devices would make their cost grow with
    // the largest host id instead of with the devices.
    if (hosts_.size() > std::max<std::size_t>(host_of_.size(), 1))
      throw error("the network describes " + std::to_string(hosts_.size()) + " hosts for " + std::to_string(host_of_.size()) +
                  " devices; number hosts densely, at most one per device");
    for (std::size_t h = 0; h < hosts_.size(); ++h) {
      if (hosts_[h].count < 1 || hosts_[h].count > max_nics_per_host)
        throw error("host " + std::to_string(h) + " has " + std::to_string(hosts_[h].count) + " NICs; a host has 1.." +
                    std::to_string(max_nics_per_host));
      check_bandwidth(hosts_[h].egress_bps, "the egress bandwidth of host " + std::to_string(h));
      check_bandwidth(hosts_[h].ingress_bps, "the ingress bandwidth of host " + std::to_string(h));
    }
    port_base_.assign(hosts_.size() + 1, 0);
    for (std::size_t h = 0; h < hosts_.size(); ++h) port_base_[h + 1] = port_base_[h] + hosts_[h].count;
    port_of_.assign(host_of_.size(), 0);
    std::vector<int> seen(hosts_.size(), 0);
    for (std::size_t d = 0; d < host_of_.size(); ++d) {
      index_t h = host_of_[d];
      if (h < 0 || h >= static_cast<index_t>(hosts_.size()))
        throw error("device " + std::to_string(d) + " is on host " + std::to_string(h) + ", which is not described");
      port_of_[d] = port_base_[h] + seen[h]++ % hosts_[h].count;
    }
  }

  /// Every host alike: `nics` NICs of `nic_bps` each way.
  static network uniform(std::vector<index_t> host_of, double nic_bps, double intra_bps, double latency_s,
                         int nics = 1) {
    for (std::size_t d = 0; d < host_of.size(); ++d)  // before counting hosts by the largest id
      if (host_of[d] < 0)
        throw error("device " + std::to_string(d) + " is on host " + std::to_string(host_of[d]) + ": hosts are numbered from 0");
    index_t hosts = host_of.empty() ? 0 : *std::max_element(host_of.begin(), host_of.end()) + 1;
    if (hosts > max_devices) throw error("a network may have at most meshcast::max_devices hosts");
    if (hosts > std::max<index_t>(static_cast<index_t>(host_of.size()), 1))
      throw error("device " + std::to_string(std::max_element(host_of.begin(), host_of.end()) - host_of.begin()) +
                  " is on host " + std::to_string(hosts - 1) + " but the network has " + std::to_string(host_of.size()) +
                  " devices; number hosts densely (0, 1, ...), at most one per device");
    return network(std::move(host_of), std::vector<host_nics>(hosts, {nics, nic_bps, nic_bps}), intra_bps, latency_s);
  }
  /// Alpa's testbed: 4 GPUs per host, one 10 Gbit/s NIC, NVLink-class links inside a host.
  static network alpa_testbed(std::vector<index_t> host_of) {
    return uniform(std::move(host_of), gbit_per_s(10), 100e9, 10e-6, 1);
  }
  /// A current cluster: 8 GPUs per host, one 400 Gbit/s NIC per GPU, NVLink 4.
  static network current(std::vector<index_t> host_of) {
    return uniform(std::move(host_of), gbit_per_s(400), 450e9, 5e-6, 8);
  }
  static constexpr double gbit_per_s(double gbit) { return gbit * 1e9 / 8; }

  index_t device_count() const noexcept { return static_cast<index_t>(host_of_.size()); }
  /// Throws unless this network describes every device of a plan of `devices` devices.
  void check_describes(index_t devices) const {
    if (device_count() < devices)
      throw error("the network describes " + std::to_string(device_count()) + " devices but a plan uses " +
                  std::to_string(devices));
  }
  index_t host_count() const noexcept { return static_cast<index_t>(hosts_.size()); }
  int port_count() const noexcept { return port_base_.empty() ? 0 : port_base_.back(); }
  index_t host_of(index_t device) const noexcept { return host_of_[device]; }
  int port_of(index_t device) const noexcept { return port_of_[device]; }
  index_t port_host(int port) const noexcept {
    return static_cast<index_t>(std::upper_bound(port_base_.begin(), port_base_.end(), port) - port_base_.begin()) - 1;
  }
  /// Rates the model moves payload at: a NIC's line rate times the payload fraction.
  double egress_bps(int port) const noexcept { return hosts_[port_host(port)].egress_bps * payload_fraction_; }
  double ingress_bps(int port) const noexcept { return hosts_[port_host(port)].ingress_bps * payload_fraction_; }
  double host_egress_bps(index_t h) const noexcept { return egress_bps(first_port(h)) * hosts_[h].count; }
  double host_ingress_bps(index_t h) const noexcept { return ingress_bps(first_port(h)) * hosts_[h].count; }
  /// A host's line rates over all its NICs: the physical limit, whatever the transport.
  double host_line_egress_bps(index_t h) const noexcept { return hosts_[h].egress_bps * hosts_[h].count; }
  double host_line_ingress_bps(index_t h) const noexcept { return hosts_[h].ingress_bps * hosts_[h].count; }
  /// The fraction of a NIC's line rate that carries payload (1 by default). A transport's
  /// framing costs some: TCP/IPv4 with timestamps over Ethernet carries 1448 payload bytes in
  /// 1538 on the wire (0.94); measure it (bench/calibrate.cpp) rather than guess.
  double payload_fraction() const noexcept { return payload_fraction_; }
  network& with_payload_fraction(double f) {
    if (!(f >= min_payload_fraction && f <= 1))
      throw error("the payload fraction (" + detail::number(f) + ") must be a number in [" + detail::number(min_payload_fraction) +
                  ", 1]");
    payload_fraction_ = f;
    return *this;
  }
  /// The transport sends messages of up to this many bytes eagerly (0: none, as NCCL), and the
  /// ordered executor then waits for the receiver's acknowledgement (connections.hpp).
  index_t eager_bytes() const noexcept { return eager_bytes_; }
  network& with_eager_bytes(index_t bytes) {
    if (bytes < 0) throw error("the eager limit (" + std::to_string(bytes) + " bytes) must not be negative");
    eager_bytes_ = bytes;
    return *this;
  }
  int first_port(index_t h) const noexcept { return port_base_[h]; }
  int nic_count(index_t h) const noexcept { return hosts_[h].count; }
  double intra_bps() const noexcept { return intra_bps_; }
  double latency_s() const noexcept { return latency_s_; }
  const std::vector<index_t>& hosts() const noexcept { return host_of_; }

  /// Time of a point-to-point transfer of `bytes` from device s to device r on an idle network.
  double transfer_time(index_t s, index_t r, index_t bytes) const noexcept {
    if (s == r) return static_cast<double>(bytes) / intra_bps_;  // a local copy
    if (host_of_[s] == host_of_[r]) return latency_s_ + static_cast<double>(bytes) / intra_bps_;
    double bw = std::min(egress_bps(port_of_[s]), ingress_bps(port_of_[r]));
    return latency_s_ + static_cast<double>(bytes) / bw;
  }

 private:
  static void check_bandwidth(double bps, const std::string& what) {
    if (!(bps >= min_bandwidth_bps && bps <= max_bandwidth_bps))
      throw error(what + " (" + detail::number(bps) + " bytes/s) must be a number in [1, 1e15] bytes/s");
  }
  std::vector<index_t> host_of_;
  std::vector<host_nics> hosts_;
  double intra_bps_ = 1;
  double latency_s_ = 0;
  double payload_fraction_ = 1;
  index_t eager_bytes_ = 0;
  std::vector<int> port_base_;
  std::vector<int> port_of_;
};

}  // namespace meshcast

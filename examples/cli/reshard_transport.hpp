// meshcast-reshard's reading of UCX's environment: eager sends for concurrent runs, TCP's payload
// fraction of the line rate for the model, and UCX's eager limit.
#pragma once

#include <cctype>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include <meshcast/meshcast.hpp>

namespace meshcast::cli::reshard_detail {

// UCX's eager limit as UCX_RNDV_THRESH gives it ("1mb", "65536", "64k", "inf"); nothing when it
// is not set, "auto" or unreadable.
inline std::optional<index_t> ucx_threshold_bytes() {
  const char* v = std::getenv("UCX_RNDV_THRESH");
  if (!v) return std::nullopt;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "inf") return index_t{1} << 40;
  std::size_t used = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(s, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = s.substr(used);
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  const unsigned long long scale = unit.empty() ? 1 : unit == "k" ? 1ull << 10 : unit == "m" ? 1ull << 20 : unit == "g" ? 1ull << 30 : 0;
  if (scale == 0 || n > (1ull << 40) / scale) return std::nullopt;
  return static_cast<index_t>(n * scale);
}

// The eager limit as the user or the cluster set it, read before concurrent runs raise it.
inline std::optional<index_t> ucx_eager_as_set = ucx_threshold_bytes();
inline std::optional<index_t> ucx_eager_bytes() { return ucx_eager_as_set; }

// Over TCP, a UCX rendezvous (a message above UCX_RNDV_THRESH) starts with a handshake that waits
// behind whatever its peer is already sending on the same connection. Concurrent mode posts the two
// directions of a pair at once (a transpose does little else), so a handshake could wait out a
// whole transfer: on the emulated cluster's transposes, concurrent runs measured 1.16-1.49 of the
// model with the 1 MiB threshold and 0.97-1.24 with everything up to 64 MiB eager. So a concurrent
// run sends eagerly up to 64 MiB unless the user set a threshold (scripts/cluster.sh's default,
// marked by MC_CLUSTER_RNDV_DEFAULT=1, is not a choice). Ordered mode keeps the threshold: its sends
// up to mpi_backend's eager limit are acknowledged, and an acknowledgement queued behind a whole
// eager transfer in the other direction would stall the next one (measured 1.3-1.7 of the model).
inline void concurrent_runs_send_eagerly(int argc, char** argv) {
  bool concurrent = false;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string_view(argv[i]) == "--mode") concurrent = std::string_view(argv[i + 1]) == "concurrent";
  const char* chosen = std::getenv("UCX_RNDV_THRESH");
  const char* cluster_default = std::getenv("MC_CLUSTER_RNDV_DEFAULT");
  const bool user_chose = chosen && !(cluster_default && std::string_view(cluster_default) == "1");
  ucx_eager_as_set = ucx_threshold_bytes();
  if (concurrent && !user_chose) ::setenv("UCX_RNDV_THRESH", "64mb", 1);
}

// The payload fraction of the line rate where the run's data goes over TCP/IPv4 and Ethernet (UCX
// limited to TCP, as scripts/cluster.sh sets it): a full frame of MTU + 14 bytes carries MTU - 52
// bytes of payload (IP and TCP headers with timestamps), 1448 of 1514 at MTU 1500. The MTU is that
// of UCX's first NIC (UCX_NET_DEVICES), 1500 when it cannot be read. None for other transports.
struct payload_fraction {
  double value = 1;
  std::string from;
};
inline std::optional<payload_fraction> tcp_payload_fraction() {
  const char* tls = std::getenv("UCX_TLS");
  if (!tls) return std::nullopt;
  bool tcp = false;
  for (std::string_view rest = tls; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    const std::string_view t = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (t == "tcp") tcp = true;
    else if (t != "self" && t != "sm" && t != "shm" && t != "posix" && t != "sysv" && t != "cma" && t != "knem" &&
             t != "xpmem")
      return std::nullopt;  // a transport that may carry the data another way
  }
  if (!tcp) return std::nullopt;
  std::string device = "eth0";
  if (const char* d = std::getenv("UCX_NET_DEVICES")) {
    device = std::string(d).substr(0, std::string(d).find_first_of(",:"));
    if (device.empty() || device == "all" || device.find('/') != std::string::npos) device.clear();
  }
  long mtu = 1500;
  if (!device.empty()) {
    std::ifstream in("/sys/class/net/" + device + "/mtu");
    long m = 0;
    if (in >> m && m >= 576 && m <= 65536) mtu = m;
  }
  return payload_fraction{static_cast<double>(mtu - 52) / static_cast<double>(mtu + 14),
                          "TCP over Ethernet, MTU " + std::to_string(mtu)};
}


}  // namespace meshcast::cli::reshard_detail

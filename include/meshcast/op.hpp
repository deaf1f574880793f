// Operations: the transfers a schedule issues, and the resources each one occupies.
#pragma once

#include <vector>

#include "box.hpp"

namespace meshcast {

/// Resources of the ordered model, each carrying one operation at a time: the egress and the
/// ingress direction of every NIC port, then every device's stream.
struct resource_space {
  int ports = 0;
  index_t devices = 0;
  constexpr int egress(int port) const noexcept { return port; }
  constexpr int ingress(int port) const noexcept { return ports + port; }
  constexpr int stream(index_t device) const noexcept { return 2 * ports + static_cast<int>(device); }
  constexpr int size() const noexcept { return 2 * ports + static_cast<int>(devices); }
  constexpr bool is_port(int resource) const noexcept { return resource < 2 * ports; }
};

/// One transfer: `sender` sends `region` (`bytes`) to every device in `receivers`.
struct op {
  index_t task = 0;  ///< plan task the region belongs to
  /// Where the op comes from in its instance: unit, option of that unit, and position among the
  /// option's ops (-1 when the op was made outside an instance). `solve` checks a solver's
  /// answer against these.
  index_t unit = -1;
  int option = -1;
  int part = -1;
  box region;
  index_t bytes = 0;
  index_t sender = 0;
  std::vector<index_t> receivers;
  std::vector<index_t> egress_hosts;   ///< hosts whose NIC sends for this op (chain forwarders too)
  std::vector<index_t> ingress_hosts;  ///< hosts whose NIC receives for this op
  std::vector<int> resources;          ///< ports and streams occupied, see resource_space
  double duration = 0;                 ///< on an otherwise idle network
  int after = -1;  ///< op of the same option that must finish first (its index there), or -1
  double start = 0, end = 0;  ///< set when the op is placed in a schedule

  bool uses_nic(const resource_space& rs) const noexcept {
    for (int r : resources)
      if (rs.is_port(r)) return true;
    return false;
  }
};

}  // namespace meshcast

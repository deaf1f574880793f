// What a reshard that no single collective covers costs: meshcast's own plan, scheduled on a
// network derived from the logical mesh, under meshcast's ordered model. This is the one place
// automatic sharding asks meshcast's planner and model for a cost; re-point it here.
//
// The network of a logical mesh (devices numbered row-major, as layouts number them):
//   - the last mesh axis lies inside a host: devices_per_host = its size, and the intra-host link
//     has that axis's bandwidth;
//   - every other axis crosses hosts: each device has its own NIC (rail style), whose bandwidth
//     each way is the smallest bandwidth of those axes;
//   - one per-message latency: the largest latency of any axis.
//   A 1-D mesh is one host.
// The schedule: plan with device_map::same() (resharding in place), strategy send_recv with
// replica splitting, solver greedy with its time-bounded local search switched off, so that the
// cost of a reshard is deterministic (the list schedules alone; the local search rarely moves
// them on these small plans).
#pragma once

#include <algorithm>
#include <vector>

#include "../schedule/instance.hpp"
#include "../layout/layout.hpp"
#include "../model/network.hpp"
#include "../plan/plan.hpp"
#include "../schedule/solve.hpp"
#include "../schedule/solver/greedy.hpp"
#include "../schedule/strategy/send_recv.hpp"
#include "mesh_model.hpp"

namespace meshcast::autoshard {

/// The network meshcast's model schedules a reshard on (see the mapping above).
inline network mesh_network(const mesh_model& m) {
  const index_t n = m.devices();
  const index_t per_host = m.sizes.back();
  double nic = m.bandwidth.back(), latency = 0;
  for (int a = 0; a + 1 < m.rank(); ++a) nic = a == 0 ? m.bandwidth[a] : std::min(nic, m.bandwidth[a]);
  for (double l : m.latency) latency = std::max(latency, l);
  std::vector<index_t> host_of(static_cast<std::size_t>(n));
  for (index_t d = 0; d < n; ++d) host_of[d] = d / per_host;
  return network::uniform(std::move(host_of), nic, m.bandwidth.back(), latency, static_cast<int>(per_host));
}

/// Seconds meshcast's plan and model predict for resharding a tensor of `shape` from `from` to
/// `to` in place on the mesh.
inline double meshcast_reshard_seconds(const mesh_model& m, const network& net, const std::vector<index_t>& shape,
                                       index_t element_bytes, const spec_value& from, const spec_value& to) {
  extents_value mesh, s;
  mesh.rank = m.rank();
  for (int a = 0; a < m.rank(); ++a) mesh.values[a] = m.sizes[a];
  s.rank = static_cast<int>(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) s.values[d] = shape[d];
  const plan p = make_plan(layout_value{mesh, from, s}, layout_value{mesh, to, s},
                           {.element_bytes = element_bytes, .devices = device_map::same()});
  const instance in = make_instance(p, net, send_recv{}, true);
  meshcast::greedy g;
  g.search_limit_s = 0;
  return solve(in, g).makespan_s;
}

}  // namespace meshcast::autoshard

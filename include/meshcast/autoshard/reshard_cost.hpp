// What a reshard that no single collective covers costs: meshcast's own plan, scheduled on a
// network derived from the logical mesh, under meshcast's ordered model. This is the one place
// automatic sharding asks meshcast's planner and model for a cost; re-point it here.
//
// The network of a logical mesh (devices numbered row-major, as layouts number them):
//   - the last mesh axis lies inside a host: devices_per_host = its size, and the intra-host link
//     has that axis's bandwidth;
//   - every other axis crosses hosts: each device has its own NIC (rail style), whose bandwidth
//     each way is the smallest bandwidth of those axes (a host has at most max_nics_per_host
//     NICs: beyond that, devices share them);
//   - one per-message latency: the largest latency of any axis.
//   A 1-D mesh is one host.
// The schedule: plan with device_map::same() (resharding in place), strategy send_recv with
// replica splitting, solver greedy with its time-bounded local search switched off, so that the
// cost of a reshard is deterministic (the list schedules alone; the local search rarely moves
// them on these small plans).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "../schedule/instance.hpp"
#include "../layout/layout.hpp"
#include "../core/detail/number_text.hpp"
#include "../core/extents.hpp"
#include "../model/network.hpp"
#include "../plan/plan.hpp"
#include "../schedule/solve.hpp"
#include "../schedule/solver/greedy.hpp"
#include "../schedule/strategy/send_recv.hpp"
#include "mesh_model.hpp"
#include "problem.hpp"

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
  const int nics = static_cast<int>(std::min<index_t>(per_host, max_nics_per_host));
  return network::uniform(std::move(host_of), nic, m.bandwidth.back(), latency, nics);
}

/// Most (task, sender, receiver) triples automatic sharding lets one costed reshard have: its plan,
/// instance (replicas split) and schedule take 1.5-2.4 KB a triple (1.6 GB for 32x32 S0,R -> R,S1,
/// 2.5 GB for 32x32 S01,R -> R,S10, both 2^20), and a 64x64 mesh could ask for 2^24 of them,
/// more memory than most machines have.
inline constexpr double max_costed_pairs = 1 << 20;

/// An upper bound on the (task, sender, receiver) triples of a reshard between `from` and `to` of
/// a tensor of `shape` on mesh `m`: along each dim, the source's and the destination's chunk
/// boundaries cut it into at most (source chunks + destination chunks - 1) pieces, a task is one
/// piece per dim, and its senders and receivers are the replicas of its source and destination
/// chunks (the devices along the mesh axes the spec leaves out).
inline double pair_bound(const mesh_model& m, const std::vector<index_t>& shape, const spec_value& from,
                         const spec_value& to) {
  auto split = [&](const spec_value& s, std::size_t d) {
    double k = 1;
    for (int a = 0; a < s.dims[d].axis_count; ++a) k *= static_cast<double>(m.sizes[s.dims[d].axes[a]]);
    return k;
  };
  double bound = static_cast<double>(m.devices()) * static_cast<double>(m.devices());  // replicas of both sides
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const double f = split(from, d), t = split(to, d), n = static_cast<double>(shape[d]);
    bound = bound / f / t * std::max(0.0, std::min(f, n) + std::min(t, n) - 1);
  }
  return bound;
}

/// Seconds meshcast's plan and model predict for resharding a tensor of `shape` from `from` to
/// `to` in place on the mesh. Throws `meshcast::error` when it could pass max_costed_pairs, and
/// `time_limit_reached` once `stop` (if given) passes: a cost is the whole list schedule's or none,
/// never one cut short by the clock.
inline double meshcast_reshard_seconds(const mesh_model& m, const network& net, const std::vector<index_t>& shape,
                                       index_t element_bytes, const spec_value& from, const spec_value& to,
                                       const deadline* stop = nullptr) {
  if (const double pairs = pair_bound(m, shape, from, to); pairs > max_costed_pairs) {
    throw error("costing the reshard of a " + meshcast::detail::describe_extents(shape) + " tensor from " +
                from.to_string() + " to " + to.to_string() + " on mesh " + meshcast::detail::describe_extents(m.sizes) +
                " could take up to " + meshcast::detail::number(pairs) +
                " (send task, sender, receiver) triples, more than the " + meshcast::detail::number(max_costed_pairs) +
                " automatic sharding costs (about 1.5-2.4 KB each): use a mesh with fewer devices");
  }
  extents_value mesh, s;
  mesh.rank = m.rank();
  for (int a = 0; a < m.rank(); ++a) mesh.values[a] = m.sizes[a];
  s.rank = static_cast<int>(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) s.values[d] = shape[d];
  auto p = std::make_shared<const plan>(make_plan(layout_value{mesh, from, s}, layout_value{mesh, to, s},
                                                  {.element_bytes = element_bytes, .devices = device_map::same()}));
  meshcast::greedy g;
  g.search_limit_s = 0;
  try {
    const instance in = make_instance(std::move(p), std::make_shared<const network>(net), send_recv{},
                                      {.split_replicas = true, .stop = stop});
    // The greedy's own limit as without a deadline, cut to the time left (then `stop` throws).
    // solve()'s steps, less the bounds a cost does not need, the deadline checked between them.
    solver_options options;
    if (stop) options.time_limit_s = std::min(options.time_limit_s, stop->left_s());
    solver_result r = g.solve(in, options);
    if (stop) stop->check("costing reshards between specs");
    validate_solution(in, r.ops, meshcast::greedy::name);
    schedule scheduled = make_schedule(in, std::move(r.ops));
    simulate(scheduled, *in.net, in.resources);
    if (stop) stop->check("costing reshards between specs");
    return scheduled.makespan_s;
  } catch (const time_limit_reached&) {
    stop->check("costing reshards between specs");  // only a deadline given throws it
    throw;
  }
}

}  // namespace meshcast::autoshard

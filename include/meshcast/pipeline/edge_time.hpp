// The time of a stage-to-stage transfer given as a tensor: the predicted time of resharding it
// from the sending stage's mesh to the receiving stage's mesh. One function, built on meshcast's
// own plan and model (the two stages' meshes are different device sets: `device_map::disjoint`),
// so that a change of the model changes every pipeline that uses it.
#pragma once

#include <string>

#include "../layout.hpp"
#include "../network.hpp"
#include "../placement.hpp"
#include "../plan.hpp"
#include "../solve.hpp"
#include "../solver/greedy.hpp"
#include "../strategies.hpp"
#include "description.hpp"

namespace meshcast::pipeline {

/// A tensor that one stage's mesh sends to another's.
struct tensor_edge {
  dynamic_shape shape;
  index_t element_bytes = 4;
  dynamic_mesh src_mesh;
  dynamic_spec src_spec;
  dynamic_mesh dst_mesh;
  dynamic_spec dst_spec;
};

/// The network the reshards cross (the "network" object of the pipeline JSON).
struct network_model {
  double nic_gbps = 10;          ///< per NIC and direction, Gbit/s
  double intra_gbps = 800;       ///< intra-host link, Gbit/s
  double latency_us = 10;        ///< per message
  int nics_per_host = 1;
  index_t devices_per_host = 0;  ///< 0: the size of the source mesh's last axis
  std::string strategy = "send_recv";
  bool split_replicas = false;
};

/// Most devices a stage mesh may have in a tensor edge, and most the two meshes may have
/// multiplied (bounds the plan's size and the solver's time).
inline constexpr index_t max_edge_mesh_devices = 1024;
inline constexpr index_t max_edge_mesh_product = 65536;

/// Predicted time, in seconds, of resharding `t` from its source mesh (devices 0..N-1) to its
/// destination mesh (devices N..N+M-1, starting on a fresh host), or back when `backward`
/// (gradients: destination layout to source layout): meshcast's plan, `net`'s strategy, and
/// greedy's schedule under the ordered model. Throws `meshcast::error` for a bad tensor or network.
inline double reshard_time_s(const tensor_edge& t, const network_model& net, bool backward = false) {
  index_t product = 1;
  for (const dynamic_mesh* m : {&t.src_mesh, &t.dst_mesh}) {
    index_t devices = 1;
    for (int i = 0; i < m->rank(); ++i) devices = detail::checked_mul(devices, m->extent(i), "the mesh size");
    if (devices > max_edge_mesh_devices)
      throw error("a mesh of " + std::to_string(devices) + " devices exceeds the limit of " +
                  std::to_string(max_edge_mesh_devices));
    product *= devices;
  }
  if (product > max_edge_mesh_product)
    throw error("meshes of " + std::to_string(t.src_mesh.size()) + " and " + std::to_string(t.dst_mesh.size()) +
                " devices exceed the limit of " + std::to_string(max_edge_mesh_product) + " for their product");
  index_t bytes = t.element_bytes;
  for (int i = 0; i < t.shape.rank(); ++i) bytes = detail::checked_mul(bytes, t.shape.extent(i), "the tensor's size in bytes");
  if (!(net.nic_gbps > 0) || !(net.intra_gbps > 0) || !(net.latency_us >= 0) || net.nics_per_host < 1)
    throw error("network: nic_gbps and intra_gbps must be positive, latency_us >= 0, nics_per_host >= 1");
  dynamic_layout src(t.src_mesh, t.src_spec, t.shape), dst(t.dst_mesh, t.dst_spec, t.shape);
  plan_options o;
  o.element_bytes = t.element_bytes;
  o.devices = device_map::disjoint();
  const plan p = backward ? make_plan(dst, src, o) : make_plan(src, dst, o);
  const dynamic_mesh& sender_mesh = backward ? t.dst_mesh : t.src_mesh;
  const index_t per_host =
      net.devices_per_host > 0 ? net.devices_per_host : t.src_mesh.extent(t.src_mesh.rank() - 1);
  const network model = network::uniform(default_hosts(p.device_count, sender_mesh.size(), per_host),
                                         network::gbit_per_s(net.nic_gbps), network::gbit_per_s(net.intra_gbps),
                                         net.latency_us * 1e-6, net.nics_per_host);
  return visit_strategy(net.strategy, [&](auto strategy) {
    const instance in = make_instance(p, model, strategy, net.split_replicas);
    return solve(in, greedy{}).makespan_s;
  });
}

}  // namespace meshcast::pipeline

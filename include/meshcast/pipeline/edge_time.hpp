// The time of a stage-to-stage transfer given as a tensor: the predicted time of resharding it
// from the sending stage's mesh to the receiving stage's mesh. One function, built on meshcast's
// own plan and model (the two stages' meshes are different device sets: `device_map::disjoint`),
// so that a change of the model changes every pipeline that uses it. The prediction is the one the
// one-call API's `resharder` makes for itself (`solve(...).makespan_s` under the execution mode that
// will run, ordered by default): `to_reshard_options` gives the options that run exactly that.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "../core/detail/checked.hpp"
#include "../model/execution.hpp"
#include "../layout/layout.hpp"
#include "../model/network.hpp"
#include "../layout/placement.hpp"
#include "../plan/plan.hpp"
#include "../api/network_from.hpp"
#include "../api/reshard_options.hpp"
#include "../schedule/solve.hpp"
#include "../schedule/solve_batch.hpp"
#include "../schedule/solver/greedy.hpp"
#include "../schedule/strategies.hpp"
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
  double nic_efficiency = 1;     ///< the payload fraction of the line rate a transfer gets, [0.001, 1]
  double intra_gbps = 800;       ///< intra-host link, Gbit/s
  double latency_us = 10;        ///< per message
  int nics_per_host = 1;
  index_t devices_per_host = 0;  ///< 0: the size of the source mesh's last axis
  std::string strategy = "send_recv";
  bool split_replicas = false;
  execution mode = execution::ordered;  ///< how the reshard runs; the prediction is that mode's model
};

/// The devices per host `net` places the sending mesh `sender` on.
inline index_t devices_per_host(const network_model& net, const dynamic_mesh& sender) {
  return net.devices_per_host > 0 ? net.devices_per_host : sender.extent(sender.rank() - 1);
}

/// The options under which `meshcast::resharder` (mpi.hpp) runs the reshard `reshard_time_s`
/// predicts (same network model, hosts of `devices_per_host` devices, mode, replica splitting);
/// build it with `Solver` = greedy and the strategy `net.strategy` names (`visit_strategy`).
inline reshard_options to_reshard_options(const network_model& net, index_t devices_per_host) {
  reshard_options o;
  o.devices = device_map::disjoint();
  o.devices_per_host = devices_per_host;
  o.mode = net.mode;
  o.split_replicas = net.split_replicas;
  o.nic_gbps = net.nic_gbps;
  o.nic_efficiency = net.nic_efficiency;
  o.intra_gbps = net.intra_gbps;
  o.latency_us = net.latency_us;
  o.nics_per_host = net.nics_per_host;
  return o;
}

/// Most devices a stage mesh may have in a tensor edge, and most the two meshes may have
/// multiplied (bounds the plan's size and the solver's time).
inline constexpr index_t max_edge_mesh_devices = 1024;
inline constexpr index_t max_edge_mesh_product = 65536;

namespace detail {
// Checks the meshes' sizes and the tensor's byte count against the limits; throws naming them.
inline void check_edge_tensor(const tensor_edge& t) {
  index_t product = 1;
  for (const dynamic_mesh* m : {&t.src_mesh, &t.dst_mesh}) {
    index_t devices = 1;
    for (int i = 0; i < m->rank(); ++i) devices = meshcast::detail::checked_mul(devices, m->extent(i), "the mesh size");
    if (devices > max_edge_mesh_devices)
      throw error("a mesh of " + std::to_string(devices) + " devices exceeds the limit of " +
                  std::to_string(max_edge_mesh_devices));
    product *= devices;
  }
  if (product > max_edge_mesh_product)
    throw error("meshes of " + std::to_string(t.src_mesh.size()) + " and " + std::to_string(t.dst_mesh.size()) +
                " devices exceed the limit of " + std::to_string(max_edge_mesh_product) + " for their product");
  index_t bytes = t.element_bytes;
  for (int i = 0; i < t.shape.rank(); ++i) bytes = meshcast::detail::checked_mul(bytes, t.shape.extent(i), "the tensor's size in bytes");
}
inline void check_network(const network_model& net) {
  if (!(net.nic_gbps > 0) || !(net.intra_gbps > 0) || !(net.latency_us >= 0) || net.nics_per_host < 1 ||
      !(net.nic_efficiency >= meshcast::network::min_payload_fraction && net.nic_efficiency <= 1))
    throw error("network: nic_gbps and intra_gbps must be positive, nic_efficiency in [0.001, 1], latency_us >= 0, "
                "nics_per_host >= 1");
}
inline plan edge_plan(const tensor_edge& t, bool backward) {
  dynamic_layout src(t.src_mesh, t.src_spec, t.shape), dst(t.dst_mesh, t.dst_spec, t.shape);
  plan_options po;
  po.element_bytes = t.element_bytes;
  po.devices = device_map::disjoint();
  return backward ? make_plan(dst, src, po) : make_plan(src, dst, po);
}
// Tensor i of a batch between two stages: within the limits and on tensor 0's meshes. Its plan.
inline plan batch_member_plan(std::span<const tensor_edge> ts, std::size_t i, bool backward) {
  check_edge_tensor(ts[i]);
  if (to_value(ts[i].src_mesh) != to_value(ts[0].src_mesh) || to_value(ts[i].dst_mesh) != to_value(ts[0].dst_mesh))
    throw error("tensor " + std::to_string(i) + " of the batch has meshes " + to_value(ts[i].src_mesh).to_string() + " -> " +
                to_value(ts[i].dst_mesh).to_string() + " but tensor 0 has " + to_value(ts[0].src_mesh).to_string() + " -> " +
                to_value(ts[0].dst_mesh).to_string() + ": the tensors between two stages share the stages' meshes");
  return edge_plan(ts[i], backward);
}
}  // namespace detail

/// Predicted time, in seconds, of resharding `t` from its source mesh (devices 0..N-1) to its
/// destination mesh (devices N..N+M-1, starting on a fresh host), or back when `backward`
/// (gradients: destination layout to source layout): meshcast's plan, `net`'s strategy, and
/// greedy's schedule as `solve_batch` makes it for the resharder (under `auto`, the best of the
/// instances it compares), under the model of `net.mode` (ordered by default). Throws
/// `meshcast::error` for a bad tensor or network.
inline double reshard_time_s(const tensor_edge& t, const network_model& net, bool backward = false) {
  detail::check_edge_tensor(t);
  detail::check_network(net);
  const plan p = detail::edge_plan(t, backward);
  const dynamic_mesh& sender_mesh = backward ? t.dst_mesh : t.src_mesh;
  const reshard_options o = to_reshard_options(net, devices_per_host(net, t.src_mesh));
  const network model = network_from(o, default_hosts(p.device_count, sender_mesh.size(), o.devices_per_host));
  return visit_strategy(net.strategy, [&](auto strategy) {
    return solve_batch(std::span(&p, 1), model, strategy, greedy{}, {.split_replicas = o.split_replicas, .mode = o.mode}, {})
        .makespan_s;
  });
}

/// Predicted time of several tensors sent between the same two stages as one batch (one schedule,
/// as `batch_resharder` runs them): every tensor must have the same two meshes (the stages').
/// One tensor is `reshard_time_s` of it.
inline double reshard_time_s(std::span<const tensor_edge> ts, const network_model& net, bool backward = false) {
  if (ts.empty()) throw error("a batch of tensor edges needs at least one tensor");
  if (ts.size() == 1) return reshard_time_s(ts[0], net, backward);
  detail::check_network(net);
  std::vector<plan> plans;
  for (std::size_t i = 0; i < ts.size(); ++i) plans.push_back(detail::batch_member_plan(ts, i, backward));
  const dynamic_mesh& sender_mesh = backward ? ts[0].dst_mesh : ts[0].src_mesh;
  const reshard_options o = to_reshard_options(net, devices_per_host(net, ts[0].src_mesh));
  const network model = network_from(o, default_hosts(plans[0].device_count, sender_mesh.size(), o.devices_per_host));
  return visit_strategy(net.strategy, [&](auto strategy) {
    return solve_batch(plans, model, strategy, greedy{}, {.split_replicas = o.split_replicas, .mode = o.mode}, {}).makespan_s;
  });
}

}  // namespace meshcast::pipeline

// What a batch resharder checks before it plans and before each run, the same over every
// transport (mpi.hpp's batch_resharder, nccl.hpp's nccl_batch_resharder): the plans of its
// tensors on the communicator's ranks, the key every rank must agree on, and whether this rank's
// shards fit its tiles. Each returns or throws a message; the transport makes every rank learn it.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "../core/detail/shared_memory.hpp"
#include "../layout/layout.hpp"
#include "reshard_options.hpp"
#include "../plan/staging.hpp"
#include "../plan/tensor_layouts.hpp"

namespace meshcast::detail {

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
  mix(static_cast<std::int64_t>(o.max_staging_bytes)), mix(o.buckets), mix(o.nccl_nonblocking);
  for (index_t h : o.host_of) mix(h);
  mix(static_cast<std::int64_t>(o.seed));
  // The network model, the solver's limit and the deadline too: each rank would otherwise run with
  // rank 0's schedule made under other numbers than its own, or wait on others differently.
  for (double v : {o.nic_gbps, o.nic_efficiency, o.intra_gbps, o.latency_us, o.time_limit_s, o.timeout_s})
    mix(std::bit_cast<std::int64_t>(v));
  for (char c : policies) mix(c);
  return h;
}

/// The plans of a batch over `ranks` ranks (rank r is device r); throws naming the tensor that
/// does not fit them.
inline std::vector<plan> batch_plans(const std::vector<tensor_layouts>& tensors, const reshard_options& o, int ranks) {
  if (tensors.empty()) throw error("a batch needs at least one tensor");
  // Tensors that name their devices (a model's manifest) may use some of the ranks only.
  const bool listed =
      std::any_of(tensors.begin(), tensors.end(), [](const tensor_layouts& t) { return !t.src_devices.empty() || !t.dst_devices.empty(); });
  std::vector<plan> plans = make_plans(tensors, o.devices, listed ? ranks : 0);
  cut_for_staging(plans, o.max_staging_bytes);
  for (std::size_t k = 0; k < plans.size(); ++k)
    if (plans[k].device_count != ranks)
      throw error("the layouts place " + std::string(tensors.size() > 1 ? "tensor " + std::to_string(k) : "the tensor") + " on " +
                  std::to_string(plans[k].device_count) + " devices but the communicator has " + std::to_string(ranks) +
                  " ranks (rank r is device r; for resharding in place, pass reshard_options{.devices = "
                  "meshcast::device_map::same()})");
  if (!o.host_of.empty() && static_cast<int>(o.host_of.size()) != ranks)
    throw error("reshard_options::host_of names the hosts of " + std::to_string(o.host_of.size()) +
                " devices but the communicator has " + std::to_string(ranks) + " ranks");
  return plans;
}

/// What every rank of a batch must have been given alike: layouts, devices, element sizes, options
/// and the policies' names.
inline std::uint64_t batch_key(const std::vector<tensor_layouts>& tensors, const reshard_options& o, std::string_view solver,
                               std::string_view strategy) {
  std::uint64_t key = 0;
  for (const tensor_layouts& t : tensors) {
    std::string policies = std::string(solver) + "/" + std::string(strategy) + "/";
    for (index_t d : t.src_devices) policies += std::to_string(d) + ",";
    policies += "/";
    for (index_t d : t.dst_devices) policies += std::to_string(d) + ",";
    key = key * 1099511628211ULL ^ agreement_key(t.src, t.dst, t.element_bytes, o, policies);
  }
  return key;
}

/// Why device `rank`'s shards do not fit its tiles (`source_bytes(k)`, `destination_bytes(k)`),
/// or shards that share memory, or `problem` (this rank's own, prefixed with the device), or
/// nothing. `scratch`: kept by the caller between runs.
template <class SourceBytes, class DestinationBytes>
std::string shard_problem(index_t rank, std::string problem, std::span<const std::span<const std::byte>> in,
                          std::span<const std::span<std::byte>> out, const std::vector<tensor_layouts>& tensors,
                          SourceBytes&& source_bytes, DestinationBytes&& destination_bytes, std::vector<shard_range>& scratch) {
  const std::string device = "device " + std::to_string(rank) + ": ";
  if (!problem.empty()) return device + problem;
  if (in.size() != tensors.size() || out.size() != tensors.size())
    return device + std::to_string(in.size()) + " source and " + std::to_string(out.size()) +
           " destination shards for a batch of " + std::to_string(tensors.size());
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const std::size_t eb = tensors[k].element_bytes;
    if (in[k].size() != source_bytes(k) || out[k].size() != destination_bytes(k))
      return device + "its shards" + (tensors.size() > 1 ? " of tensor " + std::to_string(k) : std::string()) + " have " +
             std::to_string(in[k].size() / eb) + " and " + std::to_string(out[k].size() / eb) +
             " elements, but its source and destination tiles hold " + std::to_string(source_bytes(k) / eb) + " and " +
             std::to_string(destination_bytes(k) / eb);
  }
  if (std::string shared = shared_memory_problem(in, out, [&](std::size_t k) { return in[k].size(); },
                                                  [&](std::size_t k) { return out[k].size(); }, scratch);
      !shared.empty())
    return device + shared;
  return {};
}

}  // namespace meshcast::detail

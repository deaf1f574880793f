// What the one-call reshard needs to know besides the layouts and buffers, for every transport.
#pragma once

#include <cstdint>
#include <vector>

#include "../core/config.hpp"
#include "../core/time_limit.hpp"
#include "../layout/placement.hpp"
#include "../model/execution.hpp"
#include "../plan/staging_cap.hpp"

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
  /// Longest wait on other ranks without progress before every rank fails with an error (over
  /// NCCL: the longest wait for the work on the stream, which then cannot be withdrawn).
  double timeout_s = 60;
  /// Over NCCL: the communicator was made nonblocking (ncclConfig_t::blocking = 0). meshcast then
  /// makes its broadcast groups' communicators nonblocking too (NCCL refuses a group mixing both
  /// kinds), so their creation and every group's connection setup also give up after `timeout_s`
  /// (with blocking communicators those two calls of NCCL have no deadline). No effect over MPI.
  bool nccl_nonblocking = false;
  /// No rank holds more than this many bytes of message buffers (packing, receiving, forwarding)
  /// at once beyond its shards; tasks are cut to half of it before they are scheduled
  /// (staging.hpp). 0: no cap.
  std::size_t max_staging_bytes = default_max_staging_bytes;
  /// Let a batch's messages between two devices travel together, in buckets sized to the network
  /// (bucket.hpp), where that shortens the prediction.
  bool buckets = true;
};


namespace detail {
/// The deadline of a channel's own waits: the user's timeout, or the default where it is not one.
/// A rank given a bad timeout then still agrees with the others on the error naming it (the front
/// end checks it), instead of leaving them to time out.
inline double channel_timeout_s(double timeout_s) {
  return timeout_s > 0 && timeout_s <= max_time_limit_s ? timeout_s : reshard_options{}.timeout_s;
}
/// How much longer than the timeout a channel's agreements may wait: the solver's time limit,
/// since the other ranks wait there while rank 0 solves (0 where the limit is not one).
inline double channel_solve_s(double time_limit_s) {
  return time_limit_s >= 0 && time_limit_s <= max_time_limit_s ? time_limit_s : 0;
}
}  // namespace detail

}  // namespace meshcast

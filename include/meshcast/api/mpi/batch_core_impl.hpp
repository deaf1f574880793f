// The definitions behind batch_core.hpp. Header-only mode includes this from <meshcast/mpi.hpp>;
// libmeshcast compiles it once in compiled mode (src/mpi.cpp).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../../core/detail/deadline.hpp"
#include "../../core/error.hpp"
#include "../../exec/backend/mpi.hpp"
#include "../../exec/backend/mpi_bounded.hpp"
#include "../../exec/executor.hpp"
#include "../../exec/wire.hpp"
#include "../../model/network.hpp"
#include "../../model/schedule.hpp"
#include "../../plan/plan.hpp"
#include "../batch_checks.hpp"
#include "../network_from.hpp"
#include "batch_core.hpp"

namespace meshcast {

MESHCAST_INLINE void share_schedule(MPI_Comm comm, std::span<const plan> plans, schedule& s, int root, double timeout_s) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::int64_t> wire = rank == root ? to_wire(s) : std::vector<std::int64_t>{};
  long long n = static_cast<long long>(wire.size());
  bounded_broadcast(comm, &n, sizeof n, root, timeout_s, "receiving the schedule's size");
  if (n < 0 || static_cast<unsigned long long>(n) > (std::numeric_limits<int>::max() / sizeof(std::int64_t)))
    throw error("the schedule is too large to share (" + std::to_string(n) + " words)");
  wire.resize(static_cast<std::size_t>(n));
  bounded_broadcast(comm, wire.data(), static_cast<int>(n * static_cast<long long>(sizeof(std::int64_t))), root, timeout_s,
                    "receiving the schedule");
  if (rank != root) s = from_wire(wire);
  const std::uint64_t mine = fingerprint(plans, s);
  std::uint64_t theirs = mine;
  bounded_broadcast(comm, &theirs, sizeof theirs, root, timeout_s, "comparing schedules");
  if (!all_ok(comm, mine == theirs, timeout_s, "comparing schedules"))
    throw error("ranks disagree on the plan: were they given the same layouts and sizes?");
}

MESHCAST_INLINE void share_schedule(MPI_Comm comm, const plan& p, schedule& s, int root, double timeout_s) {
  share_schedule(comm, std::span<const plan>(&p, 1), s, root, timeout_s);
}

MESHCAST_INLINE void agree_or_throw(MPI_Comm comm, const std::string& problem, double timeout_s) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const auto first = static_cast<int>(bounded_allreduce(
      comm, problem.empty() ? static_cast<std::uint64_t>(INT_MAX) : static_cast<std::uint64_t>(rank), MPI_MIN, timeout_s,
      "checking that every rank is ready"));
  if (first == INT_MAX) return;
  std::string text = rank == first ? problem : std::string();
  long long n = static_cast<long long>(text.size());
  bounded_broadcast(comm, &n, sizeof n, first, timeout_s, "receiving another rank's error");
  text.resize(static_cast<std::size_t>(std::clamp(n, 0LL, 4096LL)));
  bounded_broadcast(comm, text.data(), static_cast<int>(text.size()), first, timeout_s, "receiving another rank's error");
  throw error(rank == first ? text : "rank " + std::to_string(first) + " reports: " + text);
}

MESHCAST_INLINE std::vector<index_t> discover_hosts(MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm node = MPI_COMM_NULL;
  detail::mpi_check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int leader = rank;
  detail::mpi_check(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node), "MPI_Allreduce");
  MPI_Comm_free(&node);
  std::vector<int> leaders(static_cast<std::size_t>(size));
  detail::mpi_check(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm), "MPI_Allgather");
  std::vector<int> distinct = leaders;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::vector<index_t> host_of(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r)
    host_of[static_cast<std::size_t>(r)] =
        std::lower_bound(distinct.begin(), distinct.end(), leaders[static_cast<std::size_t>(r)]) - distinct.begin();
  return host_of;
}

namespace detail {

struct batch_core::state {
  MPI_Comm comm;
  reshard_options options;
  std::vector<tensor_layouts> tensors;
  index_t rank = 0;
  std::vector<plan> plans;
  meshcast::network net;
  meshcast::schedule schedule;
  std::optional<executor<mpi_backend>> run;
};

MESHCAST_INLINE batch_core::batch_core(MPI_Comm comm, std::vector<tensor_layouts> tensors, const reshard_options& options,
                                       const erased_policies& policies)
    : state_(new state{comm, options, std::move(tensors), 0, {}, {}, {}, {}}) {
  state& s = *state_;
  try {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    s.rank = rank;
    std::string problem;
    try {
      checked_seconds(s.options.timeout_s, "reshard_options::timeout_s");
      s.plans = batch_plans(s.tensors, s.options, size);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    agree_or_throw(comm, problem, s.options.timeout_s);
    // Every rank must have been given the same layouts, element sizes and options.
    const std::uint64_t key = batch_key(s.tensors, s.options, policies.name(false), policies.name(true));
    const auto low = bounded_allreduce(comm, key, MPI_MIN, s.options.timeout_s, "comparing the ranks' arguments");
    const auto high = bounded_allreduce(comm, key, MPI_MAX, s.options.timeout_s, "comparing the ranks' arguments");
    if (low != high)
      throw error("the ranks of the communicator were given different layouts, element sizes or options for one "
                  "reshard; every rank must pass the same ones");
    try {
      const reshard_options& o = s.options;
      const std::vector<index_t> hosts =
          !o.host_of.empty()       ? o.host_of
          : o.devices_per_host > 0 ? default_hosts(s.plans[0].device_count, static_cast<index_t>(s.plans[0].src_devices.size()),
                                                   o.devices_per_host)
                                   : discover_hosts(comm);
      // The MPI backend's eager messages are acknowledged in ordered mode (connections.hpp).
      s.net = network_from(o, hosts).with_eager_bytes(static_cast<index_t>(eager_limit_bytes));
      if (rank == 0) policies.solve(policies, s.plans, s.net, o, s.schedule);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    agree_or_throw(comm, problem, s.options.timeout_s);
    share_schedule(comm, s.plans, s.schedule, 0, s.options.timeout_s);
    try {
      s.run.emplace(mpi_backend(comm, s.options.timeout_s), s.plans, s.schedule, s.options.max_staging_bytes);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    agree_or_throw(comm, problem, s.options.timeout_s);
  } catch (...) {
    delete state_;
    throw;
  }
}

MESHCAST_INLINE batch_core::~batch_core() { delete state_; }
MESHCAST_INLINE batch_core::batch_core(batch_core&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
MESHCAST_INLINE batch_core& batch_core::operator=(batch_core&& other) noexcept {
  if (this != &other) {
    delete state_;
    state_ = std::exchange(other.state_, nullptr);
  }
  return *this;
}

MESHCAST_INLINE std::size_t batch_core::size() const noexcept { return state_->tensors.size(); }
MESHCAST_INLINE std::size_t batch_core::source_elements(std::size_t k) const noexcept {
  return state_->run->source_bytes(k) / state_->tensors[k].element_bytes;
}
MESHCAST_INLINE std::size_t batch_core::destination_elements(std::size_t k) const noexcept {
  return state_->run->destination_bytes(k) / state_->tensors[k].element_bytes;
}
MESHCAST_INLINE const std::vector<plan>& batch_core::plans() const noexcept { return state_->plans; }
MESHCAST_INLINE const meshcast::schedule& batch_core::schedule() const noexcept { return state_->schedule; }
MESHCAST_INLINE const meshcast::network& batch_core::network() const noexcept { return state_->net; }
MESHCAST_INLINE std::size_t batch_core::staging_bytes() const noexcept { return state_->run->staging_bytes(); }

MESHCAST_INLINE void batch_core::run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out,
                                     std::string problem) {
  state& s = *state_;
  problem = shard_problem(static_cast<index_t>(s.rank), std::move(problem), in, out, s.tensors,
                          [&](std::size_t k) { return s.run->source_bytes(k); },
                          [&](std::size_t k) { return s.run->destination_bytes(k); });
  agree_or_throw(s.comm, problem, s.options.timeout_s);
  s.run->run(in, out);
}

}  // namespace detail
}  // namespace meshcast

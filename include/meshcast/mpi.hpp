// meshcast over MPI: one call reshards a tensor across the ranks of a communicator (rank r is
// device r), and a `resharder` keeps plan, schedule and buffers for repeated calls. This header
// sits on top: it brings the executor (exec/), the MPI transport (backend/mpi.hpp) and the
// planning layers together.
//
//   meshcast::reshard(comm, src_layout, dst_layout, in, out);   // in, out: this rank's shards
//   meshcast::reshard(comm, src, dst, in, out, meshcast::reshard_options{.devices = meshcast::device_map::same()});
//
// A shard is the rank's tile of the tensor, dense and row-major (empty where the rank has none).
// Every misuse (communicator size, shard sizes, element size, ranks that disagree) is a
// meshcast::error on every rank, never an MPI abort or a hang.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/mpi.hpp"
#include "backend/mpi_bounded.hpp"
#include "exec/executor.hpp"
#include "exec/wire.hpp"
#include "meshcast.hpp"
#include "reshard_options.hpp"

namespace meshcast {

/// Hands `root`'s schedule to every rank of `comm` (so that ranks never run solvers that may
/// differ, e.g. time-limited searches), then checks that all ranks agree on plan and schedule.
/// Every step gives up with `timeout_error` after `timeout_s` seconds.
inline void share_schedule(MPI_Comm comm, const plan& p, schedule& s, int root = 0, double timeout_s = 60) {
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
  const std::uint64_t mine = fingerprint(p, s);
  std::uint64_t theirs = mine;
  bounded_broadcast(comm, &theirs, sizeof theirs, root, timeout_s, "comparing schedules");
  if (!all_ok(comm, mine == theirs, timeout_s, "comparing schedules"))
    throw error("ranks disagree on the plan: were they given the same layouts and sizes?");
}

/// Throws on every rank of `comm` when any rank has a non-empty `problem`: each rank throws the
/// first failing rank's message (naming that rank). Bounded in time like every collective here.
inline void agree_or_throw(MPI_Comm comm, const std::string& problem, double timeout_s) {
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

/// The host of every rank of `comm`: ranks that share memory (MPI_COMM_TYPE_SHARED) are on one
/// host; hosts are numbered in the order of their lowest rank.
inline std::vector<index_t> discover_hosts(MPI_Comm comm) {
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

/// Reshards one tensor again and again between two layouts over an MPI communicator, rank r
/// being device r. Built collectively (every rank of `comm` constructs it with the same
/// arguments): it plans, has rank 0 solve the schedule (`Solver` under `Strategy`, optimising the
/// model of `options.mode`), shares it, and keeps the executor and its buffers. Then each call
/// moves this rank's shard. Every misuse is a meshcast::error on every rank.
template <solver Solver = greedy, strategy Strategy = send_recv_allgather>
class resharder {
 public:
  template <layout_like Src, layout_like Dst>
  resharder(MPI_Comm comm, const Src& src, const Dst& dst, std::size_t element_bytes, reshard_options options = {},
            Solver solver = {}, Strategy strategy = {})
      : comm_(comm), options_(options), element_bytes_(element_bytes) {
    static_assert(detail::static_shapes_agree<Src, Dst>(),
                  "The source and destination layouts have different static shapes: resharding keeps the tensor's shape.");
    int rank = 0, size = 0;
    MPI_Comm_rank(comm_, &rank);
    MPI_Comm_size(comm_, &size);
    rank_ = rank;
    std::string problem;
    std::vector<index_t> hosts;
    try {
      detail::checked_seconds(options_.timeout_s, "reshard_options::timeout_s");
      const layout_value s = src.value(), d = dst.value();
      plan_ = make_plan(s, d, {.element_bytes = detail::checked_cast<index_t>(element_bytes, "the element size"),
                               .devices = options_.devices});
      if (plan_.device_count != size)
        throw error("the layouts place the tensor on " + std::to_string(plan_.device_count) +
                    " devices but the communicator has " + std::to_string(size) +
                    " ranks (rank r is device r; for resharding in place, pass reshard_options{.devices = "
                    "meshcast::device_map::same()})");
    } catch (const std::exception& e) {
      problem = e.what();
    }
    agree_or_throw(comm_, problem, options_.timeout_s);
    // Every rank must have been given the same layouts, element size and options.
    const std::uint64_t key = detail::agreement_key(plan_.src, plan_.dst, element_bytes_, options_,
                                                    std::string(Solver::name) + "/" + std::string(Strategy::name));
    const auto low = bounded_allreduce(comm_, key, MPI_MIN, options_.timeout_s, "comparing the ranks' arguments");
    const auto high = bounded_allreduce(comm_, key, MPI_MAX, options_.timeout_s, "comparing the ranks' arguments");
    if (low != high)
      throw error("the ranks of the communicator were given different layouts, element sizes or options for one "
                  "reshard; every rank must pass the same ones");
    try {
      hosts = options_.devices_per_host > 0
                  ? default_hosts(plan_.device_count, static_cast<index_t>(plan_.src_devices.size()), options_.devices_per_host)
                  : discover_hosts(comm_);
      net_ = network_from(options_, hosts);
      if (rank == 0) {
        instance in = make_instance(plan_, net_, strategy, {.split_replicas = options_.split_replicas, .mode = options_.mode});
        schedule_ = solve(in, solver, {.time_limit_s = options_.time_limit_s, .seed = options_.seed});
      }
    } catch (const std::exception& e) {
      problem = e.what();
    }
    agree_or_throw(comm_, problem, options_.timeout_s);
    share_schedule(comm_, plan_, schedule_, 0, options_.timeout_s);
    try {
      executor_.emplace(mpi_backend(comm_, options_.timeout_s), plan_, schedule_);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    agree_or_throw(comm_, problem, options_.timeout_s);
  }

  /// Elements this rank's source and destination shards hold (0 where it has none).
  std::size_t source_elements() const noexcept { return executor_->source_bytes() / element_bytes_; }
  std::size_t destination_elements() const noexcept { return executor_->destination_bytes() / element_bytes_; }
  const meshcast::plan& plan() const noexcept { return plan_; }
  const meshcast::schedule& schedule() const noexcept { return schedule_; }
  const meshcast::network& network() const noexcept { return net_; }

  /// Reshards once: `in` is this rank's source shard (read only), `out` its destination shard;
  /// both contiguous ranges of elements of the size given at construction. Collective.
  template <std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  void operator()(In&& in, Out&& out) {
    using T = std::remove_cvref_t<std::ranges::range_value_t<In>>;
    using U = std::remove_cvref_t<std::ranges::range_value_t<Out>>;
    static_assert(std::is_same_v<T, U>, "The source and destination shards must hold the same element type.");
    static_assert(std::is_trivially_copyable_v<T>, "Shards are moved as bytes: their element type must be trivially copyable.");
    std::string problem;
    const std::size_t in_n = std::ranges::size(in), out_n = std::ranges::size(out);
    if (sizeof(T) != element_bytes_)
      problem = "device " + std::to_string(rank_) + ": the shards hold " + std::to_string(sizeof(T)) +
                "-byte elements but the reshard was set up for " + std::to_string(element_bytes_) + "-byte ones";
    else if (in_n != source_elements() || out_n != destination_elements())
      problem = "device " + std::to_string(rank_) + ": its shards have " + std::to_string(in_n) + " and " +
                std::to_string(out_n) + " elements, but its source and destination tiles hold " +
                std::to_string(source_elements()) + " and " + std::to_string(destination_elements());
    agree_or_throw(comm_, problem, options_.timeout_s);
    const auto* from = reinterpret_cast<const std::byte*>(std::ranges::data(in));
    auto* to = reinterpret_cast<std::byte*>(std::ranges::data(out));
    executor_->run({from, in_n * sizeof(T)}, {to, out_n * sizeof(T)});
  }

 private:
  MPI_Comm comm_;
  reshard_options options_;
  std::size_t element_bytes_;
  index_t rank_ = 0;
  meshcast::plan plan_;
  meshcast::network net_;
  meshcast::schedule schedule_;
  std::optional<executor<mpi_backend>> executor_;
};

/// Reshards `in` (this rank's shard of `src`) into `out` (its shard of `dst`) over `comm`, rank r
/// being device r: one collective call. For repeated reshards of the same layouts, build a
/// `resharder` once instead. `Solver` and `Strategy` choose the schedule (greedy senders and
/// order, a local all-gather on each receiving host by default).
template <solver Solver = greedy, strategy Strategy = send_recv_allgather, layout_like Src, layout_like Dst,
          std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
void reshard(MPI_Comm comm, const Src& src, const Dst& dst, In&& in, Out&& out, reshard_options options = {}) {
  using T = std::remove_cvref_t<std::ranges::range_value_t<In>>;
  resharder<Solver, Strategy> r(comm, src, dst, sizeof(T), options);
  r(std::forward<In>(in), std::forward<Out>(out));
}

}  // namespace meshcast

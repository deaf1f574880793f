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

#include "../exec/backend/mpi.hpp"
#include "../exec/backend/mpi_bounded.hpp"
#include "../exec/executor.hpp"
#include "../exec/wire.hpp"
#include "../core/detail/deadline.hpp"
#include "../core/error.hpp"
#include "../layout/layout.hpp"
#include "../layout/placement.hpp"
#include "../model/network.hpp"
#include "../model/schedule.hpp"
#include "../plan/plan.hpp"
#include "../schedule/solver/greedy.hpp"
#include "../schedule/strategy/auto.hpp"
#include "batch_checks.hpp"
#include "reshard_options.hpp"
#include "../schedule/solve_batch.hpp"
#include "../plan/tensor_layouts.hpp"

namespace meshcast {

/// Hands `root`'s schedule to every rank of `comm` (so that ranks never run solvers that may
/// differ, e.g. time-limited searches), then checks that all ranks agree on plan and schedule.
/// Every step gives up with `timeout_error` after `timeout_s` seconds.
inline void share_schedule(MPI_Comm comm, std::span<const plan> plans, schedule& s, int root = 0, double timeout_s = 60) {
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
inline void share_schedule(MPI_Comm comm, const plan& p, schedule& s, int root = 0, double timeout_s = 60) {
  share_schedule(comm, std::span<const plan>(&p, 1), s, root, timeout_s);
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

/// Reshards a batch of tensors again and again over an MPI communicator, rank r being device r:
/// their transfers are planned and solved as one schedule, so the NICs are balanced across all of
/// them (as Alpa balances the tensors of a stage boundary). Built collectively (every rank of
/// `comm` with the same arguments): it plans, has rank 0 solve the schedule (`Solver` under
/// `Strategy`, optimising the model of `options.mode`), shares it, and keeps the executor and
/// its buffers. Then each call moves this rank's shards. Every misuse is a meshcast::error on
/// every rank.
template <solver Solver = greedy, strategy Strategy = auto_strategy>
class batch_resharder {
 public:
  batch_resharder(MPI_Comm comm, std::vector<tensor_layouts> tensors, reshard_options options = {}, Solver solver = {},
                  Strategy strategy = {})
      : comm_(comm), options_(options), tensors_(std::move(tensors)) {
    int rank = 0, size = 0;
    MPI_Comm_rank(comm_, &rank);
    MPI_Comm_size(comm_, &size);
    rank_ = rank;
    std::string problem;
    try {
      detail::checked_seconds(options_.timeout_s, "reshard_options::timeout_s");
      plans_ = detail::batch_plans(tensors_, options_, size);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    agree_or_throw(comm_, problem, options_.timeout_s);
    // Every rank must have been given the same layouts, element sizes and options.
    const std::uint64_t key = detail::batch_key(tensors_, options_, Solver::name, Strategy::name);
    const auto low = bounded_allreduce(comm_, key, MPI_MIN, options_.timeout_s, "comparing the ranks' arguments");
    const auto high = bounded_allreduce(comm_, key, MPI_MAX, options_.timeout_s, "comparing the ranks' arguments");
    if (low != high)
      throw error("the ranks of the communicator were given different layouts, element sizes or options for one "
                  "reshard; every rank must pass the same ones");
    try {
      const std::vector<index_t> hosts =
          !options_.host_of.empty()       ? options_.host_of
          : options_.devices_per_host > 0 ? default_hosts(plans_[0].device_count, static_cast<index_t>(plans_[0].src_devices.size()),
                                                          options_.devices_per_host)
                                          : discover_hosts(comm_);
      // The MPI backend's eager messages are acknowledged in ordered mode (connections.hpp).
      net_ = network_from(options_, hosts).with_eager_bytes(static_cast<index_t>(eager_limit_bytes));
      if (rank == 0)
        schedule_ = solve_batch(plans_, net_, strategy, solver,
                                {.split_replicas = options_.split_replicas, .mode = options_.mode,
                                 .bucket_bytes = options_.buckets ? instance_options::auto_bucket_bytes : 0,
                                 .max_staging_bytes = options_.max_staging_bytes},
                                {.time_limit_s = options_.time_limit_s, .seed = options_.seed});
    } catch (const std::exception& e) {
      problem = e.what();
    }
    agree_or_throw(comm_, problem, options_.timeout_s);
    share_schedule(comm_, plans_, schedule_, 0, options_.timeout_s);
    try {
      executor_.emplace(mpi_backend(comm_, options_.timeout_s), plans_, schedule_, options_.max_staging_bytes);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    agree_or_throw(comm_, problem, options_.timeout_s);
  }

  std::size_t size() const noexcept { return tensors_.size(); }
  /// Elements this rank's source and destination shards of tensor `k` hold (0 where it has none).
  std::size_t source_elements(std::size_t k = 0) const noexcept { return executor_->source_bytes(k) / tensors_[k].element_bytes; }
  std::size_t destination_elements(std::size_t k = 0) const noexcept {
    return executor_->destination_bytes(k) / tensors_[k].element_bytes;
  }
  const std::vector<meshcast::plan>& plans() const noexcept { return plans_; }
  const meshcast::schedule& schedule() const noexcept { return schedule_; }
  const meshcast::network& network() const noexcept { return net_; }
  /// Bytes of message buffers this rank holds beyond its shards (never above the staging cap).
  std::size_t staging_bytes() const noexcept { return executor_->staging_bytes(); }

  /// Reshards once: `in[k]` and `out[k]` are this rank's shards of tensor k, as bytes. Collective.
  void operator()(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out) {
    run(in, out, {});
  }
  /// The same, with a problem this rank found on its own (every rank then fails with it).
  void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out, std::string problem) {
    problem = detail::shard_problem(rank_, std::move(problem), in, out, tensors_,
                                    [&](std::size_t k) { return executor_->source_bytes(k); },
                                    [&](std::size_t k) { return executor_->destination_bytes(k); });
    agree_or_throw(comm_, problem, options_.timeout_s);
    executor_->run(in, out);
  }

 private:
  MPI_Comm comm_;
  reshard_options options_;
  std::vector<tensor_layouts> tensors_;
  index_t rank_ = 0;
  std::vector<meshcast::plan> plans_;
  meshcast::network net_;
  meshcast::schedule schedule_;
  std::optional<executor<mpi_backend>> executor_;
};

/// Reshards one tensor again and again between two layouts (a batch of one, with typed shards).
template <solver Solver = greedy, strategy Strategy = auto_strategy>
class resharder {
 public:
  template <layout_like Src, layout_like Dst>
  resharder(MPI_Comm comm, const Src& src, const Dst& dst, std::size_t element_bytes, reshard_options options = {},
            Solver solver = {}, Strategy strategy = {})
      : batch_(comm, {tensor_layouts{src.value(), dst.value(), element_bytes}}, options, solver, strategy),
        element_bytes_(element_bytes) {
    static_assert(detail::static_shapes_agree<Src, Dst>(),
                  "The source and destination layouts have different static shapes: resharding keeps the tensor's shape.");
  }

  /// Elements this rank's source and destination shards hold (0 where it has none).
  std::size_t source_elements() const noexcept { return batch_.source_elements(0); }
  std::size_t destination_elements() const noexcept { return batch_.destination_elements(0); }
  const meshcast::plan& plan() const noexcept { return batch_.plans()[0]; }
  const meshcast::schedule& schedule() const noexcept { return batch_.schedule(); }
  const meshcast::network& network() const noexcept { return batch_.network(); }

  /// Reshards once: `in` is this rank's source shard (read only), `out` its destination shard;
  /// both contiguous ranges of elements of the size given at construction. Collective.
  template <std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  void operator()(In&& in, Out&& out) {
    using T = std::remove_cvref_t<std::ranges::range_value_t<In>>;
    using U = std::remove_cvref_t<std::ranges::range_value_t<Out>>;
    static_assert(std::is_same_v<T, U>, "The source and destination shards must hold the same element type.");
    static_assert(std::is_trivially_copyable_v<T>, "Shards are moved as bytes: their element type must be trivially copyable.");
    std::string problem;  // every rank learns of it, as of any misuse
    if (sizeof(T) != element_bytes_)
      problem = "the shards hold " + std::to_string(sizeof(T)) + "-byte elements but the reshard was set up for " +
                std::to_string(element_bytes_) + "-byte ones";
    const std::span<const std::byte> from(reinterpret_cast<const std::byte*>(std::ranges::data(in)), std::ranges::size(in) * sizeof(T));
    const std::span<std::byte> to(reinterpret_cast<std::byte*>(std::ranges::data(out)), std::ranges::size(out) * sizeof(T));
    batch_.run(std::span<const std::span<const std::byte>>(&from, 1), std::span<const std::span<std::byte>>(&to, 1), problem);
  }

 private:
  batch_resharder<Solver, Strategy> batch_;
  std::size_t element_bytes_;
};

/// Reshards `in` (this rank's shard of `src`) into `out` (its shard of `dst`) over `comm`, rank r
/// being device r: one collective call. For repeated reshards of the same layouts, build a
/// `resharder` once instead. `Solver` and `Strategy` choose the schedule (greedy senders and
/// order, a local all-gather on each receiving host by default).
template <solver Solver = greedy, strategy Strategy = auto_strategy, layout_like Src, layout_like Dst,
          std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
void reshard(MPI_Comm comm, const Src& src, const Dst& dst, In&& in, Out&& out, reshard_options options = {}) {
  using T = std::remove_cvref_t<std::ranges::range_value_t<In>>;
  resharder<Solver, Strategy> r(comm, src, dst, sizeof(T), options);
  r(std::forward<In>(in), std::forward<Out>(out));
}

/// The tensors of a batch for the one call: layouts and this rank's shards (typed ranges, kept
/// as bytes; they must outlive the call).
class batch {
 public:
  template <layout_like Src, layout_like Dst, std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  batch& add(const Src& src, const Dst& dst, In&& in, Out&& out) {
    static_assert(detail::static_shapes_agree<Src, Dst>(),
                  "The source and destination layouts have different static shapes: resharding keeps the tensor's shape.");
    using T = std::remove_cvref_t<std::ranges::range_value_t<In>>;
    static_assert(std::is_same_v<T, std::remove_cvref_t<std::ranges::range_value_t<Out>>>,
                  "The source and destination shards must hold the same element type.");
    static_assert(std::is_trivially_copyable_v<T>, "Shards are moved as bytes: their element type must be trivially copyable.");
    layouts_.push_back({src.value(), dst.value(), sizeof(T)});
    in_.emplace_back(reinterpret_cast<const std::byte*>(std::ranges::data(in)), std::ranges::size(in) * sizeof(T));
    out_.emplace_back(reinterpret_cast<std::byte*>(std::ranges::data(out)), std::ranges::size(out) * sizeof(T));
    return *this;
  }
  const std::vector<tensor_layouts>& layouts() const noexcept { return layouts_; }
  std::span<const std::span<const std::byte>> in() const noexcept { return in_; }
  std::span<const std::span<std::byte>> out() const noexcept { return out_; }

 private:
  std::vector<tensor_layouts> layouts_;
  std::vector<std::span<const std::byte>> in_;
  std::vector<std::span<std::byte>> out_;
};

/// Reshards every tensor of `b` in one schedule over `comm`: one collective call.
template <solver Solver = greedy, strategy Strategy = auto_strategy>
void reshard(MPI_Comm comm, const batch& b, reshard_options options = {}) {
  batch_resharder<Solver, Strategy> r(comm, b.layouts(), options);
  r(b.in(), b.out());
}

}  // namespace meshcast

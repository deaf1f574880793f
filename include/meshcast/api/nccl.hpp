// meshcast over NCCL: one call reshards a tensor across the ranks of an NCCL communicator (rank r
// is device r, shards in GPU memory, work on one CUDA stream), and an `nccl_resharder` keeps plan,
// schedule and buffers for repeated calls: the same shape as <meshcast/mpi.hpp>.
//
//   meshcast::reshard(comm, stream, src_layout, dst_layout, in, out);      // device spans
//   meshcast::reshard(comm, stream, src, dst, in, out, meshcast::reshard_options{.devices = meshcast::device_map::same()});
//
// It needs nothing but NCCL: rank 0's schedule and every agreement between ranks travel over the
// communicator itself (ncclSend/ncclRecv/ncclBroadcast), and broadcast groups get their ids the
// same way. Every misuse (communicator size, shard sizes, element size, ranks that disagree) is
// a meshcast::error on every rank. Needs <nccl.h> and <cuda_runtime.h>.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../exec/backend/nccl.hpp"
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
#include "batch.hpp"
#include "batch_checks.hpp"
#include "network_from.hpp"
#include "reshard_options.hpp"
#include "policies.hpp"
#include "policies_impl.hpp"
#include "../plan/tensor_layouts.hpp"

namespace meshcast {

namespace detail {
/// Small collectives over an NCCL communicator built from point-to-point calls and broadcasts:
/// what the one-call API needs to agree and to share a schedule, with no other runtime.
class nccl_channel {
 public:
  nccl_channel(ncclComm_t comm, cudaStream_t stream) : comm_(comm), memory_{stream} {
    nccl_check(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
    nccl_check(ncclCommCount(comm_, &size_), "ncclCommCount");
    scratch_ = memory_.allocate(static_cast<std::size_t>(size_) * sizeof(std::uint64_t));  // kept: one per reshard call
  }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  /// Every rank's value, in rank order, on every rank.
  std::vector<std::uint64_t> all_gather(std::uint64_t value) {
    const auto n = static_cast<std::size_t>(size_);
    auto& buf = *scratch_;
    std::vector<std::uint64_t> host(n, 0);
    host[static_cast<std::size_t>(rank_)] = value;
    to_device(buf.data(), host.data(), host.size() * sizeof(std::uint64_t));
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    if (rank_ == 0) {
      for (int r = 1; r < size_; ++r)
        nccl_check(ncclRecv(buf.data() + static_cast<std::size_t>(r) * 8, 8, ncclUint8, r, comm_, memory_.stream), "ncclRecv");
    } else {
      nccl_check(ncclSend(buf.data() + static_cast<std::size_t>(rank_) * 8, 8, ncclUint8, 0, comm_, memory_.stream), "ncclSend");
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    nccl_check(ncclBroadcast(buf.data(), buf.data(), n * 8, ncclUint8, 0, comm_, memory_.stream), "ncclBroadcast");
    to_host(host.data(), buf.data(), host.size() * sizeof(std::uint64_t));
    return host;
  }
  /// `bytes` from `root` to every rank (host memory on both ends).
  void broadcast(void* data, std::size_t bytes, int root) {
    auto buf = memory_.allocate(bytes);
    if (rank_ == root) to_device(buf.data(), data, bytes);
    nccl_check(ncclBroadcast(buf.data(), buf.data(), bytes, ncclUint8, root, comm_, memory_.stream), "ncclBroadcast");
    to_host(data, buf.data(), bytes);
  }
  /// Throws on every rank when any rank has a non-empty `problem` (the first failing rank's message).
  void agree_or_throw(const std::string& problem) {
    const auto flags = all_gather(problem.empty() ? 0 : 1);
    const auto first = std::find(flags.begin(), flags.end(), 1u) - flags.begin();
    if (first == static_cast<std::ptrdiff_t>(flags.size())) return;
    std::string text = rank_ == first ? problem : std::string();
    std::uint64_t n = text.size();
    broadcast(&n, sizeof n, static_cast<int>(first));
    text.resize(static_cast<std::size_t>(std::min<std::uint64_t>(n, 4096)));
    broadcast(text.data(), text.size(), static_cast<int>(first));
    throw error(rank_ == first ? text : "rank " + std::to_string(first) + " reports: " + text);
  }
  ncclComm_t comm() const noexcept { return comm_; }
  cuda_memory& memory() noexcept { return memory_; }

 private:
  void to_device(std::byte* to, const void* from, std::size_t n) {
    cuda_check(cudaMemcpyAsync(to, from, n, cudaMemcpyHostToDevice, memory_.stream), "cudaMemcpyAsync");
  }
  void to_host(void* to, const std::byte* from, std::size_t n) {
    cuda_check(cudaMemcpyAsync(to, from, n, cudaMemcpyDeviceToHost, memory_.stream), "cudaMemcpyAsync");
    memory_.synchronize();
  }
  ncclComm_t comm_;
  cuda_memory memory_;
  std::optional<cuda_memory::buffer> scratch_;
  int rank_ = 0, size_ = 0;
};
}  // namespace detail

/// Broadcast groups get their NCCL ids over the parent communicator: the group's root sends its
/// id to each member.
struct nccl_comm_bootstrap {
  ncclComm_t world = nullptr;
  cudaStream_t stream = nullptr;
  void share(ncclUniqueId& id, std::span<const index_t> members, index_t root, int) {
    cuda_memory m{stream};
    auto buf = m.allocate(sizeof id);
    int me = 0;
    detail::nccl_check(ncclCommUserRank(world, &me), "ncclCommUserRank");
    if (me == root)
      detail::cuda_check(cudaMemcpyAsync(buf.data(), &id, sizeof id, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    detail::nccl_check(ncclGroupStart(), "ncclGroupStart");
    if (me == root) {
      for (index_t r : members)
        if (r != root) detail::nccl_check(ncclSend(buf.data(), sizeof id, ncclUint8, static_cast<int>(r), world, stream), "ncclSend");
    } else {
      detail::nccl_check(ncclRecv(buf.data(), sizeof id, ncclUint8, static_cast<int>(root), world, stream), "ncclRecv");
    }
    detail::nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    detail::cuda_check(cudaMemcpyAsync(&id, buf.data(), sizeof id, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    m.synchronize();
  }
};
static_assert(nccl_bootstrap<nccl_comm_bootstrap>);

/// The NCCL form of `batch_resharder` (<meshcast/mpi.hpp>): a batch of tensors (a model's
/// weights: `read_manifest(...).tensors`) planned and solved as one schedule, built collectively
/// over `comm`; then each call moves this rank's shards (device memory) on `stream`, which is
/// synchronised before a call returns. Its operations go in groups of at most `group_transfers`
/// transfers (NCCL has been reported to hang past about 15,000 operations in one group). Hosts:
/// `options.host_of`, else `options.devices_per_host`, else ranks with one host name share a host.
template <solver Solver = greedy, strategy Strategy = auto_strategy>
class nccl_batch_resharder {
 public:
  nccl_batch_resharder(ncclComm_t comm, cudaStream_t stream, std::vector<tensor_layouts> tensors, reshard_options options = {},
                       Solver solver = {}, Strategy strategy = {}, std::size_t group_transfers = nccl_group_transfers)
      : channel_(comm, stream), options_(std::move(options)), tensors_(std::move(tensors)) {
    const int size = channel_.size();
    std::string problem;
    try {
      plans_ = detail::batch_plans(tensors_, options_, size);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    channel_.agree_or_throw(problem);
    const detail::erased_policies policies = detail::erase_policies<Solver, Strategy>(&solver, &strategy);
    const std::uint64_t key = detail::batch_key(tensors_, options_, policies.name(false), policies.name(true));
    for (std::uint64_t k : channel_.all_gather(key))
      if (k != key)
        throw error("the ranks of the communicator were given different layouts, element sizes or options for one "
                    "reshard; every rank must pass the same ones");
    try {
      std::vector<index_t> hosts;
      if (!options_.host_of.empty()) {
        hosts = options_.host_of;
      } else if (options_.devices_per_host > 0) {
        hosts = default_hosts(plans_[0].device_count, static_cast<index_t>(plans_[0].src_devices.size()), options_.devices_per_host);
      } else {
        char name[256] = {};
        gethostname(name, sizeof name - 1);
        const auto all = channel_.all_gather(std::hash<std::string>{}(name));
        std::vector<std::uint64_t> distinct;
        for (std::uint64_t h : all)
          if (std::find(distinct.begin(), distinct.end(), h) == distinct.end()) distinct.push_back(h);
        for (std::uint64_t h : all) hosts.push_back(std::find(distinct.begin(), distinct.end(), h) - distinct.begin());
      }
      net_ = network_from(options_, hosts);
      if (channel_.rank() == 0) policies.solve(policies, plans_, net_, options_, schedule_);  // as over MPI
    } catch (const std::exception& e) {
      problem = e.what();
    }
    channel_.agree_or_throw(problem);
    // Rank 0's schedule to everyone, as wire words.
    std::vector<std::int64_t> words = channel_.rank() == 0 ? to_wire(schedule_) : std::vector<std::int64_t>{};
    std::uint64_t n = words.size();
    channel_.broadcast(&n, sizeof n, 0);
    words.resize(static_cast<std::size_t>(n));
    channel_.broadcast(words.data(), words.size() * sizeof(std::int64_t), 0);
    try {
      if (channel_.rank() != 0) schedule_ = from_wire(words);
      executor_.emplace(nccl_backend<nccl_comm_bootstrap>(comm, stream, nccl_comm_bootstrap{comm, stream}, group_transfers),
                        std::span<const plan>(plans_), schedule_, options_.max_staging_bytes);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    channel_.agree_or_throw(problem);
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

  /// Reshards once: `in[k]` and `out[k]` are this rank's shards of tensor k in device memory, as
  /// bytes. Collective.
  void operator()(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out) {
    run(in, out, {});
  }
  /// The same, with a problem this rank found on its own (every rank then fails with it).
  void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out, std::string problem) {
    problem = detail::shard_problem(channel_.rank(), std::move(problem), in, out, tensors_,
                                    [&](std::size_t k) { return executor_->source_bytes(k); },
                                    [&](std::size_t k) { return executor_->destination_bytes(k); });
    channel_.agree_or_throw(problem);
    executor_->run(in, out);
  }

 private:
  detail::nccl_channel channel_;
  reshard_options options_;
  std::vector<tensor_layouts> tensors_;
  std::vector<meshcast::plan> plans_;
  meshcast::network net_;
  meshcast::schedule schedule_;
  std::optional<executor<nccl_backend<nccl_comm_bootstrap>>> executor_;
};

/// The NCCL form of `resharder` (<meshcast/mpi.hpp>): one tensor (a batch of one, typed shards in
/// device memory; batch.hpp's typed_resharder, shared with MPI).
template <solver Solver = greedy, strategy Strategy = auto_strategy>
class nccl_resharder : public detail::typed_resharder<nccl_batch_resharder<Solver, Strategy>> {
  using typed = detail::typed_resharder<nccl_batch_resharder<Solver, Strategy>>;

 public:
  template <layout_like Src, layout_like Dst>
  nccl_resharder(ncclComm_t comm, cudaStream_t stream, const Src& src, const Dst& dst, std::size_t element_bytes,
                 reshard_options options = {}, Solver solver = {}, Strategy strategy = {})
      : typed(element_bytes, comm, stream, std::vector<tensor_layouts>{{src.value(), dst.value(), element_bytes}},
              std::move(options), solver, strategy) {
    detail::check_static_shapes<Src, Dst>();
  }
};

/// Reshards this rank's device shard `in` of `src` into `out` of `dst` over `comm` on `stream`:
/// one collective call (see nccl_resharder for repeated reshards).
template <solver Solver = greedy, strategy Strategy = auto_strategy, layout_like Src, layout_like Dst,
          std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
void reshard(ncclComm_t comm, cudaStream_t stream, const Src& src, const Dst& dst, In&& in, Out&& out,
             reshard_options options = {}) {
  using T = std::remove_cvref_t<std::ranges::range_value_t<In>>;
  nccl_resharder<Solver, Strategy> r(comm, stream, src, dst, sizeof(T), options);
  r(std::forward<In>(in), std::forward<Out>(out));
}

/// Reshards every tensor of `b` (device shards) in one schedule over `comm` on `stream`: one
/// collective call, as over MPI.
template <solver Solver = greedy, strategy Strategy = auto_strategy>
void reshard(ncclComm_t comm, cudaStream_t stream, const batch& b, reshard_options options = {}) {
  nccl_batch_resharder<Solver, Strategy> r(comm, stream, b.layouts(), options);
  r(b.in(), b.out());
}

}  // namespace meshcast

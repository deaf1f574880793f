// meshcast over NCCL: one call reshards a tensor across the ranks of an NCCL communicator (rank r
// is device r, shards in GPU memory, work on one CUDA stream), and an `nccl_resharder` keeps plan,
// schedule and buffers for repeated calls: the same shape as <meshcast/mpi.hpp>.
//
//   meshcast::reshard(comm, stream, src_layout, dst_layout, in, out);      // device spans
//   meshcast::reshard(comm, stream, src, dst, in, out, meshcast::reshard_options{.devices = meshcast::device_map::same()});
//
// It needs nothing but NCCL: the front end written once for both transports (front_end.hpp) runs
// over NCCL's channel (nccl/channel.hpp), so rank 0's schedule and every agreement between ranks
// travel over the communicator itself (ncclSend/ncclRecv/ncclBroadcast), and broadcast groups
// get their ids the same way. Every misuse (communicator size, shard sizes, element size, ranks that disagree) is
// a meshcast::error on every rank. Every wait for the work on the stream gives up after
// `options.timeout_s` without progress (a timeout_error): that work cannot be withdrawn, so abort
// the communicator before freeing the shards. Needs <nccl.h> and <cuda_runtime.h>.
//
// What this header defines depends only on the caller's types; the rest is nccl/batch_core.hpp's,
// defined by nccl/batch_core_impl.hpp, included here header-only and compiled into
// libmeshcast-nccl under MESHCAST_COMPILED_NCCL (the meshcast::compiled_nccl target).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/compiled.hpp"
#include "../layout/layout.hpp"
#include "../layout/tensor_layouts.hpp"
#include "batch.hpp"
#include "batch_facade.hpp"
#include "nccl/batch_core.hpp"
#include "policies.hpp"
#include "reshard_options.hpp"

namespace meshcast {

/// The NCCL form of `batch_resharder` (<meshcast/mpi.hpp>): a batch of tensors (a model's
/// weights: `read_manifest(...).tensors`) planned and solved as one schedule, built collectively
/// over `comm`; then each call moves this rank's shards (device memory) on `stream`, which is
/// waited for (at most `options.timeout_s` without progress) before a call returns. Its operations
/// go in groups of at most `group_transfers` transfers (NCCL has been reported to hang past about
/// 15,000 operations in one group). Hosts:
/// `options.host_of`, else `options.devices_per_host`, else ranks with one host name share a host.
template <class Solver = greedy, class Strategy = auto_strategy>
class nccl_batch_resharder : public detail::batch_facade<detail::nccl_batch_core> {
  // the front end written once (api/front_end.hpp), over NCCL's channel, behind nccl_batch_core
  using facade = detail::batch_facade<detail::nccl_batch_core>;

 public:
  /// With default-constructed policies.
  nccl_batch_resharder(ncclComm_t comm, cudaStream_t stream, std::vector<tensor_layouts> tensors, reshard_options options = {})
      : facade(std::in_place, comm, stream, std::move(tensors), options, detail::erase_policies<Solver, Strategy>(),
               nccl_group_transfers) {
    detail::check_default_policies<Solver, Strategy>();
  }
  nccl_batch_resharder(ncclComm_t comm, cudaStream_t stream, std::vector<tensor_layouts> tensors, reshard_options options,
                       const Solver& solver, const Strategy& strategy = {}, std::size_t group_transfers = nccl_group_transfers)
      : facade(std::in_place, comm, stream, std::move(tensors), options, detail::erase_policies<Solver, Strategy>(&solver, &strategy),
               group_transfers) {}
};

/// The NCCL form of `resharder` (<meshcast/mpi.hpp>): one tensor (a batch of one, typed shards in
/// device memory; batch.hpp's typed_resharder, shared with MPI).
template <class Solver = greedy, class Strategy = auto_strategy>
class nccl_resharder : public detail::typed_resharder<nccl_batch_resharder<Solver, Strategy>> {
  using typed = detail::typed_resharder<nccl_batch_resharder<Solver, Strategy>>;

 public:
  /// With default-constructed policies.
  template <layout_like Src, layout_like Dst>
  nccl_resharder(ncclComm_t comm, cudaStream_t stream, const Src& src, const Dst& dst, std::size_t element_bytes,
                 reshard_options options = {})
      : typed(element_bytes, comm, stream, std::vector<tensor_layouts>{{src.value(), dst.value(), element_bytes}}, options) {
    detail::check_static_shapes<Src, Dst>();
  }
  template <layout_like Src, layout_like Dst>
  nccl_resharder(ncclComm_t comm, cudaStream_t stream, const Src& src, const Dst& dst, std::size_t element_bytes,
                 reshard_options options, const Solver& solver, const Strategy& strategy = {})
      : typed(element_bytes, comm, stream, std::vector<tensor_layouts>{{src.value(), dst.value(), element_bytes}}, options,
              solver, strategy) {
    detail::check_static_shapes<Src, Dst>();
  }
};

/// Reshards this rank's device shard `in` of `src` into `out` of `dst` over `comm` on `stream`:
/// one collective call (see nccl_resharder for repeated reshards).
template <class Solver = greedy, class Strategy = auto_strategy, layout_like Src, layout_like Dst,
          std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
void reshard(ncclComm_t comm, cudaStream_t stream, const Src& src, const Dst& dst, In&& in, Out&& out,
             reshard_options options = {}) {
  using T = std::remove_cvref_t<std::ranges::range_value_t<In>>;
  nccl_resharder<Solver, Strategy> r(comm, stream, src, dst, sizeof(T), options);
  r(std::forward<In>(in), std::forward<Out>(out));
}

/// Reshards every tensor of `b` (device shards) in one schedule over `comm` on `stream`: one
/// collective call, as over MPI.
template <class Solver = greedy, class Strategy = auto_strategy>
void reshard(ncclComm_t comm, cudaStream_t stream, const batch& b, reshard_options options = {}) {
  nccl_batch_resharder<Solver, Strategy> r(comm, stream, b.layouts(), options);
  r(b.in(), b.out());
}

}  // namespace meshcast

#if !defined(MESHCAST_COMPILED_NCCL)
#include "nccl/batch_core_impl.hpp"
#include "policies_impl.hpp"
#endif

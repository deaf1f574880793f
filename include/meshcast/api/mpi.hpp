// meshcast over MPI: one call reshards a tensor across the ranks of a communicator (rank r is
// device r), and a `resharder` keeps plan, schedule and buffers for repeated calls.
//
//   meshcast::reshard(comm, src_layout, dst_layout, in, out);   // in, out: this rank's shards
//   meshcast::reshard(comm, src, dst, in, out, meshcast::reshard_options{.devices = meshcast::device_map::same()});
//
// A shard is the rank's tile of the tensor, dense and row-major (empty where the rank has none).
// Every misuse (communicator size, shard sizes, element size, ranks that disagree) is a
// meshcast::error on every rank, never an MPI abort or a hang.
//
// What this header defines depends only on the caller's types (layouts, element types,
// policies); the rest is mpi/batch_core.hpp's, defined by mpi/batch_core_impl.hpp, which is
// included here in header-only mode and compiled into libmeshcast in compiled mode.
#pragma once

#include <mpi.h>

#include <cstddef>
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
#include "mpi/batch_core.hpp"
#include "policies.hpp"
#include "reshard_options.hpp"

namespace meshcast {

/// Reshards a batch of tensors again and again over an MPI communicator, rank r being device r:
/// their transfers are planned and solved as one schedule, so the NICs are balanced across all of
/// them (as Alpa balances the tensors of a stage boundary). Built collectively (every rank of
/// `comm` with the same arguments): it plans, has rank 0 solve the schedule (`Solver` under
/// `Strategy`, optimising the model of `options.mode`), shares it, and keeps the executor and
/// its buffers. Then each call moves this rank's shards. Every misuse is a meshcast::error on
/// every rank.
template <class Solver = greedy, class Strategy = auto_strategy>
class batch_resharder : public detail::batch_facade<detail::batch_core> {
  using facade = detail::batch_facade<detail::batch_core>;

 public:
  /// With default-constructed policies.
  batch_resharder(MPI_Comm comm, std::vector<tensor_layouts> tensors, reshard_options options = {})
      : facade(std::in_place, comm, std::move(tensors), options, detail::erase_policies<Solver, Strategy>()) {
    detail::check_default_policies<Solver, Strategy>();
  }
  batch_resharder(MPI_Comm comm, std::vector<tensor_layouts> tensors, reshard_options options, const Solver& solver,
                  const Strategy& strategy = {})
      : facade(std::in_place, comm, std::move(tensors), options, detail::erase_policies<Solver, Strategy>(&solver, &strategy)) {}
};

/// Reshards one tensor again and again between two layouts (a batch of one, with typed shards:
/// batch.hpp's typed_resharder).
template <class Solver = greedy, class Strategy = auto_strategy>
class resharder : public detail::typed_resharder<batch_resharder<Solver, Strategy>> {
  using typed = detail::typed_resharder<batch_resharder<Solver, Strategy>>;

 public:
  /// With default-constructed policies.
  template <layout_like Src, layout_like Dst>
  resharder(MPI_Comm comm, const Src& src, const Dst& dst, std::size_t element_bytes, reshard_options options = {})
      : typed(element_bytes, comm, std::vector<tensor_layouts>{{src.value(), dst.value(), element_bytes}}, options) {
    detail::check_static_shapes<Src, Dst>();
  }
  template <layout_like Src, layout_like Dst>
  resharder(MPI_Comm comm, const Src& src, const Dst& dst, std::size_t element_bytes, reshard_options options,
            const Solver& solver, const Strategy& strategy = {})
      : typed(element_bytes, comm, std::vector<tensor_layouts>{{src.value(), dst.value(), element_bytes}}, options, solver,
              strategy) {
    detail::check_static_shapes<Src, Dst>();
  }
};

/// Reshards `in` (this rank's shard of `src`) into `out` (its shard of `dst`) over `comm`, rank r
/// being device r: one collective call. For repeated reshards of the same layouts, build a
/// `resharder` once instead. `Solver` and `Strategy` choose the schedule (by default greedy
/// senders and order, and `auto`, which picks send_recv, send_recv_allgather or a broadcast chain
/// per task).
template <class Solver = greedy, class Strategy = auto_strategy, layout_like Src, layout_like Dst,
          std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
void reshard(MPI_Comm comm, const Src& src, const Dst& dst, In&& in, Out&& out, reshard_options options = {}) {
  using T = std::remove_cvref_t<std::ranges::range_value_t<In>>;
  resharder<Solver, Strategy> r(comm, src, dst, sizeof(T), options);
  r(std::forward<In>(in), std::forward<Out>(out));
}

/// Reshards every tensor of `b` in one schedule over `comm`: one collective call.
template <class Solver = greedy, class Strategy = auto_strategy>
void reshard(MPI_Comm comm, const batch& b, reshard_options options = {}) {
  batch_resharder<Solver, Strategy> r(comm, b.layouts(), options);
  r(b.in(), b.out());
}

}  // namespace meshcast

#if !defined(MESHCAST_COMPILED)
#include "mpi/batch_core_impl.hpp"
#include "policies_impl.hpp"
#endif

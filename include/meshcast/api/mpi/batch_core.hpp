// The type-independent part of the MPI front end: the collectives every rank runs together
// (sharing a schedule, agreeing on errors, finding hosts) and `batch_core`, which plans, solves,
// shares and runs a batch over a communicator. Declarations only: collectives_impl.hpp and
// batch_core_impl.hpp define them, inline in header-only mode and once in libmeshcast in compiled mode (core/compiled.hpp).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "../../core/compiled.hpp"
#include "../../core/config.hpp"
#include "../../layout/tensor_layouts.hpp"
#include "../core_handle.hpp"
#include "../policies.hpp"
#include "../reshard_options.hpp"

namespace meshcast {

struct plan;
struct schedule;
class network;

/// Hands `root`'s schedule to every rank of `comm` (so that ranks never run solvers that may
/// differ, e.g. time-limited searches), then checks that all ranks agree on plan and schedule.
/// Every step gives up with `timeout_error` after `timeout_s` seconds.
MESHCAST_INLINE void share_schedule(MPI_Comm comm, std::span<const plan> plans, schedule& s, int root = 0,
                                    double timeout_s = 60);
MESHCAST_INLINE void share_schedule(MPI_Comm comm, const plan& p, schedule& s, int root = 0, double timeout_s = 60);

/// Throws on every rank of `comm` when any rank has a non-empty `problem`: each rank throws the
/// first failing rank's message (naming that rank). Bounded in time like every collective here.
MESHCAST_INLINE void agree_or_throw(MPI_Comm comm, const std::string& problem, double timeout_s);

/// The host of every rank of `comm`: ranks that share memory (MPI_COMM_TYPE_SHARED) are on one
/// host; hosts are numbered in the order of their lowest rank. Bounded in time like the rest but
/// for MPI_Comm_split_type itself (MPI has no nonblocking form), which it enters only once every
/// rank has arrived.
MESHCAST_INLINE std::vector<index_t> discover_hosts(MPI_Comm comm, double timeout_s = 60);

namespace detail {

struct mpi_batch_state;  // batch_core_impl.hpp: kept out of view so that includers parse none of it
#if defined(MESHCAST_COMPILED)
extern template class core_handle<mpi_batch_state>;  // instantiated in libmeshcast (src/mpi.cpp)
#endif

/// A batch resharder's state over a communicator, whatever its policies: the front end written
/// once for every transport (../front_end.hpp) over MPI's channel (channel.hpp), behind a pointer
/// (../core_handle.hpp). Built collectively, it plans, has rank 0 solve (through `policies`),
/// shares the schedule and keeps the executor and its buffers. Every misuse is a meshcast::error
/// on every rank.
class batch_core : public core_handle<mpi_batch_state> {
 public:
  MESHCAST_INLINE batch_core(MPI_Comm comm, std::vector<tensor_layouts> tensors, const reshard_options& options,
                             const erased_policies& policies);
};

}  // namespace detail
}  // namespace meshcast

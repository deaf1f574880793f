// Bootstrapping NCCL communicators through MPI: the world communicator (rank 0 draws the unique
// id and broadcasts it) and the broadcast groups of the NCCL backend (the group's root sends its
// id to each member). The MPI waits are bounded by `timeout_s` (a rank that never comes is a
// timeout_error, not a hang; 0: no bound, as for mpi_backend). NCCL's own initialisation is
// bounded too where the communicator is nonblocking (nccl_world's `nonblocking`); a blocking one's
// is not.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mpi_bounded.hpp"
#include "nccl.hpp"

namespace meshcast {

struct mpi_nccl_bootstrap {
  MPI_Comm comm = MPI_COMM_WORLD;
  double timeout_s = 60;
  void share(ncclUniqueId& id, std::span<const index_t> members, index_t root, int tag) {
    int me = 0;
    MPI_Comm_rank(comm, &me);
    const int on = 30000 + tag % 2000;
    const double limit = detail::checked_seconds(timeout_s, "mpi_nccl_bootstrap::timeout_s");
    const detail::deadline stop = detail::collective_deadline(limit);  // 0: no bound
    // The id travels through a buffer of the exchange's own, kept should a wait give up
    // (detail::completed_or_kept): a member arriving late never touches the caller's `id`.
    struct operation {
      ncclUniqueId id{};
      std::vector<MPI_Request> requests;
      std::vector<int> to;
    };
    auto o = std::make_unique<operation>();
    try {
      if (me == root) {
        o->id = id;
        for (index_t m : members)
          if (m != root) {
            o->requests.push_back(MPI_REQUEST_NULL);
            o->to.push_back(static_cast<int>(m));
          }
        for (std::size_t i = 0; i < o->to.size(); ++i)
          detail::mpi_check(MPI_Isend(&o->id, sizeof o->id, MPI_BYTE, o->to[i], on, comm, &o->requests[i]), "MPI_Isend",
                            o->to[i]);
      } else {
        o->requests.push_back(MPI_REQUEST_NULL);
        o->to.push_back(static_cast<int>(root));
        detail::mpi_check(MPI_Irecv(&o->id, sizeof o->id, MPI_BYTE, o->to[0], on, comm, &o->requests[0]), "MPI_Irecv", o->to[0]);
      }
    } catch (...) {  // what was posted still uses the buffer
      detail::keep_until_exit(std::shared_ptr<operation>(std::move(o)));
      throw;
    }
    for (std::size_t i = 0; i < o->requests.size(); ++i) {
      const int peer = o->to[i];
      if (!detail::completed_or_kept(o, o->requests[i], stop, peer))
        throw timeout_error("device " + std::to_string(me) + ": no NCCL group id exchanged with device " +
                                std::to_string(peer) + " within " + detail::number(limit) + " s",
                            {peer});
    }
    id = o->id;
  }
};
static_assert(nccl_bootstrap<mpi_nccl_bootstrap>);

/// An NCCL communicator over all ranks of `comm` (rank r of `comm` is rank r of the result); the
/// unique id's broadcast gives up after `timeout_s` (0: waits as long as it takes). `nonblocking`:
/// made with ncclConfig_t::blocking = 0, so that its creation gives up after `timeout_s` too (a
/// rank that never joins; the communicator is then aborted); give meshcast
/// `reshard_options::nccl_nonblocking` (or nccl_backend's `nonblocking`) with it.
inline ncclComm_t nccl_world(MPI_Comm comm, double timeout_s = 60, bool nonblocking = false) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  ncclUniqueId id{};
  if (rank == 0) detail::nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  detail::checked_seconds(timeout_s, "nccl_world's timeout");
  bounded_broadcast(comm, &id, sizeof id, 0, timeout_s, "receiving rank 0's NCCL unique id");  // 0: no bound
  ncclComm_t c = nullptr;
  if (!nonblocking) {
    detail::nccl_check(ncclCommInitRank(&c, size, id, rank), "ncclCommInitRank");
    return c;
  }
  // Nothing on a stream yet: aborting what a failed creation began does not wait for work.
  return detail::nccl_init_nonblocking(size, id, rank, timeout_s, [](ncclComm_t begun) {
    if (begun) ncclCommAbort(begun);
  });
}

}  // namespace meshcast

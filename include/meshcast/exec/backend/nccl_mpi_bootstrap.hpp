// Bootstrapping NCCL communicators through MPI: the world communicator (rank 0 draws the unique
// id and broadcasts it) and the broadcast groups of the NCCL backend (the group's root sends its
// id to each member). The MPI waits are bounded by `timeout_s` (a rank that never comes is a
// timeout_error, not a hang; 0: no bound, as for mpi_backend); NCCL's own initialisation has no
// deadline meshcast can set.
#pragma once

#include <mpi.h>
#include <nccl.h>

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
    const detail::deadline stop(limit);
    std::vector<MPI_Request> sends;
    std::vector<int> to;
    if (me == root) {
      for (index_t m : members)
        if (m != root) {
          sends.push_back(MPI_REQUEST_NULL);
          to.push_back(static_cast<int>(m));
          detail::mpi_check(MPI_Isend(&id, sizeof id, MPI_BYTE, to.back(), on, comm, &sends.back()), "MPI_Isend", to.back());
        }
    } else {
      sends.push_back(MPI_REQUEST_NULL);
      to.push_back(static_cast<int>(root));
      detail::mpi_check(MPI_Irecv(&id, sizeof id, MPI_BYTE, to.back(), on, comm, &sends.back()), "MPI_Irecv", to.back());
    }
    for (std::size_t i = 0; i < sends.size(); ++i)
      if (limit == 0) detail::mpi_check(MPI_Wait(&sends[i], MPI_STATUS_IGNORE), "MPI_Wait", to[i]);
      else if (!detail::wait_until(sends[i], stop, to[i]))
        throw timeout_error("device " + std::to_string(me) + ": no NCCL group id exchanged with device " +
                                std::to_string(to[i]) + " within " + detail::number(limit) + " s",
                            {to[i]});
  }
};
static_assert(nccl_bootstrap<mpi_nccl_bootstrap>);

/// An NCCL communicator over all ranks of `comm` (rank r of `comm` is rank r of the result); the
/// unique id's broadcast gives up after `timeout_s` (0: waits as long as it takes).
inline ncclComm_t nccl_world(MPI_Comm comm, double timeout_s = 60) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  ncclUniqueId id{};
  if (rank == 0) detail::nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  if (detail::checked_seconds(timeout_s, "nccl_world's timeout") == 0)
    detail::mpi_check(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm), "MPI_Bcast");
  else bounded_broadcast(comm, &id, sizeof id, 0, timeout_s, "receiving rank 0's NCCL unique id");
  ncclComm_t c = nullptr;
  detail::nccl_check(ncclCommInitRank(&c, size, id, rank), "ncclCommInitRank");
  return c;
}

}  // namespace meshcast

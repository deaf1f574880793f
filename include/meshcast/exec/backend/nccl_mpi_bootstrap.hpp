// Bootstrapping NCCL communicators through MPI: the world communicator (rank 0 draws the unique
// id and broadcasts it) and the broadcast groups of the NCCL backend (the group's root sends its
// id to each member).
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <span>

#include "nccl.hpp"

namespace meshcast {

struct mpi_nccl_bootstrap {
  MPI_Comm comm = MPI_COMM_WORLD;
  void share(ncclUniqueId& id, std::span<const index_t> members, index_t root, int tag) {
    int me = 0;
    MPI_Comm_rank(comm, &me);
    if (me == root) {
      for (index_t m : members)
        if (m != root) MPI_Send(&id, sizeof id, MPI_BYTE, static_cast<int>(m), 30000 + tag % 2000, comm);
    } else {
      MPI_Recv(&id, sizeof id, MPI_BYTE, static_cast<int>(root), 30000 + tag % 2000, comm, MPI_STATUS_IGNORE);
    }
  }
};
static_assert(nccl_bootstrap<mpi_nccl_bootstrap>);

/// An NCCL communicator over all ranks of `comm` (rank r of `comm` is rank r of the result).
inline ncclComm_t nccl_world(MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  ncclUniqueId id{};
  if (rank == 0) detail::nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
  ncclComm_t c = nullptr;
  detail::nccl_check(ncclCommInitRank(&c, size, id, rank), "ncclCommInitRank");
  return c;
}

}  // namespace meshcast

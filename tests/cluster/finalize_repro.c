/* finalize_repro: the smallest program that shows MPICH 4.0.2 (ch4:ucx, UCX 1.13 over TCP) hanging in
 * MPI_Finalize: every rank exchanges BYTES bytes with every other rank (MPI_Ialltoall), waits, passes
 * a barrier and finalizes. Prints "finalize-repro: ok N ranks" on rank 0 after MPI_Finalize returns.
 *
 *   MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self mpiexec -n 5 ./finalize_repro [BYTES]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t bytes = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 1 << 20;
  char* send = (char*)malloc(bytes * (size_t)size);
  char* recv = (char*)malloc(bytes * (size_t)size);
  memset(send, rank, bytes * (size_t)size);
  MPI_Request req;
  MPI_Ialltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  int bad = 0;
  for (int r = 0; r < size; ++r)
    if (recv[(size_t)r * bytes] != (char)r || recv[(size_t)r * bytes + bytes - 1] != (char)r) bad = 1;
  MPI_Barrier(MPI_COMM_WORLD);
  free(send);
  free(recv);
  MPI_Finalize();
  if (rank == 0) printf("finalize-repro: %s %d ranks\n", bad ? "WRONG DATA" : "ok", size);
  return bad;
}

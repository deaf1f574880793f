// A bench program's failure after MPI_Init: each rank reports its own, then the job ends. A peer
// may be waiting in a collective, so MPI_Finalize could hang; cli::end_job ends it within a bound.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <exception>

#include "cli/end_job.hpp"

namespace meshcast_bench {

[[noreturn]] inline void end_on_error(const char* program, const std::exception& e) {
  int up = 0, rank = -1;
  MPI_Initialized(&up);
  if (up) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "%s: rank %d: %s\n", program, rank, e.what());
  meshcast::cli::end_job(2);
}

}  // namespace meshcast_bench

// Checks of the multi-rank tests: a failed check prints its rank and what failed, and counts;
// main returns non-zero when any rank counted one.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>

namespace meshcast_test {

inline int failures = 0, rank = 0, size = 0;

inline void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: %s\n", rank, what.c_str());
    ++failures;
  }
}

/// Ends the test: sums every rank's failures, rank 0 prints `passed` or the count, MPI is
/// finalized; main's return value (non-zero when any rank failed).
inline int finish(const char* name, const char* passed) {
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    if (all) std::printf("%s: %d failures\n", name, all);
    else std::printf("%s: %s\n", name, passed);
  }
  MPI_Finalize();
  return all ? 1 : 0;
}

}  // namespace meshcast_test

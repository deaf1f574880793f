// meshcast-pipeline-mpi's clocks: this rank's steady clock in seconds, and its offset from rank
// 0's, estimated by ping-pong.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>

#include <meshcast/mpi.hpp>

namespace pipeline_mpi {
using namespace meshcast;
using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}
inline double clock_s() { return std::chrono::duration<double>(clock_type::now().time_since_epoch()).count(); }

/// This rank's steady clock minus rank 0's, estimated by ping-pong with rank 0 (of 40 exchanges,
/// the one with the shortest round trip), and the estimate's error bound: half that round trip.
/// Hosts' clocks differ; every rank's times are taken on rank 0's clock. On rank 0 `error_s` is
/// the largest bound over all ranks (the report's "clock_error_s": times taken on two ranks
/// compare to within twice that).
struct clock_estimate {
  double offset = 0, error_s = 0;
};
inline clock_estimate clock_offset() {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  constexpr int tag = 7001, rounds = 40;
  clock_estimate e;
  if (rank == 0) {
    for (int r = 1; r < size; ++r) {
      double best_rtt = 1e300, best = 0;
      for (int q = 0; q < rounds; ++q) {
        double theirs = 0;
        const double a = clock_s();
        detail::mpi_check(MPI_Send(&a, 1, MPI_DOUBLE, r, tag, MPI_COMM_WORLD), "MPI_Send");
        detail::mpi_check(MPI_Recv(&theirs, 1, MPI_DOUBLE, r, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        const double b = clock_s();
        if (b - a < best_rtt) best_rtt = b - a, best = theirs - (a + b) / 2;
      }
      e.error_s = std::max(e.error_s, best_rtt / 2);
      detail::mpi_check(MPI_Send(&best, 1, MPI_DOUBLE, r, tag, MPI_COMM_WORLD), "MPI_Send");
    }
  } else {
    for (int q = 0; q < rounds; ++q) {
      double ping = 0;
      detail::mpi_check(MPI_Recv(&ping, 1, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
      const double mine = clock_s();
      detail::mpi_check(MPI_Send(&mine, 1, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD), "MPI_Send");
    }
    detail::mpi_check(MPI_Recv(&e.offset, 1, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  }
  return e;
}

}  // namespace pipeline_mpi

// meshcast-pipeline-mpi's clocks: this rank's steady clock in seconds, and its offset from rank
// 0's, estimated by ping-pong.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <vector>

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
// One double to or from `peer`, bounded by `timeout_s` like the program's collectives (a rank that
// stopped is a timeout_error here, not a hang); the buffer outlives a wait given up on.
inline void send_double(double v, int peer, double timeout_s) {
  std::vector<double> buf{v};
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Isend(buf.data(), 1, MPI_DOUBLE, peer, 7001, MPI_COMM_WORLD, &r), "MPI_Isend");
  bounded_wait(r, timeout_s, "estimating the clocks' offsets", buf);
}
inline double recv_double(int peer, double timeout_s) {
  std::vector<double> buf{0.0};
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Irecv(buf.data(), 1, MPI_DOUBLE, peer, 7001, MPI_COMM_WORLD, &r), "MPI_Irecv");
  bounded_wait(r, timeout_s, "estimating the clocks' offsets", buf);
  return buf[0];
}

inline clock_estimate clock_offset(double timeout_s) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  constexpr int rounds = 40;
  clock_estimate e;
  if (rank == 0) {
    for (int r = 1; r < size; ++r) {
      double best_rtt = 1e300, best = 0;
      for (int q = 0; q < rounds; ++q) {
        const double a = clock_s();
        send_double(a, r, timeout_s);
        const double theirs = recv_double(r, timeout_s);
        const double b = clock_s();
        if (b - a < best_rtt) best_rtt = b - a, best = theirs - (a + b) / 2;
      }
      e.error_s = std::max(e.error_s, best_rtt / 2);
      send_double(best, r, timeout_s);
    }
  } else {
    for (int q = 0; q < rounds; ++q) {
      recv_double(0, timeout_s);
      send_double(clock_s(), 0, timeout_s);
    }
    e.offset = recv_double(0, timeout_s);
  }
  return e;
}

}  // namespace pipeline_mpi

// meshcast over MPI: everything a program needs to reshard with the MPI executor. This header
// sits on top: it brings the executor (exec/), the MPI transport (backend/mpi.hpp) and the
// planning layers together.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "backend/mpi.hpp"
#include "backend/mpi_bounded.hpp"
#include "exec/executor.hpp"
#include "exec/wire.hpp"
#include "meshcast.hpp"

namespace meshcast {

/// Hands `root`'s schedule to every rank of `comm` (so that ranks never run solvers that may
/// differ, e.g. time-limited searches), then checks that all ranks agree on plan and schedule.
/// Every step gives up with `timeout_error` after `timeout_s` seconds.
inline void share_schedule(MPI_Comm comm, const plan& p, schedule& s, int root = 0, double timeout_s = 60) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::int64_t> wire = rank == root ? to_wire(s) : std::vector<std::int64_t>{};
  long long n = static_cast<long long>(wire.size());
  bounded_broadcast(comm, &n, sizeof n, root, timeout_s, "receiving the schedule's size");
  if (n < 0 || static_cast<unsigned long long>(n) > (std::numeric_limits<int>::max() / sizeof(std::int64_t)))
    throw error("the schedule is too large to share (" + std::to_string(n) + " words)");
  wire.resize(static_cast<std::size_t>(n));
  bounded_broadcast(comm, wire.data(), static_cast<int>(n * static_cast<long long>(sizeof(std::int64_t))), root, timeout_s,
                    "receiving the schedule");
  if (rank != root) s = from_wire(wire);
  const std::uint64_t mine = fingerprint(p, s);
  std::uint64_t theirs = mine;
  bounded_broadcast(comm, &theirs, sizeof theirs, root, timeout_s, "comparing schedules");
  if (!all_ok(comm, mine == theirs, timeout_s, "comparing schedules"))
    throw error("ranks disagree on the plan: were they given the same layouts and sizes?");
}

}  // namespace meshcast

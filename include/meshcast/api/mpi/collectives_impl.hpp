// The definitions of the MPI collectives batch_core.hpp declares (sharing a schedule, agreeing on
// errors, finding hosts). Header-only mode includes this wherever they are used; libmeshcast
// compiles it once in compiled mode (src/mpi.cpp, through batch_core_impl.hpp).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "../../core/detail/failure_of.hpp"
#include "../../core/error.hpp"
#include "../../exec/backend/mpi.hpp"
#include "../../exec/backend/mpi_bounded.hpp"
#include "../../exec/wire.hpp"
#include "../../model/schedule.hpp"
#include "../../plan/plan.hpp"
#include "batch_core.hpp"

namespace meshcast {

MESHCAST_INLINE void share_schedule(MPI_Comm comm, std::span<const plan> plans, schedule& s, int root, double timeout_s) {
  detail::check_communicator(comm, "share_schedule", &root);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Every step that allocates is agreed on before the next collective: a rank out of memory alone
  // left the others to wait out the timeout, naming the healthy root as unreachable.
  std::vector<std::int64_t> wire;
  std::string problem;
  if (rank == root) problem = detail::failure_of([&] { wire = to_wire(s); }, "writing the schedule to share");
  agree_or_throw(comm, problem, timeout_s);
  long long n = static_cast<long long>(wire.size());
  bounded_broadcast(comm, &n, sizeof n, root, timeout_s, "receiving the schedule's size");
  if (n < 0 || static_cast<unsigned long long>(n) > (std::numeric_limits<int>::max() / sizeof(std::int64_t)))
    throw error("the schedule is too large to share (" + std::to_string(n) + " words)");
  agree_or_throw(comm, detail::failure_of([&] { wire.resize(static_cast<std::size_t>(n)); }, "receiving the schedule"), timeout_s);
  bounded_broadcast(comm, wire.data(), static_cast<int>(n * static_cast<long long>(sizeof(std::int64_t))), root, timeout_s,
                    "receiving the schedule", 0);
  // A rank that cannot read the schedule says so to all before the next collective (else the
  // others would only time out in it).
  if (rank != root) problem = detail::failure_of([&] { s = from_wire(wire); }, "reading the shared schedule");
  agree_or_throw(comm, problem, timeout_s);
  std::uint64_t mine = 0;
  agree_or_throw(comm, detail::failure_of([&] { mine = fingerprint(plans, s); }, "comparing schedules"), timeout_s);
  // Every rank's equals the root's where the least and the greatest are equal: two reductions,
  // whose state earlier agreements left ready, where a broadcast would allocate its buffer first
  // (a rank without room for 8 bytes there failed alone).
  const std::uint64_t low = bounded_allreduce(comm, mine, MPI_MIN, timeout_s, "comparing schedules");
  const std::uint64_t high = bounded_allreduce(comm, mine, MPI_MAX, timeout_s, "comparing schedules");
  if (low != high) throw error("ranks disagree on the plan: were they given the same layouts and sizes?");
}

MESHCAST_INLINE void share_schedule(MPI_Comm comm, const plan& p, schedule& s, int root, double timeout_s) {
  share_schedule(comm, std::span<const plan>(&p, 1), s, root, timeout_s);
}

MESHCAST_INLINE void agree_or_throw(MPI_Comm comm, const std::string& problem, double timeout_s) {
  detail::check_communicator(comm, "agree_or_throw");
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const auto first = static_cast<int>(bounded_allreduce(
      comm, problem.empty() ? static_cast<std::uint64_t>(INT_MAX) : static_cast<std::uint64_t>(rank), MPI_MIN, timeout_s,
      "checking that every rank is ready"));
  if (first == INT_MAX) return;
  std::string text = rank == first ? problem : std::string();
  long long n = static_cast<long long>(text.size());
  bounded_broadcast(comm, &n, sizeof n, first, timeout_s, "receiving another rank's error");
  text.resize(static_cast<std::size_t>(std::clamp(n, 0LL, 4096LL)));
  bounded_broadcast(comm, text.data(), static_cast<int>(text.size()), first, timeout_s, "receiving another rank's error");
  throw error(rank == first ? text : "rank " + std::to_string(first) + " reports: " + text);
}

MESHCAST_INLINE std::vector<index_t> discover_hosts(MPI_Comm comm, double timeout_s) {
  detail::check_communicator(comm, "discover_hosts");
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Room for every answer first, agreed on by the reduction that has every rank here before the
  // one blocking call (a rank that stopped earlier is a timeout there). A rank without room for
  // the gather had failed alone, and the others waited in the gather until timeout_s.
  std::vector<int> leaders, distinct;
  std::vector<index_t> host_of;
  bool made = true;
  try {
    leaders.resize(static_cast<std::size_t>(size));
    distinct.reserve(static_cast<std::size_t>(size));
    host_of.resize(static_cast<std::size_t>(size));
  } catch (const std::bad_alloc&) {
    made = false;
  }
  const auto without_room = static_cast<int>(bounded_allreduce(
      comm, made ? static_cast<std::uint64_t>(INT_MAX) : static_cast<std::uint64_t>(rank), MPI_MIN, timeout_s,
      "finding the ranks' hosts"));
  if (without_room != INT_MAX)
    throw error(without_room == rank ? std::string("out of memory while finding the ranks' hosts")
                                     : "rank " + std::to_string(without_room) + " ran out of memory while finding the ranks' hosts");
  MPI_Comm node = MPI_COMM_NULL;
  detail::mpi_check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int leader = rank;
  try {
    leader = static_cast<int>(bounded_allreduce(node, static_cast<std::uint64_t>(rank), MPI_MIN, timeout_s,
                                                "finding the lowest rank of each host"));
  } catch (...) {
    MPI_Comm_free(&node);
    throw;
  }
  MPI_Comm_free(&node);
  leaders = bounded_allgather(comm, leader, std::move(leaders), timeout_s, "gathering the ranks' hosts");
  distinct.assign(leaders.begin(), leaders.end());  // into the room reserved above
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (int r = 0; r < size; ++r)
    host_of[static_cast<std::size_t>(r)] =
        std::lower_bound(distinct.begin(), distinct.end(), leaders[static_cast<std::size_t>(r)]) - distinct.begin();
  return host_of;
}

}  // namespace meshcast

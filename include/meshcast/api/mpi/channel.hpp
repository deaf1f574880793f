// MPI's collective_channel (../channel.hpp): the front end's collectives over a communicator,
// each bounded by `timeout_s` (a rank that stops is a timeout_error on the others, never a
// hang). The functions it calls are batch_core.hpp's, usable on their own.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "../../exec/backend/mpi.hpp"
#include "../../exec/backend/mpi_bounded.hpp"
#include "../../model/network.hpp"
#include "../../model/schedule.hpp"
#include "../../plan/plan.hpp"
#include "../channel.hpp"
#include "../../core/compiled.hpp"
#include "batch_core.hpp"

namespace meshcast::detail {

struct mpi_channel {
  using backend_type = mpi_backend;
  MPI_Comm comm;
  double timeout_s;
  /// How much longer than `timeout_s` an agreement may wait: the solver's time limit, since the
  /// other ranks wait there while rank 0 solves (a solver allowed 8 s under a 5 s timeout made
  /// every rank fail with a timeout though none had stopped).
  double solve_s = 0;

  int rank() const {
    int r = 0;
    MPI_Comm_rank(comm, &r);
    return r;
  }
  int size() const {
    int n = 0;
    MPI_Comm_size(comm, &n);
    return n;
  }
  void agree_or_throw(const std::string& problem) {
    meshcast::agree_or_throw(comm, problem, std::min(timeout_s + solve_s, max_time_limit_s));
  }
  bool all_equal(std::uint64_t key) {
    const auto low = bounded_allreduce(comm, key, MPI_MIN, timeout_s, "comparing the ranks' arguments");
    const auto high = bounded_allreduce(comm, key, MPI_MAX, timeout_s, "comparing the ranks' arguments");
    return low == high;
  }
  std::vector<index_t> hosts() { return discover_hosts(comm, timeout_s); }
  void share(std::span<const plan> plans, schedule& s) { share_schedule(comm, plans, s, 0, timeout_s); }
  // The MPI backend's eager messages are acknowledged in ordered mode (connections.hpp).
  /// Any thread that may call MPI may run (MPI_THREAD_SERIALIZED is the caller's to ask for).
  std::string problem_here() const { return {}; }
  network fitted(network net) const { return net.with_eager_bytes(static_cast<index_t>(eager_limit_bytes)); }
  mpi_backend make_backend() const { return mpi_backend(comm, timeout_s); }
};
static_assert(collective_channel<mpi_channel>);

}  // namespace meshcast::detail

#if !defined(MESHCAST_COMPILED)
#include "collectives_impl.hpp"
#endif

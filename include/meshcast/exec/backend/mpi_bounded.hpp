// Collectives with a deadline. A rank that is gone, stopped or stuck must not keep the others in
// a barrier or a reduction forever: every wait here polls a nonblocking operation and gives up
// with a `meshcast::error` at its deadline, naming what it waited for.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "../../core/detail/deadline.hpp"
#include "../../core/detail/number_text.hpp"
#include "../../core/detail/pause.hpp"
#include "../../core/error.hpp"

namespace meshcast {

namespace detail {
/// `peer`: the other side of the failed operation, named in the message (-1: none or a group).
[[noreturn]] inline void mpi_failed(int rc, const char* what, int peer = -1) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  const std::string with = peer >= 0 ? " (a transfer with device " + std::to_string(peer) + ")" : std::string();
  throw error(std::string(what) + with + " failed: " + text);
}
inline void mpi_check(int rc, const char* what, int peer = -1) {
  if (rc != MPI_SUCCESS) [[unlikely]]
    mpi_failed(rc, what, peer);
}

/// Polls `r` until it completes or `stop` expires; returns whether it completed. On expiry the
/// request is left pending (it is abandoned, like the rank it waited for). Between polls it backs
/// off (`backoff`, core/detail/pause.hpp).
template <class Done>
bool poll_until(Done&& done, const deadline& stop) {
  for (backoff pause;; pause()) {
    if (done()) return true;
    if (stop.expired()) return false;
  }
}
inline bool wait_until(MPI_Request& r, const deadline& stop, int peer = -1) {
  return poll_until(
      [&] {
        int done = 0;
        mpi_check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test", peer);
        return done != 0;
      },
      stop);
}
}  // namespace detail

/// `value` reduced over the ranks of `comm` by `op` (MPI_SUM, MPI_MAX, MPI_MIN, ...); throws
/// `timeout_error` after `timeout_s` seconds without an answer.
inline std::uint64_t bounded_allreduce(MPI_Comm comm, std::uint64_t value, MPI_Op op, double timeout_s, const char* what) {
  const detail::deadline stop(timeout_s, "the timeout");
  unsigned long long mine = value, result = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Iallreduce(&mine, &result, 1, MPI_UNSIGNED_LONG_LONG, op, comm, &r), "MPI_Iallreduce");
  if (!detail::wait_until(r, stop))
    throw timeout_error(std::string("no answer from the other ranks within ") + detail::number(timeout_s) + " s while " + what,
                        {});
  return result;
}

/// Whether `ok` holds on every rank of `comm`, bounded in time like `bounded_allreduce`.
inline bool all_ok(MPI_Comm comm, bool ok, double timeout_s, const char* what = "agreeing on success") {
  return bounded_allreduce(comm, ok ? 1 : 0, MPI_MIN, timeout_s, what) == 1;
}

/// Every rank's `value`, in rank order, bounded in time like `bounded_allreduce`.
inline std::vector<int> bounded_allgather(MPI_Comm comm, int value, double timeout_s, const char* what) {
  const detail::deadline stop(timeout_s, "the timeout");
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<int> all(static_cast<std::size_t>(size));
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Iallgather(&value, 1, MPI_INT, all.data(), 1, MPI_INT, comm, &r), "MPI_Iallgather");
  if (!detail::wait_until(r, stop))
    throw timeout_error(std::string("no answer from the other ranks within ") + detail::number(timeout_s) + " s while " + what,
                        {});
  return all;
}

/// Broadcasts `bytes` from `root`, bounded in time.
inline void bounded_broadcast(MPI_Comm comm, void* data, int bytes, int root, double timeout_s, const char* what) {
  const detail::deadline stop(timeout_s, "the timeout");
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Ibcast(data, bytes, MPI_BYTE, root, comm, &r), "MPI_Ibcast");
  if (!detail::wait_until(r, stop))
    throw timeout_error(std::string("no answer from rank ") + std::to_string(root) + " within " + detail::number(timeout_s) +
                            " s while " + what,
                        {root});
}

/// A communicator of its own, duplicating `comm` (MPI_Comm_idup, bounded in time like the rest):
/// messages on it never meet the application's, whatever tags or wildcards those use. The caller
/// frees it (MPI_Comm_free).
inline MPI_Comm bounded_dup(MPI_Comm comm, double timeout_s) {
  const detail::deadline stop(timeout_s, "the timeout");
  MPI_Comm copy = MPI_COMM_NULL;
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Comm_idup(comm, &copy, &r), "MPI_Comm_idup");
  if (!detail::wait_until(r, stop))
    throw timeout_error(std::string("no answer from the other ranks within ") + detail::number(timeout_s) +
                            " s while setting up a communicator of meshcast's own",
                        {});
  return copy;
}

/// A barrier that names the ranks that did not arrive by its deadline: every rank sends a token
/// to every other one (on `tag`) and waits for all of theirs.
inline void bounded_barrier(MPI_Comm comm, double timeout_s, int tag = 32767) {
  const detail::deadline stop(timeout_s, "the timeout");
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<MPI_Request> recvs(static_cast<std::size_t>(size), MPI_REQUEST_NULL), sends = recvs;
  std::vector<char> token(static_cast<std::size_t>(size), 0);
  char mine = 1;
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    detail::mpi_check(MPI_Irecv(&token[static_cast<std::size_t>(p)], 1, MPI_BYTE, p, tag, comm, &recvs[static_cast<std::size_t>(p)]),
                      "MPI_Irecv", p);
    detail::mpi_check(MPI_Isend(&mine, 1, MPI_BYTE, p, tag, comm, &sends[static_cast<std::size_t>(p)]), "MPI_Isend", p);
  }
  std::vector<int> missing;
  for (int p = 0; p < size; ++p)
    if (p != rank && !detail::wait_until(recvs[static_cast<std::size_t>(p)], stop, p)) missing.push_back(p);
  if (!missing.empty()) {
    std::string who;
    for (std::size_t i = 0; i < missing.size() && i < 16; ++i) who += (i ? ", " : "") + std::to_string(missing[i]);
    if (missing.size() > 16) who += ", ...";
    // The tokens are abandoned with their ranks: the process is about to report and end.
    throw timeout_error("device " + std::to_string(rank) + ": device(s) " + who + " did not reach the barrier within " +
                            detail::number(timeout_s) + " s",
                        missing);
  }
  for (int p = 0; p < size; ++p)
    if (p != rank && !detail::wait_until(sends[static_cast<std::size_t>(p)], stop, p))
      throw timeout_error("device " + std::to_string(rank) + ": a barrier token to device " + std::to_string(p) +
                              " was not delivered in time",
                          {p});
}

}  // namespace meshcast

// What an NCCL call returned, made into meshcast's errors, and nonblocking communicators made. A nonblocking communicator
// (ncclConfig_t::blocking = 0) answers ncclInProgress and goes on in the background: NCCL then
// wants it polled (ncclCommGetAsyncError) until it leaves that state before anything else is
// called on it. meshcast bounds that poll, so a communicator's creation, or a group whose
// connections a peer never sets up, is a timeout_error and not a hang.
// Needs <nccl.h>.
#pragma once

#include <nccl.h>

#include <optional>
#include <span>
#include <string>

#include "../../core/detail/deadline.hpp"
#include "../../core/detail/number_text.hpp"
#include "../../core/detail/pause.hpp"
#include "../../core/error.hpp"

namespace meshcast::detail {

inline void nccl_check(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) throw error(std::string(what) + " failed: " + ncclGetErrorString(rc));
}

/// Throws when `comm` reports an asynchronous error (a failed link or peer): its work will not finish.
inline void nccl_check_async(ncclComm_t comm) {
  ncclResult_t e = ncclSuccess;
  nccl_check(ncclCommGetAsyncError(comm, &e), "ncclCommGetAsyncError");
  if (e != ncclSuccess && e != ncclInProgress)
    throw error(std::string("the NCCL communicator reports an asynchronous error: ") + ncclGetErrorString(e) +
                "; abort it (ncclCommAbort) before freeing the buffers it may still use");
}

/// Throws unless `comm` can take another call: a nonblocking communicator left in progress by a
/// wait that gave up, or one in error, refuses every call NCCL would make (and a refused call
/// would then hide the first failure). `problem`: what went wrong first on this rank, if known.
inline void nccl_usable(ncclComm_t comm, const std::string& problem = {}) {
  ncclResult_t state = ncclSuccess;
  nccl_check(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError");
  if (state == ncclSuccess) return;
  const std::string why = state == ncclInProgress ? std::string("still in progress with a call that gave up")
                                                  : std::string("in error (") + ncclGetErrorString(state) + ")";
  throw error((problem.empty() ? std::string() : problem + "; then ") + "the NCCL communicator is " + why +
              ": the other ranks are not told and time out; abort it (ncclCommAbort)");
}

/// Whether `comm` is in ncclSuccess: neither in progress nor in error (then NCCL takes a call).
inline bool nccl_settled(ncclComm_t comm) noexcept {
  ncclResult_t state = ncclSuccess;
  return ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclSuccess;
}

/// Finishes the call `what` that returned `rc` on the communicators `comms`: ncclSuccess returns,
/// an error throws, and ncclInProgress (a nonblocking communicator) polls all of `comms` until each
/// is done, throwing at the first that reports an error, or a timeout_error once `timeout_s` (0:
/// no bound) passed with one still busy.
inline void nccl_settle(ncclResult_t rc, std::span<const ncclComm_t> comms, const char* what, double timeout_s) {
  if (rc != ncclInProgress) return nccl_check(rc, what);
  std::optional<deadline> until;
  if (checked_seconds(timeout_s, "the NCCL timeout") > 0) until.emplace(timeout_s, "the NCCL timeout");
  for (backoff pause;; pause()) {
    bool busy = false;
    for (ncclComm_t c : comms) {  // every one each time: an error on any is reported at once
      ncclResult_t state = ncclSuccess;
      nccl_check(ncclCommGetAsyncError(c, &state), "ncclCommGetAsyncError");
      if (state == ncclInProgress) busy = true;
      else if (state != ncclSuccess) nccl_check(state, what);
    }
    if (!busy) return;
    if (until && until->expired())
      throw timeout_error(std::string(what) + " on a nonblocking NCCL communicator was still in progress after " +
                              number(timeout_s) +
                              " s (a peer that never joined the communicator or the group, or a failed link); abort "
                              "the communicator (ncclCommAbort)",
                          {});
  }
}
inline void nccl_settle(ncclResult_t rc, ncclComm_t comm, const char* what, double timeout_s) {
  nccl_settle(rc, std::span<const ncclComm_t>(&comm, 1), what, timeout_s);
}

/// Finalizes `comm` (ncclCommFinalize: its work flushed, in step with the peers) within
/// `timeout_s`; false when that fails or takes longer (then abort it).
inline bool nccl_finalized(ncclComm_t comm, double timeout_s) noexcept {
  try {
    nccl_settle(ncclCommFinalize(comm), comm, "ncclCommFinalize", timeout_s);
    return true;
  } catch (...) {
    return false;
  }
}

/// Rank `rank` of `n` of a new nonblocking communicator (ncclConfig_t::blocking = 0) over `id`,
/// its creation polled to its end within `timeout_s`. When that fails, `abandon` is given what NCCL
/// began (null if nothing), to abort it, before the error is thrown.
template <class Abandon>
ncclComm_t nccl_init_nonblocking(int n, ncclUniqueId id, int rank, double timeout_s, Abandon&& abandon) {
  ncclComm_t c = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t rc = ncclCommInitRankConfig(&c, n, id, rank, &config);
  try {
    nccl_settle(rc, c, "ncclCommInitRankConfig", timeout_s);
  } catch (...) {
    abandon(c);
    throw;
  }
  return c;
}

}  // namespace meshcast::detail

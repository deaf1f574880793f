// Collectives with a deadline. A rank that is gone, stopped or stuck must not keep the others in
// a barrier or a reduction forever: every wait here polls a nonblocking operation and gives up
// with a `meshcast::error` at its deadline, naming what it waited for. A timeout of 0 is no
// bound, as for `mpi_backend`.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "../../core/detail/deadline.hpp"
#include "../../core/detail/kept.hpp"
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
/// Refuses MPI_COMM_NULL and intercommunicators before any call on them (MPI's own handler would
/// end the job), and a `root` outside the communicator where one is given. `where` names the call.
inline void check_communicator(MPI_Comm comm, const char* where, const int* root = nullptr) {
  if (comm == MPI_COMM_NULL) throw error(std::string(where) + ": the communicator is MPI_COMM_NULL");
  int inter = 0, size = 0;
  mpi_check(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
  if (inter) throw error(std::string(where) + ": the communicator is an intercommunicator; give an intracommunicator");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  if (root && (*root < 0 || *root >= size))
    throw error(std::string(where) + ": root " + std::to_string(*root) + " is not a rank of the communicator (0.." +
                std::to_string(size - 1) + ")");
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

/// The deadline of a bounded collective: `timeout_s` from now; 0 is no bound, as for
/// `mpi_backend` (the longest limit, `max_time_limit_s`).
inline deadline collective_deadline(double timeout_s) {
  return deadline(checked_seconds(timeout_s, "the timeout") == 0 ? max_time_limit_s : timeout_s, "the timeout");
}

/// Waits like `wait_until` for `r`, a request of the operation `state` owns with the buffers it
/// writes. Should the wait give up (or fail), `state` is kept for the rest of the process with
/// the pending request (core/detail/kept.hpp): a rank that arrives late and completes the
/// operation then writes into memory still reserved for it, not into a freed stack frame or
/// vector (a test caught that: SIGSEGV in a later MPI_Test). An empty `state` is one in an
/// emergency slot (emergency_state): static, never reused, so nothing is kept.
template <class State>
bool completed_or_kept(std::unique_ptr<State>& state, MPI_Request& r, const deadline& stop, int peer = -1) {
  if (!state) return wait_until(r, stop, peer);
  bool done = false;
  try {
    done = wait_until(r, stop, peer);
  } catch (...) {
    keep_until_exit(std::shared_ptr<State>(std::move(state)));
    throw;
  }
  if (!done) keep_until_exit(std::shared_ptr<State>(std::move(state)));
  return done;
}

/// A collective's state where the heap has no room for it: one of a few slots of static storage,
/// each used once and never freed (a wait that gave up may leave it posted), or null once they are
/// spent. A rank out of memory then still takes part in the collective, and so in the agreement
/// that follows, instead of leaving the others to wait out the timeout in it.
template <class State>
State* emergency_state() noexcept {
  static State slots[4];
  static std::atomic<int> used{0};
  const int i = used.fetch_add(1);
  return i < 4 ? &slots[i] : nullptr;
}

/// `State` from the heap, else from emergency_state: `owned` holds it when it is the heap's (and
/// completed_or_kept then keeps it with a request it gave up on).
template <class State>
State& made_or_emergency(std::unique_ptr<State>& owned) {
  try {
    owned = std::make_unique<State>();
    return *owned;
  } catch (const std::bad_alloc&) {
    if (State* s = emergency_state<State>()) return *s;
    throw;
  }
}

/// Withdraws a pending receive (MPI_Cancel) so that it never writes into its buffer: one not yet
/// matched is cancelled at once. One already matched still completes when its data is in; no
/// wait for that here (a sender that is gone may never finish it).
inline void withdraw_receive(MPI_Request& r) noexcept {
  if (r == MPI_REQUEST_NULL || MPI_Cancel(&r) != MPI_SUCCESS) return;
  int done = 0;
  MPI_Test(&r, &done, MPI_STATUS_IGNORE);
}
}  // namespace detail

/// `value` reduced over the ranks of `comm` by `op` (MPI_SUM, MPI_MAX, MPI_MIN, ...); throws
/// `timeout_error` after `timeout_s` seconds without an answer.
inline std::uint64_t bounded_allreduce(MPI_Comm comm, std::uint64_t value, MPI_Op op, double timeout_s, const char* what) {
  const detail::deadline stop = detail::collective_deadline(timeout_s);
  struct operation {
    unsigned long long mine = 0, result = 0;
    MPI_Request r = MPI_REQUEST_NULL;
  };
  // Every run of a resharder agrees through here: the operation is reused, so that a run
  // allocates nothing (only one given up on is replaced).
  thread_local std::unique_ptr<operation> spare;
  std::unique_ptr<operation> owned = std::move(spare);
  operation& o = owned ? *owned : detail::made_or_emergency(owned);
  o.mine = value;
  o.result = 0;
  detail::mpi_check(MPI_Iallreduce(&o.mine, &o.result, 1, MPI_UNSIGNED_LONG_LONG, op, comm, &o.r), "MPI_Iallreduce");
  if (!detail::completed_or_kept(owned, o.r, stop))
    throw timeout_error(std::string("no answer from the other ranks within ") + detail::number(timeout_s) + " s while " + what,
                        {});
  const std::uint64_t result = o.result;
  if (owned) spare = std::move(owned);
  return result;
}

/// Waits for `r`, a nonblocking operation on the storage of the vectors `buffers`, at most
/// `timeout_s` (0: no bound); on giving up throws `timeout_error` naming `what`. The vectors'
/// storage is then kept for the rest of the process (moving a vector keeps its storage), so a
/// late rank completing the operation never writes into freed memory; the vectors are left empty.
template <class... Vectors>
void bounded_wait(MPI_Request& r, double timeout_s, const char* what, Vectors&... buffers) {
  const detail::deadline stop = detail::collective_deadline(timeout_s);
  bool done = false;
  try {
    done = detail::wait_until(r, stop);
  } catch (...) {
    detail::keep_until_exit(std::make_shared<std::tuple<Vectors...>>(std::move(buffers)...));
    throw;
  }
  if (done) return;
  detail::keep_until_exit(std::make_shared<std::tuple<Vectors...>>(std::move(buffers)...));
  throw timeout_error(std::string("no answer from the other ranks within ") + detail::number(timeout_s) + " s while " + what,
                      {});
}

/// Whether `ok` holds on every rank of `comm`, bounded in time like `bounded_allreduce`.
inline bool all_ok(MPI_Comm comm, bool ok, double timeout_s, const char* what = "agreeing on success") {
  return bounded_allreduce(comm, ok ? 1 : 0, MPI_MIN, timeout_s, what) == 1;
}

/// Every rank's `value`, in rank order, bounded in time like `bounded_allreduce`, gathered into
/// `room` (one element a rank of `comm`): storage the caller made before an agreement, so that no
/// rank fails alone between that agreement and the gather (discover_hosts).
inline std::vector<int> bounded_allgather(MPI_Comm comm, int value, std::vector<int>&& room, double timeout_s, const char* what) {
  const detail::deadline stop = detail::collective_deadline(timeout_s);
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  if (room.size() != static_cast<std::size_t>(size))
    throw error("bounded_allgather: room for " + std::to_string(room.size()) + " values, not one for each of the " +
                std::to_string(size) + " ranks");
  struct operation {
    std::vector<int> all;
    MPI_Request r = MPI_REQUEST_NULL;
  };
  std::unique_ptr<operation> owned;
  operation& o = detail::made_or_emergency(owned);
  o.all = std::move(room);
  o.all[static_cast<std::size_t>(rank)] = value;
  detail::mpi_check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, o.all.data(), 1, MPI_INT, comm, &o.r), "MPI_Iallgather");
  if (!detail::completed_or_kept(owned, o.r, stop))
    throw timeout_error(std::string("no answer from the other ranks within ") + detail::number(timeout_s) + " s while " + what,
                        {});
  return std::move(o.all);
}

/// As above, with room of its own: a rank without it fails alone, before the gather.
inline std::vector<int> bounded_allgather(MPI_Comm comm, int value, double timeout_s, const char* what) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  return bounded_allgather(comm, value, std::vector<int>(static_cast<std::size_t>(size)), timeout_s, what);
}

/// From this size on, bounded_broadcast's ranks agree that each holds a buffer for the message.
inline constexpr std::size_t agreed_broadcast_bytes = std::size_t{64} << 10;

/// Broadcasts `bytes` from `root`, bounded in time. The message travels through a buffer of the
/// call's own, so that a root arriving after the deadline never writes into `data`. Ranks agree
/// that each holds that buffer from `agree_from` bytes on (share_schedule: always).
inline void bounded_broadcast(MPI_Comm comm, void* data, int bytes, int root, double timeout_s, const char* what,
                              std::size_t agree_from = agreed_broadcast_bytes) {
  const detail::deadline stop = detail::collective_deadline(timeout_s);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  struct operation {
    std::array<unsigned char, 128> small{};  // a message of this size or less (an NCCL id) needs no buffer of its own
    std::vector<unsigned char> bytes;
    MPI_Request r = MPI_REQUEST_NULL;
  };
  const auto n = static_cast<std::size_t>(bytes > 0 ? bytes : 0);
  std::unique_ptr<operation> owned;
  operation* o = nullptr;
  bool made = true;
  try {
    o = &detail::made_or_emergency(owned);  // a small message's state never fails a rank alone
    if (n > o->small.size()) o->bytes.resize(n);
  } catch (const std::bad_alloc&) {
    made = false;
  }
  // A large message's buffer is agreed on (every rank has the same `bytes`, so every rank asks):
  // a rank without one left the others to wait out the timeout.
  if (n >= agree_from) {
    if (!all_ok(comm, made, timeout_s, what))
      throw error(std::string(made ? "another rank ran out of memory" : "out of memory") + " while " + what);
  } else if (!made) {
    throw std::bad_alloc();
  }
  unsigned char* const buf = n <= o->small.size() ? o->small.data() : o->bytes.data();
  if (rank == root && n > 0) std::memcpy(buf, data, n);
  detail::mpi_check(MPI_Ibcast(buf, bytes, MPI_BYTE, root, comm, &o->r), "MPI_Ibcast");
  if (!detail::completed_or_kept(owned, o->r, stop))
    throw timeout_error(std::string("no answer from rank ") + std::to_string(root) + " within " + detail::number(timeout_s) +
                            " s while " + what,
                        {root});
  if (rank != root && n > 0) std::memcpy(data, buf, n);
}

/// A communicator of its own, duplicating `comm` (MPI_Comm_idup, bounded in time like the rest):
/// messages on it never meet the application's, whatever tags or wildcards those use. The caller
/// frees it (MPI_Comm_free).
inline MPI_Comm bounded_dup(MPI_Comm comm, double timeout_s) {
  detail::check_communicator(comm, "duplicating the communicator");
  const detail::deadline stop = detail::collective_deadline(timeout_s);
  struct operation {
    MPI_Comm copy = MPI_COMM_NULL;
    MPI_Request r = MPI_REQUEST_NULL;
  };
  std::unique_ptr<operation> owned;
  operation& o = detail::made_or_emergency(owned);
  detail::mpi_check(MPI_Comm_idup(comm, &o.copy, &o.r), "MPI_Comm_idup");
  if (!detail::completed_or_kept(owned, o.r, stop))
    throw timeout_error(std::string("no answer from the other ranks within ") + detail::number(timeout_s) +
                            " s while setting up a communicator of meshcast's own",
                        {});
  return o.copy;
}

/// What a `bounded_barrier` among up to `n` members posts: its requests and token bytes. Made
/// ahead by a caller whose barrier must not allocate once members may be waiting on it (the MPI
/// backend's groups: mpi_backend::prepare_groups); kept for the next barrier after a success.
struct barrier_posts {
  std::vector<MPI_Request> recvs, sends;
  std::vector<char> tokens;  // one a member, then this rank's own (a vector: moved, it keeps its address)
  barrier_posts() = default;
  explicit barrier_posts(std::size_t n) : recvs(n, MPI_REQUEST_NULL), sends(n, MPI_REQUEST_NULL), tokens(n + 1, 0) {}
  std::size_t capacity() const noexcept { return recvs.size(); }
};

/// A barrier among `members` (ranks of `comm`, this one among them) that names the members that
/// did not arrive by its deadline: each member sends a token to every other one (on `tag`) and
/// waits for all of theirs, under one deadline. `what` names the barrier in the error. `posts`
/// (at least `members.size()`) is what it posts, so that it allocates nothing unless it fails. On
/// a failure the posts stay posted, moved out of `posts` and kept with their buffers: a late
/// member's token is absorbed by them rather than left for the next barrier on `tag` to take.
inline void bounded_barrier(MPI_Comm comm, std::span<const int> members, double timeout_s, int tag, const char* what,
                            barrier_posts& posts) {
  const detail::deadline stop = detail::collective_deadline(timeout_s);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::size_t n = members.size();
  if (posts.capacity() < n) throw error("bounded_barrier: posts for " + std::to_string(posts.capacity()) + " members, not " + std::to_string(n));
  barrier_posts& o = posts;
  char& mine = o.tokens[n];
  mine = 1;
  const auto keep = [&] { detail::keep_until_exit(std::make_shared<barrier_posts>(std::move(o))); };
  std::vector<int> missing;  // allocates only on a failure
  int undelivered = -1;
  try {
    for (std::size_t i = 0; i < n; ++i) {
      o.recvs[i] = o.sends[i] = MPI_REQUEST_NULL;
      o.tokens[i] = 0;
      if (members[i] == rank) continue;
      detail::mpi_check(MPI_Irecv(&o.tokens[i], 1, MPI_BYTE, members[i], tag, comm, &o.recvs[i]), "MPI_Irecv", members[i]);
      detail::mpi_check(MPI_Isend(&mine, 1, MPI_BYTE, members[i], tag, comm, &o.sends[i]), "MPI_Isend", members[i]);
    }
    for (std::size_t i = 0; i < n; ++i)
      if (members[i] != rank && !detail::wait_until(o.recvs[i], stop, members[i])) missing.push_back(members[i]);
    for (std::size_t i = 0; i < n && missing.empty() && undelivered < 0; ++i)
      if (members[i] != rank && !detail::wait_until(o.sends[i], stop, members[i])) undelivered = members[i];
  } catch (...) {
    keep();
    throw;
  }
  if (missing.empty() && undelivered < 0) return;
  keep();
  if (!missing.empty()) {
    std::string who;
    for (std::size_t i = 0; i < missing.size() && i < 16; ++i) who += (i ? ", " : "") + std::to_string(missing[i]);
    if (missing.size() > 16) who += ", ...";
    throw timeout_error("device " + std::to_string(rank) + ": device(s) " + who + " did not reach " + what + " within " +
                            detail::number(timeout_s) + " s",
                        missing);
  }
  throw timeout_error("device " + std::to_string(rank) + ": a token of " + what + " to device " + std::to_string(undelivered) +
                          " was not delivered in time",
                      {undelivered});
}
/// The same with posts of its own.
inline void bounded_barrier(MPI_Comm comm, std::span<const int> members, double timeout_s, int tag = 32767,
                            const char* what = "the barrier") {
  barrier_posts posts(members.size());
  bounded_barrier(comm, members, timeout_s, tag, what, posts);
}

/// `bounded_barrier` among all the ranks of `comm`.
inline void bounded_barrier(MPI_Comm comm, double timeout_s, int tag = 32767) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<int> all(static_cast<std::size_t>(size));
  for (int p = 0; p < size; ++p) all[static_cast<std::size_t>(p)] = p;
  bounded_barrier(comm, all, timeout_s, tag);
}

}  // namespace meshcast

// The MPI backend: transport only. One rank per device, host memory, nonblocking point-to-point,
// broadcasts on cached sub-communicators (MPI_Ibcast) and pipelined chains of point-to-point
// messages. Waits give up with a `timeout_error` naming the peer after a deadline instead of
// hanging.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../backend.hpp"
#include "../backend_traits.hpp"
#include "../../core/error.hpp"
#include "../../core/detail/pause.hpp"
#include "../../core/detail/number_text.hpp"
#include "../memory/host.hpp"
#include "../../model/op.hpp"
#include "mpi_bounded.hpp"

namespace meshcast {

/// The eager threshold the MPI backend assumes by default (see `mpi_backend::send_completes_early`).
inline constexpr std::size_t eager_limit_bytes = std::size_t{1} << 20;

class mpi_backend {
 public:
  /// Largest tag the executor uses (data, ordered-mode tokens, acknowledgements and clearances:
  /// 4 * 32768 - 1).
  static constexpr int max_tag = 4 * 32768 - 1;
  using memory_type = host_memory;
  /// An MPI request; a chain's members also keep the chain's state (see `chain`).
  struct request {
    MPI_Request mpi = MPI_REQUEST_NULL;
    int chain = -1;  // index into chains_, or -1
    int peer = -1;   // the other side (for messages), -1 for a group operation
    bool receive = false;
  };
  /// A sub-communicator and the group rank of each member device, in member order.
  struct group {
    MPI_Comm comm = MPI_COMM_NULL;
    std::vector<index_t> members;
    group() = default;
    group(MPI_Comm c, std::vector<index_t> m) : comm(c), members(std::move(m)) {}
    group(group&& o) noexcept : comm(std::exchange(o.comm, MPI_COMM_NULL)), members(std::move(o.members)) {}
    group& operator=(group&& o) noexcept {
      std::swap(comm, o.comm);
      members.swap(o.members);
      return *this;
    }
    ~group() {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm);
    }
  };

  /// Rank r of `comm` plays device r. `timeout_s` bounds every wait (0: no bound); chains move
  /// `chain_chunk` bytes per message (at most MPI's int count, 2^31 - 1).
  explicit mpi_backend(MPI_Comm comm = MPI_COMM_WORLD, double timeout_s = 60, std::size_t chain_chunk = chain_chunk_bytes,
                       std::size_t eager_limit = eager_limit_bytes)
      : comm_(comm), timeout_s_(detail::checked_seconds(timeout_s, "the MPI backend's timeout")),
        chunk_(chain_chunk < 1 ? 1 : std::min(chain_chunk, static_cast<std::size_t>(std::numeric_limits<int>::max()))),
        eager_limit_(eager_limit) {
    detail::check_communicator(comm_, "mpi_backend");
    int r = 0, n = 0, found = 0;
    MPI_Comm_rank(comm_, &r);
    MPI_Comm_size(comm_, &n);
    int* tag_ub = nullptr;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_ub, &found);
    if (found && tag_ub && *tag_ub < max_tag)
      throw error("this MPI allows tags up to " + std::to_string(*tag_ub) + "; meshcast needs " + std::to_string(max_tag));
    rank_ = r;
    size_ = n;
  }

  memory_type& memory() noexcept { return memory_; }
  index_t device() const noexcept { return rank_; }
  index_t size() const noexcept { return size_; }
  MPI_Comm comm() const noexcept { return comm_; }

  request send(const std::byte* data, std::size_t n, index_t peer, int tag) {
    request r;
    r.peer = static_cast<int>(peer);
    check(MPI_Isend(data, count(n), MPI_BYTE, static_cast<int>(peer), tag, comm_, &r.mpi), "MPI_Isend", r.peer);
    return r;
  }
  /// Whether a completed send of `n` bytes may still be on its way: messages up to the transport's
  /// eager threshold complete once buffered (`eager_limit`, by default 1 MiB, the UCX_RNDV_THRESH
  /// the launcher sets; every rank must use the same). The ordered executor then waits for the
  /// receiver's acknowledgement.
  bool send_completes_early(std::size_t n) const noexcept { return n <= eager_limit_; }
  /// Tag-matched: ordered mode passes NIC tokens; sends up to the eager threshold complete early.
  static constexpr backend_protocol protocol{.port_tokens = true,
                                             .sends = send_completion::early_by_size,
                                             .max_message_bytes = static_cast<std::size_t>(std::numeric_limits<int>::max()),
                                             .prepares_groups = true};
  request recv(std::byte* data, std::size_t n, index_t peer, int tag) {
    request r;
    r.peer = static_cast<int>(peer);
    r.receive = true;
    check(MPI_Irecv(data, count(n), MPI_BYTE, static_cast<int>(peer), tag, comm_, &r.mpi), "MPI_Irecv", r.peer);
    return r;
  }
  /// Makes ahead each group's member list and one barrier's posts (backend_protocol::prepares_groups):
  /// once the first group's members may wait for this rank, make_group allocates nothing.
  void prepare_groups(std::span<const std::vector<index_t>> members) {
    std::size_t most = 0;
    prepared_.clear();
    for (const std::vector<index_t>& m : members)
      if (!m.empty()) {
        prepared_.push_back(m);
        most = std::max(most, m.size());
      }
    next_prepared_ = 0;
    group_ranks_.reserve(most);
    if (posts_.capacity() < most) posts_ = barrier_posts(most);
  }
  group make_group(std::span<const index_t> members, int tag) {
    std::vector<index_t> kept;  // the prepared list where there is one, else made here, before the barrier
    if (next_prepared_ < prepared_.size() && std::equal(members.begin(), members.end(), prepared_[next_prepared_].begin(),
                                                        prepared_[next_prepared_].end()))
      kept = std::move(prepared_[next_prepared_++]);
    else
      kept.assign(members.begin(), members.end());
    group_ranks_.assign(members.begin(), members.end());
    std::optional<barrier_posts> own;
    if (posts_.capacity() < members.size()) own.emplace(members.size());
    // MPI_Comm_create_group blocks and has no nonblocking form: enter it only once every member
    // is known to be here (a barrier among them on the group's tag, under the deadline), so that
    // a member that stopped is a timeout_error naming it rather than a hang.
    bounded_barrier(comm_, group_ranks_, timeout_s_, tag, "the setup of a broadcast group", own ? *own : posts_);
    const std::vector<int>& ranks = group_ranks_;
    MPI_Group world, sub;
    MPI_Comm_group(comm_, &world);
    MPI_Group_incl(world, static_cast<int>(ranks.size()), ranks.data(), &sub);
    MPI_Comm c = MPI_COMM_NULL;
    check(MPI_Comm_create_group(comm_, sub, tag, &c), "MPI_Comm_create_group");
    MPI_Group_free(&sub);
    MPI_Group_free(&world);
    return group(c, std::move(kept));
  }
  request broadcast(std::byte* data, std::size_t n, index_t root, group& g) {
    const int root_rank = static_cast<int>(std::find(g.members.begin(), g.members.end(), root) - g.members.begin());
    request r;
    check(MPI_Ibcast(data, count(n), MPI_BYTE, root_rank, g.comm, &r.mpi), "MPI_Ibcast");
    return r;
  }
  /// g.members[0] -> g.members[1] -> ..., piece by piece on the group's communicator, in pieces of
  /// `piece` bytes as the schedule gives them (else chain_piece_bytes(n, members, chain_chunk):
  /// smaller for small messages and long chains). Every
  /// chunk's receive is posted now; a member passes each chunk on once it has it, with at most
  /// `chain_window` chunks in flight to the next member: chunks posted together between one pair
  /// would progress side by side and all arrive at the end, which is no pipeline. Over UCX's TCP
  /// transport, chunks should go eagerly (UCX_RNDV_THRESH above the chunk size, docs/cluster.md): a
  /// rendezvous handshake per chunk queues behind the data in the NIC and stalls the pipeline.
  request chain(std::byte* data, std::size_t n, group& g, int tag, std::size_t piece = 0) {
    const auto me = static_cast<int>(std::find(g.members.begin(), g.members.end(), rank_) - g.members.begin());
    const auto size = static_cast<int>(g.members.size());
    // A chain's state is kept after flush() for the next run's chain at that index: a repeated
    // schedule allocates nothing.
    if (live_chains_ == chains_.size()) chains_.emplace_back();
    chain_state& c = chains_[live_chains_];
    c.chunks.clear();
    c.received = c.posted = c.retired = 0;
    c.data = data;
    c.tag = tag;
    c.comm = g.comm;
    c.next = me + 1 < size ? me + 1 : -1;
    c.prev = me - 1;
    c.prev_device = me > 0 ? static_cast<int>(g.members[static_cast<std::size_t>(me - 1)]) : -1;
    c.next_device = c.next >= 0 ? static_cast<int>(g.members[static_cast<std::size_t>(c.next)]) : -1;
    if (piece == 0) piece = chain_piece_bytes(n, g.members.size(), chunk_);
    for (std::size_t at = 0; at < n || (n == 0 && at == 0); at += piece) {
      chain_state::piece k{at, std::min(piece, n - at), MPI_REQUEST_NULL, MPI_REQUEST_NULL, c.prev < 0, false};
      if (c.prev >= 0) check(MPI_Irecv(data + at, count(k.len), MPI_BYTE, c.prev, tag, c.comm, &k.recv), "MPI_Irecv", c.prev_device);
      c.chunks.push_back(k);
      if (n == 0) break;
    }
    advance(c);
    request r;
    r.chain = static_cast<int>(live_chains_++);
    r.peer = c.prev >= 0 ? c.prev_device : c.next_device;
    return r;
  }
  /// Waits for `r` (a chain member passes chunks on as they come), polling; gives up with a
  /// `timeout_error` naming the peer after the backend's timeout.
  void wait(request& r) {
    if (r.chain < 0) {
      wait_mpi(r.mpi, r.peer);
      return;
    }
    if (timeout_s_ <= 0) {  // no bound: polled with the back-off every wait uses, not a spin
      for (detail::backoff pause; !test(r); pause()) {
      }
      return;
    }
    if (!detail::poll_until([&] { return test(r); }, detail::deadline(timeout_s_))) [[unlikely]] {
      const chain_state& c = chains_[static_cast<std::size_t>(r.chain)];
      timed_out(c.received < c.chunks.size() ? c.prev_device : c.next_device);
    }
  }
  /// Whether `r` is complete, without blocking; a chain member passes on the chunks that arrived.
  bool test(request& r) {
    int done = 0;
    if (r.chain < 0) {
      check(MPI_Test(&r.mpi, &done, MPI_STATUS_IGNORE), "MPI_Test", r.peer);
      return done != 0;
    }
    chain_state& c = chains_[static_cast<std::size_t>(r.chain)];
    advance(c);
    return c.received == c.chunks.size() && (c.next < 0 || c.retired == c.chunks.size());
  }
  double timeout_s() const noexcept { return timeout_s_; }
  /// A failed run's request: a receive not yet matched is withdrawn (MPI_Cancel), so it never
  /// writes into its buffer. MPI cannot withdraw sends or broadcasts; the executor keeps their
  /// buffers instead (exec/executor/run.hpp).
  void cancel(request& r) noexcept {
    if (r.chain >= 0) {
      chain_state& c = chains_[static_cast<std::size_t>(r.chain)];
      for (std::size_t k = c.received; k < c.chunks.size(); ++k) detail::withdraw_receive(c.chunks[k].recv);
    } else if (r.receive) {
      detail::withdraw_receive(r.mpi);
    }
  }
  void begin_round() noexcept {}
  void end_round() noexcept {}
  void flush() noexcept { live_chains_ = 0; }  // every wait already completed its transfer
  /// The pieces chain request `r` cuts its message into (0 for any other request).
  std::size_t chain_pieces(const request& r) const noexcept {
    return r.chain >= 0 ? chains_[static_cast<std::size_t>(r.chain)].chunks.size() : 0;
  }

 private:
  /// Waits for one MPI request, polling, and throws `timeout_error` naming the peer once the
  /// deadline has passed (a peer that never comes). With a timeout of 0 it simply blocks in
  /// MPI_Wait, as a hand-written loop would.
  void wait_mpi(MPI_Request& r, int peer) {
    if (timeout_s_ <= 0) {
      check(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait", peer);
      return;
    }
    if (!detail::wait_until(r, detail::deadline(timeout_s_), peer)) [[unlikely]]
      timed_out(peer);
  }
  // The checks stay on the hot path; their failure branches are kept out of line.
  static int count(std::size_t n) {
    if (n > static_cast<std::size_t>(std::numeric_limits<int>::max())) [[unlikely]]
      too_large(n);
    return static_cast<int>(n);
  }
  // `peer`: the other side (named in the message), -1 for a group operation.
  void check(int rc, const char* what, int peer = -1) const {
    if (rc != MPI_SUCCESS) [[unlikely]]
      failed(rc, what, peer);
  }
  [[noreturn, gnu::cold, gnu::noinline]] static void too_large(std::size_t n) {
    throw error("a message of " + std::to_string(n) + " bytes exceeds MPI's int count; cut the task finer");
  }
  [[noreturn, gnu::cold, gnu::noinline]] void failed(int rc, const char* what, int peer) const {
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(rc, text, &length);
    const std::string with = peer >= 0 ? " (a transfer with device " + std::to_string(peer) + ")" : std::string();
    throw error("device " + std::to_string(rank_) + ": " + what + with + " failed: " + text);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void timed_out(int peer) const {
    const std::string whom = peer >= 0 ? "with device " + std::to_string(peer) : "in a broadcast group";
    throw timeout_error("device " + std::to_string(rank_) + ": a transfer " + whom + " did not complete within " +
                            detail::number(timeout_s_) + " s (the device is unreachable, stopped or gone)",
                        peer >= 0 ? std::vector<int>{peer} : std::vector<int>{});
  }
  struct chain_state {
    struct piece {
      std::size_t at, len;
      MPI_Request recv, send;
      bool arrived, sent;
    };
    std::byte* data = nullptr;
    int tag = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    int next = -1, prev = -1;                // neighbours' ranks in the group, or -1 at the chain's ends
    int next_device = -1, prev_device = -1;  // the same as devices (for messages)
    std::vector<piece> chunks;
    std::size_t received = 0;  // chunks arrived, in order (all of them at the chain's first member)
    std::size_t posted = 0;    // chunks passed on
    std::size_t retired = 0;   // chunks whose send completed, in order
  };
  // Takes what arrived, retires completed sends, and passes chunks on within the window.
  void advance(chain_state& c) {
    int done = 0;
    if (c.prev < 0) c.received = c.chunks.size();
    while (c.received < c.chunks.size()) {
      check(MPI_Test(&c.chunks[c.received].recv, &done, MPI_STATUS_IGNORE), "MPI_Test", c.prev_device);
      if (!done) break;
      c.chunks[c.received++].arrived = true;
    }
    if (c.next < 0) return;
    while (c.retired < c.posted) {
      check(MPI_Test(&c.chunks[c.retired].send, &done, MPI_STATUS_IGNORE), "MPI_Test", c.next_device);
      if (!done) break;
      ++c.retired;
    }
    while (c.posted < c.received && c.posted - c.retired < chain_window) {
      auto& k = c.chunks[c.posted++];
      // Synchronous: a chunk counts as in flight until the next member has it, whatever protocol
      // the transport picks (an eager send completes at once and would open the window).
      check(MPI_Issend(c.data + k.at, count(k.len), MPI_BYTE, c.next, c.tag, c.comm, &k.send), "MPI_Issend", c.next_device);
      k.sent = true;
    }
  }
  MPI_Comm comm_;
  double timeout_s_;
  std::size_t chunk_ = chain_chunk_bytes;
  std::size_t eager_limit_ = eager_limit_bytes;
  static constexpr std::size_t chain_window = 2;
  std::vector<chain_state> chains_;
  std::size_t live_chains_ = 0;  // chains_[0, live_chains_) belong to this run
  index_t rank_ = 0;
  index_t size_ = 0;
  host_memory memory_;
  // What prepare_groups made ahead: the member lists in the order make_group takes them, the
  // ranks of the group being made and one barrier's posts (reused: a barrier that succeeded
  // leaves them idle).
  std::vector<std::vector<index_t>> prepared_;
  std::size_t next_prepared_ = 0;
  std::vector<int> group_ranks_;
  barrier_posts posts_;
};

static_assert(backend<mpi_backend>, "mpi_backend must satisfy the backend concept.");

}  // namespace meshcast

// The MPI backend: one rank per device, host memory, nonblocking point-to-point and broadcast on
// cached sub-communicators. Waits give up with an error after a deadline instead of hanging.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <limits>
#include <algorithm>
#include <vector>

#include "../backend.hpp"
#include "../error.hpp"
#include "../exec/pack.hpp"
#include "../exec/wire.hpp"
#include "mpi_bounded.hpp"

namespace meshcast {

class mpi_backend {
 public:
  /// How a broadcast travels: MPI_Ibcast on the group's cached sub-communicator, or a pipelined
  /// chain of point-to-point messages from member to member (chunks forwarded as they arrive).
  enum class broadcast_mode { communicator, chain };
  /// An MPI request; a chain broadcast's members also keep the chain's state (see `broadcast`).
  struct request {
    MPI_Request mpi = MPI_REQUEST_NULL;
    int chain = -1;  // index into chains_, or -1
    int peer = -1;   // the other side (for messages), -1 for a group operation
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
  /// Host memory that keeps its address when moved (requests point into it).
  struct buffer {
    std::unique_ptr<std::byte[]> bytes;
    std::byte* data() const noexcept { return bytes.get(); }
  };

  /// Rank r of `comm` plays device r. `timeout_s` bounds every wait (0: no bound).
  explicit mpi_backend(MPI_Comm comm = MPI_COMM_WORLD, double timeout_s = 60,
                       broadcast_mode mode = broadcast_mode::communicator, std::size_t chain_chunk = 1 << 20)
      : comm_(comm), timeout_s_(detail::checked_seconds(timeout_s, "the MPI backend's timeout")), mode_(mode),
        chunk_(chain_chunk < 1 ? 1 : chain_chunk) {
    int r = 0, n = 0;
    MPI_Comm_rank(comm_, &r);
    MPI_Comm_size(comm_, &n);
    rank_ = r;
    size_ = n;
  }

  index_t device() const noexcept { return rank_; }
  /// Devices the communicator holds (ranks 0..size-1).
  index_t size() const noexcept { return size_; }
  MPI_Comm comm() const noexcept { return comm_; }

  request send(const std::byte* data, std::size_t n, index_t peer, int tag) {
    request r;
    r.peer = static_cast<int>(peer);
    check(MPI_Isend(data, count(n), MPI_BYTE, static_cast<int>(peer), tag, comm_, &r.mpi), "MPI_Isend");
    return r;
  }
  request recv(std::byte* data, std::size_t n, index_t peer, int tag) {
    request r;
    r.peer = static_cast<int>(peer);
    check(MPI_Irecv(data, count(n), MPI_BYTE, static_cast<int>(peer), tag, comm_, &r.mpi), "MPI_Irecv");
    return r;
  }
  group make_group(std::span<const index_t> members, int tag) {
    std::vector<int> ranks(members.begin(), members.end());
    MPI_Group world, sub;
    MPI_Comm_group(comm_, &world);
    MPI_Group_incl(world, static_cast<int>(ranks.size()), ranks.data(), &sub);
    MPI_Comm c = MPI_COMM_NULL;
    check(MPI_Comm_create_group(comm_, sub, tag, &c), "MPI_Comm_create_group");
    MPI_Group_free(&sub);
    MPI_Group_free(&world);
    return group(c, {members.begin(), members.end()});
  }
  request broadcast(std::byte* data, std::size_t n, index_t root, group& g) {
    int root_rank = static_cast<int>(std::find(g.members.begin(), g.members.end(), root) - g.members.begin());
    request r;
    if (mode_ == broadcast_mode::communicator) {
      check(MPI_Ibcast(data, count(n), MPI_BYTE, root_rank, g.comm, &r.mpi), "MPI_Ibcast");
      return r;
    }
    // Chain: root -> next member -> ... in member order (rotated to start at the root), chunk by
    // chunk. Every chunk's receive is posted now; a member forwards a chunk once it has it.
    const int size = static_cast<int>(g.members.size()), me = static_cast<int>(std::find(g.members.begin(), g.members.end(), rank_) - g.members.begin());
    const int pos = (me - root_rank + size) % size;
    chain c;
    c.data = data;
    c.next = pos + 1 < size ? (me + 1) % size : -1;
    c.comm = g.comm;
    for (std::size_t at = 0; at < n || (n == 0 && at == 0); at += chunk_) {
      std::size_t len = std::min(chunk_, n - at);
      c.chunks.push_back({at, len, MPI_REQUEST_NULL});
      if (pos > 0)
        check(MPI_Irecv(data + at, count(len), MPI_BYTE, (me - 1 + size) % size, 0, g.comm, &c.chunks.back().recv), "MPI_Irecv");
      if (n == 0) break;
    }
    if (pos == 0) {
      c.root = true;
      forward_all(c);
    }
    r.chain = static_cast<int>(chains_.size());
    chains_.push_back(std::move(c));
    return r;
  }
  /// Waits for `r`; a chain member takes each chunk as it comes and passes it on.
  void wait(request& r) {
    if (r.chain >= 0) {
      chain& c = chains_[static_cast<std::size_t>(r.chain)];
      for (auto& k : c.chunks) {
        wait_mpi(k.recv, -1);
        if (c.next >= 0 && !c.root) {
          c.sends.emplace_back();
          check(MPI_Isend(c.data + k.at, count(k.len), MPI_BYTE, c.next, 0, c.comm, &c.sends.back()), "MPI_Isend");
        }
      }
      for (auto& s : c.sends) wait_mpi(s, -1);
      c = chain{};
      r.chain = -1;
      return;
    }
    wait_mpi(r.mpi, r.peer);
  }
  /// Waits for one MPI request, polling, and throws `timeout_error` naming the peer once the
  /// deadline has passed (a peer that never comes). With a timeout of 0 it simply blocks in
  /// MPI_Wait, as a hand-written loop would.
  void wait_mpi(MPI_Request& r, int peer) {
    if (timeout_s_ <= 0) {
      check(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
      return;
    }
    if (!detail::wait_until(r, detail::deadline(timeout_s_))) [[unlikely]]
      timed_out(peer);
  }
  void begin_round() noexcept {}
  void end_round() noexcept {}
  void flush() noexcept { chains_.clear(); }  // every wait already completed its transfer

  buffer allocate(std::size_t n) { return {std::make_unique_for_overwrite<std::byte[]>(n)}; }
  // The executor sizes every buffer from the plan, so these copy run by run without re-checking.
  void pack(const box& tile, const std::byte* from, const box& region, std::size_t eb, std::byte* to) {
    std::size_t at = 0;
    detail::for_each_run(tile, region, eb, [&](std::size_t offset, std::size_t run) {
      std::memcpy(to + at, from + offset, run);
      at += run;
    });
  }
  void unpack(const std::byte* from, const box& tile, std::byte* to, const box& region, std::size_t eb) {
    std::size_t at = 0;
    detail::for_each_run(tile, region, eb, [&](std::size_t offset, std::size_t run) {
      std::memcpy(to + offset, from + at, run);
      at += run;
    });
  }
  void copy_region(const box& from_tile, const std::byte* from, const box& to_tile, std::byte* to, const box& region,
                   std::size_t eb) {
    meshcast::copy_region(from_tile, {from, meshcast::tile_bytes(from_tile, eb)}, to_tile,
                          {to, meshcast::tile_bytes(to_tile, eb)}, region, eb);
  }

 private:
  // The checks stay on the hot path; their failure branches are kept out of line.
  static int count(std::size_t n) {
    if (n > static_cast<std::size_t>(std::numeric_limits<int>::max())) [[unlikely]]
      too_large(n);
    return static_cast<int>(n);
  }
  void check(int rc, const char* what) const {
    if (rc != MPI_SUCCESS) [[unlikely]]
      failed(rc, what);
  }
  [[noreturn, gnu::cold, gnu::noinline]] static void too_large(std::size_t n) {
    throw error("a message of " + std::to_string(n) + " bytes exceeds MPI's int count; cut the task finer");
  }
  [[noreturn, gnu::cold, gnu::noinline]] void failed(int rc, const char* what) const {
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(rc, text, &length);
    throw error("device " + std::to_string(rank_) + ": " + what + " failed: " + text);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void timed_out(int peer) const {
    const std::string whom = peer >= 0 ? "with device " + std::to_string(peer) : "in a broadcast group";
    throw timeout_error("device " + std::to_string(rank_) + ": a transfer " + whom + " did not complete within " +
                            std::to_string(timeout_s_) + " s (the device is unreachable, stopped or gone)",
                        peer >= 0 ? std::vector<int>{peer} : std::vector<int>{});
  }
  struct chain {
    struct piece {
      std::size_t at, len;
      MPI_Request recv;
    };
    std::byte* data = nullptr;
    bool root = false;  // the root sent every chunk when the broadcast was posted
    int next = -1;      // group rank to pass chunks to, or -1 at the end of the chain
    MPI_Comm comm = MPI_COMM_NULL;
    std::vector<piece> chunks;
    std::vector<MPI_Request> sends;
  };
  // The root has the data at once: it sends every chunk.
  void forward_all(chain& c) {
    if (c.next < 0) return;
    for (auto& k : c.chunks) {
      c.sends.emplace_back();
      check(MPI_Isend(c.data + k.at, count(k.len), MPI_BYTE, c.next, 0, c.comm, &c.sends.back()), "MPI_Isend");
    }
  }
  MPI_Comm comm_;
  double timeout_s_;
  index_t size_ = 0;
  broadcast_mode mode_ = broadcast_mode::communicator;
  std::size_t chunk_ = 1 << 20;
  std::vector<chain> chains_;
  index_t rank_ = 0;
};

static_assert(backend<mpi_backend>, "mpi_backend must satisfy the backend concept.");

/// Hands `root`'s ops to every rank of `comm` (so that ranks never run solvers that may differ,
/// e.g. time-limited searches), then checks that all ranks agree on plan and schedule. Every step
/// gives up with `timeout_error` after `timeout_s` seconds.
inline void share_schedule(MPI_Comm comm, const plan& p, std::vector<op>& ops, int root = 0, double timeout_s = 60) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::int64_t> wire = rank == root ? to_wire(ops) : std::vector<std::int64_t>{};
  long long n = static_cast<long long>(wire.size());
  bounded_broadcast(comm, &n, sizeof n, root, timeout_s, "receiving the schedule's size");
  if (n < 0 || static_cast<unsigned long long>(n) > (std::numeric_limits<int>::max() / sizeof(std::int64_t)))
    throw error("the schedule is too large to share (" + std::to_string(n) + " words)");
  wire.resize(static_cast<std::size_t>(n));
  bounded_broadcast(comm, wire.data(), static_cast<int>(n * static_cast<long long>(sizeof(std::int64_t))), root, timeout_s,
                    "receiving the schedule");
  if (rank != root) ops = from_wire(wire);
  const std::uint64_t mine = fingerprint(p, ops);
  // Equal everywhere exactly when the sum over ranks is size * root's value.
  std::uint64_t theirs = mine;
  bounded_broadcast(comm, &theirs, sizeof theirs, root, timeout_s, "comparing schedules");
  if (!all_ok(comm, mine == theirs, timeout_s, "comparing schedules"))
    throw error("ranks disagree on the plan: were they given the same layouts and sizes?");
}

}  // namespace meshcast

// The NCCL backend: transport only. One rank per GPU, shards in device memory (memory/cuda.hpp),
// ncclSend / ncclRecv / ncclBroadcast issued on one CUDA stream and grouped by the executor's
// rounds in ncclGroupStart/End (a round's consecutive operations on one communicator per group). Broadcast groups and chains get communicators of their own,
// bootstrapped by a `Bootstrap` policy (MPI in production: the group's root draws a unique id and
// sends it to the other members) and cached for the executor's lifetime; a chain is an
// ncclBroadcast from the group's first member (NCCL pipelines it along its ring).
//
// Needs <nccl.h> and <cuda_runtime.h> (the CUDA toolkit); link with -lnccl -lcudart.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <concepts>
#include <memory>
#include <thread>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../backend.hpp"
#include "../backend_traits.hpp"
#include "../../core/error.hpp"
#include "../memory/cuda.hpp"
#include "nccl_group_transfers.hpp"
#include "nccl_result.hpp"

namespace meshcast {

/// How members of a broadcast group agree on an ncclUniqueId: `share(id, members, root, tag)`
/// is called by every member; on return all hold the root's id.
template <class B>
concept nccl_bootstrap = requires(B& b, ncclUniqueId& id, std::span<const index_t> members, index_t root, int tag) {
  b.share(id, members, root, tag);
};

namespace detail {
/// Throws unless the calling thread's current CUDA device is `comm`'s: the stream, events, buffers
/// and group communicators the transport makes are made on the current device, and nccl.h wants a
/// rank's device set before its communicator is made. A new thread starts on device 0.
inline void nccl_on_its_device(ncclComm_t comm) {
  int theirs = 0, ours = 0;
  nccl_check(ncclCommCuDevice(comm, &theirs), "ncclCommCuDevice");
  cuda_check(cudaGetDevice(&ours), "cudaGetDevice");
  if (theirs != ours)
    throw error("the NCCL communicator is on CUDA device " + std::to_string(theirs) + " but this thread's current device is " +
                std::to_string(ours) + ": call cudaSetDevice(" + std::to_string(theirs) + ") on this thread first");
}
}  // namespace detail

template <nccl_bootstrap Bootstrap>
class nccl_backend {
 public:
  using memory_type = cuda_memory;
  /// A send blocks the stream until matched: no ordered-mode tokens, nothing completes early.
  static constexpr backend_protocol protocol{.port_tokens = false, .sends = send_completion::on_delivery};
  struct request {};  // completion is stream order: later work on the stream sees the data

 private:
  // Shared by a backend, its copies and its groups: the groups'
  // communicators (polled for asynchronous errors while a run waits). At a failure each group's
  // communicator is aborted on a thread of its own: ncclCommAbort sets the abort flag its stuck
  // kernels watch, then waits for all work on the stream, the other communicators' stuck kernels
  // included, so aborting them one after the other on this thread would hang on the first.
  struct health {
    std::vector<ncclComm_t> groups, aborted;
    /// Aborts `c` on a thread of its own; false where no thread can be made (`c` is then left as
    /// it is: aborting it here could hang).
    static bool abort_on_own_thread(ncclComm_t c) noexcept {
      try {
        std::thread([c] { ncclCommAbort(c); }).detach();
        return true;
      } catch (...) {
        return false;
      }
    }
    /// Aborts the groups' communicators made so far (each call, those made since the last).
    void fail() noexcept {
      try {
        aborted.reserve(aborted.size() + groups.size());
      } catch (...) {  // no memory: they are left as they are
        return;
      }
      std::size_t left = 0;
      for (ncclComm_t c : groups) {
        if (abort_on_own_thread(c)) aborted.push_back(c);  // reserved: cannot throw
        else groups[left++] = c;                           // no thread: left as it is, destroyed with its group
      }
      groups.resize(left);
    }
  };
  // Never null, even in a moved-from backend (a move shares it, as a copy does).
  struct shared_health {
    std::shared_ptr<health> p = std::make_shared<health>();
    shared_health() = default;
    shared_health(const shared_health&) = default;
    shared_health(shared_health&& o) noexcept : p(o.p) {}
    shared_health& operator=(const shared_health&) = default;
    shared_health& operator=(shared_health&& o) noexcept {
      p = o.p;
      return *this;
    }
    health* operator->() const noexcept { return p.get(); }
  };

 public:
  /// A communicator over the group's members, in member order. Aborted instead of destroyed once a
  /// run failed (ncclCommDestroy would wait for the work the failure left stuck on it), or when
  /// found in progress or in error. `finalize_s` > 0 (a nonblocking communicator): finalized within
  /// that many seconds before it is destroyed, else aborted (destroying finalizes, a wait on peers).
  struct group {
    ncclComm_t comm = nullptr;
    std::vector<index_t> members;
    group() = default;
    group(ncclComm_t c, std::vector<index_t> m, std::shared_ptr<health> h, double finalize_s = 0)
        : comm(c), members(std::move(m)), health_(std::move(h)), finalize_s_(finalize_s) {}
    group(group&& o) noexcept
        : comm(std::exchange(o.comm, nullptr)),
          members(std::move(o.members)),
          health_(std::move(o.health_)),
          finalize_s_(o.finalize_s_) {}
    group& operator=(group&& o) noexcept {
      std::swap(comm, o.comm);
      members.swap(o.members);
      health_.swap(o.health_);
      std::swap(finalize_s_, o.finalize_s_);
      return *this;
    }
    ~group() {
      if (!comm) return;
      if (health_ && std::erase(health_->aborted, comm) > 0) return;  // its aborting thread owns it
      if (health_) std::erase(health_->groups, comm);
      // NCCL refuses to destroy a communicator still in progress or in error (and would leak it,
      // leaving this thread inside a group): that one is aborted, as is one not finalized in time.
      if (detail::nccl_settled(comm) && (finalize_s_ == 0 || detail::nccl_finalized(comm, finalize_s_))) ncclCommDestroy(comm);
      else health::abort_on_own_thread(comm);  // no thread: left as it is
    }

   private:
    std::shared_ptr<health> health_;
    double finalize_s_ = 0;
  };

  /// `comm` spans every device of the plan (rank r plays device r); work goes on `stream`. One
  /// group holds the operations of at most `group_transfers` consecutive transfers of the schedule.
  /// A run waits for its work on the stream until `timeout_s` seconds (default 60, as the MPI
  /// backend's; 0: no bound) pass in which no round of it finishes, then throws a timeout_error; an asynchronous error of `comm` or of a
  /// group's communicator fails it at once. `nonblocking`: `comm` was made with
  /// ncclConfig_t::blocking = 0; the groups' communicators are made so too, so their creation and
  /// every group's connection setup are bounded by `timeout_s` as well. Either way a call answered
  /// ncclInProgress is polled to its end within it.
  nccl_backend(ncclComm_t comm, cudaStream_t stream, Bootstrap bootstrap, std::size_t group_transfers = nccl_group_transfers,
               double timeout_s = 60, bool nonblocking = false)
      : comm_(comm),
        memory_{stream, detail::checked_seconds(timeout_s, "nccl_backend's timeout_s")},
        bootstrap_(std::move(bootstrap)),
        group_transfers_(group_transfers < 1 ? 1 : group_transfers),
        nonblocking_(nonblocking) {
    detail::nccl_usable(comm_);  // one left in progress refuses the calls below: say why
    detail::nccl_on_its_device(comm_);
    int r = 0, n = 0;
    detail::nccl_check(ncclCommUserRank(comm_, &r), "ncclCommUserRank");
    detail::nccl_check(ncclCommCount(comm_, &n), "ncclCommCount");
    rank_ = r;
    size_ = n;
  }

  memory_type& memory() noexcept { return memory_; }
  index_t device() const noexcept { return rank_; }
  index_t size() const noexcept { return size_; }

  request send(const std::byte* data, std::size_t n, index_t peer, int) {
    issue({op_kind::send, const_cast<std::byte*>(data), n, static_cast<int>(peer), comm_});
    return {};
  }
  request recv(std::byte* data, std::size_t n, index_t peer, int) {
    issue({op_kind::recv, data, n, static_cast<int>(peer), comm_});
    return {};
  }
  group make_group(std::span<const index_t> members, int tag) {
    ncclUniqueId id{};
    const index_t root = members.front();
    if (rank_ == root) detail::nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    bootstrap_.share(id, members, root, tag);
    const int me = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
    std::vector<index_t> in_order(members.begin(), members.end());
    health_->groups.reserve(health_->groups.size() + 1);  // nothing below throws once the communicator exists
    ncclComm_t c = nullptr;
    if (!nonblocking_) {
      detail::nccl_check(ncclCommInitRank(&c, static_cast<int>(members.size()), id, me), "ncclCommInitRank");
    } else {
      c = detail::nccl_init_nonblocking(static_cast<int>(members.size()), id, me, memory_.timeout_s, [&](ncclComm_t begun) {
        // A member that never joined: abort what this rank began (and the groups made before it,
        // which the failed setup discards anyway).
        if (begun) health_->groups.push_back(begun);  // reserved above: cannot throw
        health_->fail();
      });
    }
    group g(c, std::move(in_order), health_.p, nonblocking_ ? memory_.timeout_s : 0);
    health_->groups.push_back(c);
    return g;
  }
  request broadcast(std::byte* data, std::size_t n, index_t root, group& g) {
    const int r = static_cast<int>(std::find(g.members.begin(), g.members.end(), root) - g.members.begin());
    issue({op_kind::broadcast, data, n, r, g.comm});
    return {};
  }
  // NCCL pipelines its broadcast itself: the piece size is its business.
  request chain(std::byte* data, std::size_t n, group& g, int, std::size_t = 0) { return broadcast(data, n, g.members.front(), g); }
  void wait(request&) noexcept {}
  bool test(request&) noexcept { return true; }  // stream order: what comes later sees it
  double timeout_s() const noexcept { return memory_.timeout_s; }
  // Work enqueued on a stream cannot be withdrawn: after a failure, abort the communicator
  // (ncclCommAbort); the executor keeps the buffers it may still write. The groups' communicators
  // are then aborted when destroyed, and a round left open is dropped.
  void cancel(request&) noexcept {
    health_->fail();
    round_.clear();
    in_round_ = false;
    events_.used = 0;
  }
  // A round's operations are held here and issued by end_round. A round the executor leaves open
  // (something threw between the two) so reaches NCCL not at all: this thread is left in no NCCL
  // group, which would defer the caller's later NCCL calls, and no peer sees half a group. The
  // next begin_round drops it. Rounds do not nest.
  void begin_round() noexcept {
    round_.clear();
    in_round_ = true;
  }
  // NCCL runs a group as one kernel per communicator, one after the other on the stream, in its
  // own order of the communicators (ascending commHash), not the calls'. A round mixing the
  // world's sends and a broadcast group's could then wait on a peer in a cycle where one rank
  // split the round (a staging cap, a forwarding step) and the other did not. So each run of
  // consecutive operations on one communicator is a group of its own: the stream then follows
  // every rank's list order, which all ranks share, and no wait can close a cycle.
  void end_round() {
    in_round_ = false;
    if (round_.empty()) return;
    // An event before each round: the run's wait counts the end of what came before it (the
    // caller's work, the previous round) as progress.
    if (events_.used == events_.all.size()) {
      events_.all.reserve(events_.used + 1);
      cudaEvent_t e = nullptr;
      detail::cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
      events_.all.push_back(e);
    }
    detail::cuda_check(cudaEventRecord(events_.all[events_.used++], memory_.stream), "cudaEventRecord");
    try {
      for (std::size_t from = 0, to = 0; from < round_.size(); from = to) {
        while (to < round_.size() && round_[to].comm == round_[from].comm) ++to;
        issue_group(from, to);
      }
    } catch (...) {
      round_.clear();
      throw;
    }
    round_.clear();
  }
  void flush() {
    const std::size_t rounds = std::exchange(events_.used, 0);
    std::size_t finished = 0;
    try {
      detail::wait_stream(
          memory_.stream, memory_.timeout_s,
          [&] {
            detail::nccl_check_async(comm_);
            for (ncclComm_t c : health_->groups) detail::nccl_check_async(c);
          },
          [&] {
            const std::size_t before = finished;
            while (finished < rounds && cudaEventQuery(events_.all[finished]) == cudaSuccess) ++finished;
            return finished > before;
          });
    } catch (...) {
      health_->fail();
      throw;
    }
  }
  /// The executor closes a group and opens the next where the schedule's transfer index crosses a
  /// multiple of this, on every rank alike (so groups still match across ranks).
  std::size_t max_group_transfers() const noexcept { return group_transfers_; }

 private:
  enum class op_kind : unsigned char { send, recv, broadcast };
  struct pending_op {
    op_kind kind;
    std::byte* data;
    std::size_t n;
    int peer;  // a broadcast's root, as a member index of `comm`
    ncclComm_t comm;
  };
  static const char* name(op_kind k) noexcept {
    return k == op_kind::send ? "ncclSend" : k == op_kind::recv ? "ncclRecv" : "ncclBroadcast";
  }
  ncclResult_t call(const pending_op& o) const noexcept {
    switch (o.kind) {
      case op_kind::send: return ncclSend(o.data, o.n, ncclUint8, o.peer, o.comm, memory_.stream);
      case op_kind::recv: return ncclRecv(o.data, o.n, ncclUint8, o.peer, o.comm, memory_.stream);
      case op_kind::broadcast: break;
    }
    return ncclBroadcast(o.data, o.data, o.n, ncclUint8, o.peer, o.comm, memory_.stream);
  }
  // round_[from, to), operations on one communicator, in one ncclGroupStart/End.
  void issue_group(std::size_t from, std::size_t to) {
    detail::nccl_check(ncclGroupStart(), "ncclGroupStart");
    ncclResult_t failed = ncclSuccess;
    op_kind failed_kind = op_kind::send;
    for (std::size_t k = from; k < to; ++k)
      if ((failed = call(round_[k])) != ncclSuccess && failed != ncclInProgress) {
        failed_kind = round_[k].kind;
        break;
      }
    // Always closed: after a failed call NCCL discards the group and returns the error here too.
    const ncclResult_t ended = ncclGroupEnd();
    if (failed != ncclSuccess && failed != ncclInProgress) detail::nccl_check(failed, name(failed_kind));
    // A nonblocking group goes on in the background: its communicator is polled to its end.
    detail::nccl_settle(ended, round_[from].comm, "ncclGroupEnd", memory_.timeout_s);
  }
  // Outside a round (a backend whose rounds are no-ops) each call goes to NCCL at once.
  void issue(const pending_op& o) {
    if (in_round_) round_.push_back(o);
    else detail::nccl_settle(call(o), o.comm, name(o.kind), memory_.timeout_s);
  }

  ncclComm_t comm_;
  cuda_memory memory_;
  Bootstrap bootstrap_;
  std::size_t group_transfers_ = nccl_group_transfers;
  index_t rank_ = 0;
  index_t size_ = 0;
  bool nonblocking_ = false;
  std::vector<pending_op> round_;  // keeps its capacity: a repeated run allocates nothing here
  bool in_round_ = false;
  // The events recorded before the rounds of a run (`used` of them), reused by the next run; a
  // copy makes its own.
  struct round_events {
    std::vector<cudaEvent_t> all;
    std::size_t used = 0;
    round_events() = default;
    round_events(const round_events&) noexcept {}
    round_events& operator=(const round_events&) noexcept {
      used = 0;
      return *this;
    }
    ~round_events() {
      for (cudaEvent_t e : all) cudaEventDestroy(e);
    }
  } events_;
  shared_health health_;
};

}  // namespace meshcast

// NCCL's collective_channel (../channel.hpp): the front end's collectives over an NCCL
// communicator, built from ncclSend/ncclRecv/ncclBroadcast on the caller's stream, so that the
// NCCL front end needs no other runtime (no MPI). Broadcast groups get their NCCL ids over the
// same communicator (nccl_comm_bootstrap). Needs <nccl.h> and <cuda_runtime.h>.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../../core/detail/checked.hpp"
#include "../../core/detail/failure_of.hpp"
#include "../../core/error.hpp"
#include "../../core/time_limit.hpp"
#include "../../exec/backend/nccl.hpp"
#include "../../exec/wire.hpp"
#include "../../model/network.hpp"
#include "../../model/schedule.hpp"
#include "../../plan/plan.hpp"
#include "../channel.hpp"

namespace meshcast {

/// Broadcast groups get their NCCL ids over the parent communicator: the group's root sends its
/// id to each member.
struct nccl_comm_bootstrap {
  ncclComm_t world = nullptr;
  cudaStream_t stream = nullptr;
  double timeout_s = 60;  // how long a member waits for the id (0: no bound; 60 s as every other transport type)
  /// Device memory of at least `room_bytes` for the id, made ahead where a rank without room can
  /// still tell the others (the NCCL channel passes its scratch buffer, made before its first
  /// agreement); none or too small: each share makes its own, and a member without room for it
  /// fails alone while the others wait out `timeout_s` in the group's setup.
  std::shared_ptr<cuda_memory::buffer> room = nullptr;
  std::size_t room_bytes = 0;
  void share(ncclUniqueId& id, std::span<const index_t> members, index_t root, int) {
    cuda_memory m{stream, timeout_s};
    detail::nccl_usable(world);
    int me = 0;
    detail::nccl_check(ncclCommUserRank(world, &me), "ncclCommUserRank");
    // Either outlives a wait that gave up while the stream is busy (cuda.hpp).
    std::optional<cuda_memory::buffer> own;
    if (!room || room_bytes < sizeof id) own = m.allocate(sizeof id);
    std::byte* const buf = own ? own->data() : room->data();
    // A copy with pageable host memory may wait for the stream without a deadline: each one finds
    // it drained by a bounded wait, which the world's asynchronous error fails at once.
    const auto drain = [&] { detail::wait_stream(stream, timeout_s, [&] { detail::nccl_check_async(world); }, [] { return false; }); };
    if (me == root) {
      drain();
      detail::cuda_check(cudaMemcpyAsync(buf, &id, sizeof id, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    }
    detail::nccl_check(ncclGroupStart(), "ncclGroupStart");
    ncclResult_t rc = ncclSuccess;
    if (me == root) {
      for (index_t r : members)
        if (r != root && (rc == ncclSuccess || rc == ncclInProgress))
          rc = ncclSend(buf, sizeof id, ncclUint8, static_cast<int>(r), world, stream);
    } else {
      rc = ncclRecv(buf, sizeof id, ncclUint8, static_cast<int>(root), world, stream);
    }
    const ncclResult_t ended = ncclGroupEnd();  // closed even after a failed call
    if (rc != ncclInProgress) detail::nccl_check(rc, me == root ? "ncclSend" : "ncclRecv");
    detail::nccl_settle(ended, world, "ncclGroupEnd", timeout_s);
    drain();
    detail::cuda_check(cudaMemcpyAsync(&id, buf, sizeof id, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    drain();  // a copy into pageable memory may return before it is done: the id is read only after it
  }
};
static_assert(nccl_bootstrap<nccl_comm_bootstrap>);

namespace detail {

class nccl_channel {
 public:
  using backend_type = nccl_backend<nccl_comm_bootstrap>;

  /// `group_transfers`: the executor's bound on the transfers of one NCCL group. Every wait on the
  /// stream, the channel's and the executor's, gives up after `timeout_s` (0: no bound; 60 s
  /// by default, as every transport type).
  /// `nonblocking`: `comm` was made with ncclConfig_t::blocking = 0 (nccl_backend). `solve_s`: how
  /// much longer than `timeout_s` an agreement may wait, the solver's time limit, since the other
  /// ranks wait there while rank 0 solves (as mpi_channel's).
  nccl_channel(ncclComm_t comm, cudaStream_t stream, std::size_t group_transfers = nccl_group_transfers, double timeout_s = 60,
               bool nonblocking = false, double solve_s = 0)
      : comm_(comm), memory_{stream, timeout_s}, group_transfers_(group_transfers), nonblocking_(nonblocking),
        agree_s_(timeout_s > 0 ? std::min(timeout_s + solve_s, max_time_limit_s) : 0) {
    nccl_usable(comm_);  // one left in progress by an earlier call refuses the calls below: say why
    nccl_on_its_device(comm_);
    nccl_check(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
    nccl_check(ncclCommCount(comm_, &size_), "ncclCommCount");
    // Kept for every agreement: the all-gather, and the broadcasts of a failing rank's text (at
    // most 4096 bytes), so that no rank allocates in the middle of one. Without room for it a rank
    // cannot tell the others; they learn at their timeout.
    scratch_bytes_ = std::max<std::size_t>(static_cast<std::size_t>(size_) * sizeof(std::uint64_t), max_problem_bytes);
    scratch_ = std::make_shared<cuda_memory::buffer>(memory_.allocate(scratch_bytes_));
    gathered_.resize(static_cast<std::size_t>(size_));
  }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  /// Every rank's value, in rank order, on every rank, each wait bounded by `timeout_s`: held by
  /// the channel until its next all-gather, so that an agreement allocates nothing (a rank
  /// without room for it there failed alone, the others waiting in NCCL until their timeout).
  const std::vector<std::uint64_t>& all_gather(std::uint64_t value) { return all_gather(value, memory_.timeout_s); }
  const std::vector<std::uint64_t>& all_gather(std::uint64_t value, double timeout_s) {
    const auto n = static_cast<std::size_t>(size_);
    auto& buf = *scratch_;
    std::vector<std::uint64_t>& host = gathered_;
    std::fill(host.begin(), host.end(), 0);
    host[static_cast<std::size_t>(rank_)] = value;
    nccl_usable(comm_);
    mark_start();
    to_device(buf.data(), host.data(), host.size() * sizeof(std::uint64_t), timeout_s);
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    ncclResult_t rc = ncclSuccess;
    if (rank_ == 0) {
      for (int r = 1; r < size_ && (rc == ncclSuccess || rc == ncclInProgress); ++r)
        rc = ncclRecv(buf.data() + static_cast<std::size_t>(r) * 8, 8, ncclUint8, r, comm_, memory_.stream);
    } else {
      rc = ncclSend(buf.data() + static_cast<std::size_t>(rank_) * 8, 8, ncclUint8, 0, comm_, memory_.stream);
    }
    const ncclResult_t ended = ncclGroupEnd();  // closed even after a failed call
    if (rc != ncclInProgress) nccl_check(rc, rank_ == 0 ? "ncclRecv" : "ncclSend");
    settle(ended, "ncclGroupEnd", timeout_s);
    settle(ncclBroadcast(buf.data(), buf.data(), n * 8, ncclUint8, 0, comm_, memory_.stream), "ncclBroadcast", timeout_s);
    to_host(host.data(), buf.data(), host.size() * sizeof(std::uint64_t), timeout_s);
    return host;
  }
  /// `bytes` from `root` to every rank (host memory on both ends), through the scratch buffer or,
  /// where larger, through `through`: device memory the caller made and agreed on first, since a
  /// rank without room for it would leave the others in the broadcast. Either outlives a wait
  /// that gave up while the stream is busy (cuda.hpp).
  void broadcast(void* data, std::size_t bytes, int root, std::byte* through = nullptr) {
    if (!through && bytes > scratch_bytes_)
      throw error("nccl_channel: a broadcast of " + std::to_string(bytes) + " bytes needs a buffer of its own");
    std::byte* buf = through ? through : scratch_->data();
    nccl_usable(comm_);
    mark_start();
    if (rank_ == root) to_device(buf, data, bytes, memory_.timeout_s);
    settle(ncclBroadcast(buf, buf, bytes, ncclUint8, root, comm_, memory_.stream), "ncclBroadcast");
    to_host(data, buf, bytes);
  }
  /// Throws on every rank when any rank has a non-empty `problem` (the first failing rank's message).
  void agree_or_throw(const std::string& problem) {
    if (!problem.empty()) nccl_usable(comm_, problem);
    const std::vector<std::uint64_t>* gathered = nullptr;
    try {
      gathered = &all_gather(problem.empty() ? 0 : 1, agree_s_);
    } catch (const timeout_error& e) {
      // Queued behind a failed run's work still on the stream (or the caller's): the wait's timeout
      // alone would name nothing of what failed here.
      if (problem.empty()) throw;
      throw timeout_error(problem + "; then, telling the other ranks: " + e.what(), e.missing());
    }
    const std::vector<std::uint64_t>& flags = *gathered;
    const auto first = std::find(flags.begin(), flags.end(), 1u) - flags.begin();
    if (first == static_cast<std::ptrdiff_t>(flags.size())) return;
    std::string text = rank_ == first ? problem : std::string();
    std::uint64_t n = text.size();
    broadcast(&n, sizeof n, static_cast<int>(first));
    text.resize(static_cast<std::size_t>(std::min<std::uint64_t>(n, max_problem_bytes)));
    broadcast(text.data(), text.size(), static_cast<int>(first));
    throw error(rank_ == first ? text : "rank " + std::to_string(first) + " reports: " + text);
  }
  bool all_equal(std::uint64_t key) {
    const auto& all = all_gather(key);
    return std::all_of(all.begin(), all.end(), [&](std::uint64_t k) { return k == all.front(); });
  }
  /// Ranks whose machines have one host name share a host.
  std::vector<index_t> hosts() {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    // std::string's hash, without a string made before the gather
    const auto& all = all_gather(std::hash<std::string_view>{}(name));
    std::vector<std::uint64_t> distinct;
    for (std::uint64_t h : all)
      if (std::find(distinct.begin(), distinct.end(), h) == distinct.end()) distinct.push_back(h);
    std::vector<index_t> host_of;
    for (std::uint64_t h : all) host_of.push_back(std::find(distinct.begin(), distinct.end(), h) - distinct.begin());
    return host_of;
  }
  /// Rank 0's schedule to every rank as wire words; then every rank's fingerprint of plans and
  /// schedule must be rank 0's.
  void share(std::span<const plan> plans, schedule& s) {
    std::vector<std::int64_t> words;  // rank 0 without room for them says so before the broadcasts
    agree_or_throw(failure_of([&] {
      if (rank_ == 0) words = to_wire(s);
    }, "writing the schedule to share"));
    std::uint64_t n = words.size();
    broadcast(&n, sizeof n, 0);
    // Every rank makes room for the words first and says whether it could: one without room
    // stops them all here instead of leaving them in the broadcast until the timeout.
    std::optional<cuda_memory::buffer> through;
    std::uint64_t bytes = 0;
    std::string problem = failure_of([&] {
      if (!product_fits<std::uint64_t>(n, sizeof(std::int64_t), bytes) || bytes > std::numeric_limits<std::size_t>::max() / 2)
        throw error("the schedule rank 0 shares has " + std::to_string(n) + " words: more than this rank can hold");
      words.resize(static_cast<std::size_t>(n));
      if (bytes > scratch_bytes_) through = memory_.allocate(static_cast<std::size_t>(bytes));
    }, "making room for the schedule rank 0 shares");
    if (!problem.empty()) problem = "device " + std::to_string(rank_) + ": " + problem;
    agree_or_throw(problem);
    broadcast(words.data(), static_cast<std::size_t>(bytes), 0, through ? through->data() : nullptr);
    problem = failure_of([&] {
      if (rank_ != 0) s = from_wire(words);
    }, "reading the schedule rank 0 shares");
    agree_or_throw(problem);
    if (!all_equal(fingerprint(plans, s))) throw error("ranks disagree on the plan: were they given the same layouts and sizes?");
  }
  std::string problem_here() const {
    return failure_of([&] { nccl_on_its_device(comm_); }, "checking this thread's CUDA device");
  }
  network fitted(network net) const { return net; }
  backend_type make_backend() const {
    // The groups' ids travel through the scratch buffer: the executor connects its groups between
    // the channel's agreements, on the same stream, so nothing else uses it meanwhile.
    return backend_type(comm_, memory_.stream, nccl_comm_bootstrap{comm_, memory_.stream, memory_.timeout_s, scratch_, scratch_bytes_},
                        group_transfers_, memory_.timeout_s, nonblocking_);
  }

 private:
  // Each operation marks its start on the stream: its wait counts the end of the work queued
  // before it (the caller's) as progress.
  void settle(ncclResult_t rc, const char* what) { settle(rc, what, memory_.timeout_s); }
  void settle(ncclResult_t rc, const char* what, double timeout_s) { nccl_settle(rc, comm_, what, timeout_s); }
  void mark_start() { cuda_check(cudaEventRecord(started_.get(), memory_.stream), "cudaEventRecord"); }
  // A copy with pageable host memory may wait for the stream with no deadline (from it: returns
  // only once done): each is made on a stream already waited for, with one.
  void to_device(std::byte* to, const void* from, std::size_t n, double timeout_s) {
    wait(timeout_s);
    cuda_check(cudaMemcpyAsync(to, from, n, cudaMemcpyHostToDevice, memory_.stream), "cudaMemcpyAsync");
  }
  void to_host(void* to, const std::byte* from, std::size_t n) { to_host(to, from, n, memory_.timeout_s); }
  void to_host(void* to, const std::byte* from, std::size_t n, double timeout_s) {
    wait(timeout_s);
    cuda_check(cudaMemcpyAsync(to, from, n, cudaMemcpyDeviceToHost, memory_.stream), "cudaMemcpyAsync");
    wait(timeout_s);
  }
  void wait(double timeout_s) {
    bool started = false;
    detail::wait_stream(memory_.stream, timeout_s, [&] { nccl_check_async(comm_); },
                        [&] { return !started && (started = cudaEventQuery(started_.get()) == cudaSuccess); });
  }
  static std::shared_ptr<std::remove_pointer_t<cudaEvent_t>> make_event() {
    cudaEvent_t e = nullptr;
    cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    return {e, [](cudaEvent_t x) { cudaEventDestroy(x); }};
  }
  ncclComm_t comm_;
  cuda_memory memory_;
  std::size_t group_transfers_;
  bool nonblocking_ = false;
  double agree_s_ = 0;  // an agreement's deadline (0: no bound, as timeout_s)
  static constexpr std::size_t max_problem_bytes = 4096;  // of a failing rank's text, as agreed on
  std::size_t scratch_bytes_ = 0;
  std::shared_ptr<cuda_memory::buffer> scratch_;  // shared with the groups' bootstrap (make_backend)
  std::vector<std::uint64_t> gathered_;           // the last all-gather's values, one a rank
  std::shared_ptr<std::remove_pointer_t<cudaEvent_t>> started_ = make_event();
  int rank_ = 0, size_ = 0;
};
static_assert(collective_channel<nccl_channel>);

}  // namespace detail
}  // namespace meshcast

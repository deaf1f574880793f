// For the emulated NCCL: broadcast-group bootstrap between threads, and running emulated ranks.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nccl.h>

#include <meshcast/exec/backend/nccl.hpp>

namespace meshcast {

// Members of a group meet here to pass the root's unique id (what MPI does in production).
struct thread_bootstrap {
  struct board {
    std::mutex m;
    std::condition_variable cv;
    std::map<std::pair<std::vector<index_t>, int>, ncclUniqueId> ids;
  };
  std::shared_ptr<board> shared;
  void share(ncclUniqueId& id, std::span<const index_t> members, index_t root, int tag) {
    std::unique_lock<std::mutex> l(shared->m);
    auto key = std::make_pair(std::vector<index_t>(members.begin(), members.end()), tag);
    if (members.front() == root && id.internal[0] + id.internal[1] != 0) {
      shared->ids[key] = id;
      shared->cv.notify_all();
      return;
    }
    shared->cv.wait(l, [&] { return shared->ids.count(key) > 0; });
    id = shared->ids[key];
  }
};

// Runs `body(rank, comm)` on `n` threads, each an emulated rank of one world communicator;
// `nonblocking`: made with ncclConfig_t::blocking = 0, and waited for as NCCL asks. Throws when
// a rank made a call that NCCL refuses on a communicator still in progress (the emulation counts
// them), so that every test over it checks meshcast makes none, and when a body returned with
// its world still in progress (a call meshcast never polled to its end) unless
// `may_leave_in_progress` (a test whose peer never posts): that world is aborted.
template <class Body>
inline void run_ranks(int n, Body body, bool nonblocking = false, bool may_leave_in_progress = false) {
  const int refused_before = meshcast_nccl_emulation::unsettled_calls;
  std::atomic<int> left_in_progress{0};
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  std::vector<std::thread> threads;
  meshcast_nccl_emulation::add_ranks(n);
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      meshcast_nccl_emulation::rank_guard guard;
      ncclComm_t comm = nullptr;
      if (!nonblocking) {
        ncclCommInitRank(&comm, n, id, r);
      } else {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        for (ncclResult_t state = ncclCommInitRankConfig(&comm, n, id, r, &config); state == ncclInProgress;) {
          std::this_thread::yield();
          ncclCommGetAsyncError(comm, &state);
        }
      }
      body(r, comm);
      // A world left in progress is aborted, as NCCL asks.
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm, &state);
      if (state == ncclSuccess) {
        ncclCommDestroy(comm);
      } else {
        ++left_in_progress;
        ncclCommAbort(comm);
      }
    });
  for (auto& t : threads) t.join();
  if (left_in_progress > 0 && !may_leave_in_progress)
    throw std::runtime_error(std::to_string(left_in_progress.load()) + " world communicator(s) left in progress or in error");
  if (meshcast_nccl_emulation::unsettled_calls != refused_before)
    throw std::runtime_error(std::to_string(meshcast_nccl_emulation::unsettled_calls - refused_before) +
                             " NCCL call(s) made on a nonblocking communicator before it was polled to ncclSuccess");
}

}  // namespace meshcast

// CPU stand-in for NCCL's API (the calls the NCCL backend makes), over threads and host memory.
// Tests only. Semantics kept from NCCL:
//  - ncclSend / ncclRecv outside a group block until the peer posts the matching call, so two
//    ranks that both send first deadlock, as they would on GPUs;
//  - inside ncclGroupStart/End, calls are only recorded, and ncclGroupEnd posts them all (and, in
//    a blocking group, waits for all of them), so any order within a group completes;
//  - sends and receives between one pair on one communicator match in posting order;
//  - ncclBroadcast is a collective: the k-th call of every member of a communicator matches.
//  - a nonblocking communicator (ncclCommInitRankConfig with config->blocking = 0) is ready only
//    once all its ranks joined; its calls post their operations and answer ncclInProgress until
//    done, ncclCommGetAsyncError answering ncclInProgress until then. Until it has answered
//    ncclSuccess there, every other call on that communicator is refused (ncclInvalidArgument,
//    counted in `unsettled_calls`): stricter than NCCL, which refuses calls only while the
//    communicator is in progress (polling it itself), so that a missed poll shows;
//  - ncclCommFinalize of a nonblocking communicator answers ncclInProgress (counted in
//    `finalized_comms`), done at the next poll;
//  - a group is as blocking as the last communicator given to it (NCCL's ncclGroupCommJoin); a
//    nonblocking group leaves every communicator in it in progress until its operations are done.
// A deadlock (every emulated rank blocked) is detected: the blocked calls return ncclInternalError
// and ncclGetErrorString says so. Ranks are threads announced by `add_ranks` that hold a `rank_guard`.
#pragma once

#include <atomic>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda_runtime.h"

typedef enum {
  ncclSuccess = 0,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7
} ncclResult_t;
typedef enum { ncclInt8 = 0, ncclChar = 0, ncclUint8 = 1 } ncclDataType_t;
#define NCCL_CONFIG_UNDEF_INT (-2147483647 - 1)
typedef struct {
  int blocking;  // the one field meshcast sets; NCCL's struct has more
} ncclConfig_t;
#define NCCL_CONFIG_INITIALIZER {NCCL_CONFIG_UNDEF_INT}
typedef struct {
  char internal[128];
} ncclUniqueId;

namespace meshcast_nccl_emulation {

struct op {
  enum kind_t { send, recv, bcast } kind;
  const void* from = nullptr;
  void* to = nullptr;
  std::size_t n = 0;
  int peer = 0;  // send/recv: the peer; bcast: the root
  bool done = false;
  bool failed = false;
};

struct comm_state {
  int nranks = 0;
  int joined = 0;  // ranks that called ncclCommInitRank(Config)
  std::map<std::pair<int, int>, std::deque<op*>> sends, recvs;  // (from, to) -> posted, unmatched
  std::vector<std::vector<op*>> bcast_rounds;                    // [k][rank]
  std::vector<int> bcast_count;                                  // calls made per rank
};

struct world {
  std::mutex m;
  std::condition_variable cv;
  int ranks = 0;                                   // threads holding a rank_guard
  std::vector<const std::vector<op*>*> waiting;  // what each blocked rank waits for
  bool deadlock = false;
  long long next_id = 1;
  std::map<long long, std::shared_ptr<comm_state>> comms;
  static world& get() {
    static world w;
    return w;
  }
};

/// Announces `n` emulated ranks before their threads start (so that a rank not yet started is
/// never mistaken for one that cannot progress); each of those threads then holds a rank_guard.
inline void add_ranks(int n) {
  world& w = world::get();
  std::lock_guard<std::mutex> l(w.m);
  w.ranks += n;
  w.deadlock = false;
}

/// Held by each emulated rank's thread: the rank leaves the world when the thread is done.
struct rank_guard {
  rank_guard() = default;
  rank_guard(const rank_guard&) = delete;
  rank_guard& operator=(const rank_guard&) = delete;
  ~rank_guard() {
    world& w = world::get();
    std::lock_guard<std::mutex> l(w.m);
    --w.ranks;
    w.cv.notify_all();
  }
};

inline thread_local int group_depth = 0;
struct recorded {
  std::shared_ptr<comm_state> comm;
  int rank;
  op* o;
  bool blocking;
  std::vector<op*>* pending;  // the communicator's operations of nonblocking calls not yet done
  bool* unsettled;            // the communicator's: answered ncclInProgress, not yet polled to success
};
inline thread_local std::vector<recorded> group_ops;
/// The most operations one ncclGroupStart/End held, on any rank (tests read and reset it).
inline std::atomic<std::size_t> largest_group{0};
/// Nonblocking communicators made, and calls that answered ncclInProgress (tests read them).
inline std::atomic<int> nonblocking_comms{0}, in_progress_answers{0};
/// Calls refused because their communicator had not been polled to ncclSuccess since it answered
/// ncclInProgress (meshcast must make none: tests check it stays 0).
inline std::atomic<int> unsettled_calls{0};
/// Nonblocking communicators finalized (ncclCommFinalize) before they were destroyed.
inline std::atomic<int> finalized_comms{0};

// Matching, under the world lock.
inline void match_p2p(comm_state& c, int from, int to) {
  auto& s = c.sends[{from, to}];
  auto& r = c.recvs[{from, to}];
  while (!s.empty() && !r.empty()) {
    op* a = s.front();
    op* b = r.front();
    s.pop_front();
    r.pop_front();
    if (a->n != b->n) a->failed = b->failed = true;
    else std::memcpy(b->to, a->from, a->n);
    a->done = b->done = true;
  }
}
inline void post(comm_state& c, int rank, op* o) {
  if (o->kind == op::send) {
    c.sends[{rank, o->peer}].push_back(o);
    match_p2p(c, rank, o->peer);
  } else if (o->kind == op::recv) {
    c.recvs[{o->peer, rank}].push_back(o);
    match_p2p(c, o->peer, rank);
  } else {
    if (c.bcast_count.empty()) c.bcast_count.assign(static_cast<std::size_t>(c.nranks), 0);
    const auto k = static_cast<std::size_t>(c.bcast_count[rank]++);
    if (c.bcast_rounds.size() <= k) c.bcast_rounds.resize(k + 1, std::vector<op*>(static_cast<std::size_t>(c.nranks), nullptr));
    auto& round = c.bcast_rounds[k];
    round[rank] = o;
    for (op* x : round)
      if (!x) return;
    op* root = round[o->peer];
    for (op* x : round) {
      if (x->peer != o->peer || x->n != root->n) x->failed = true;
      else if (x != root) std::memcpy(x->to, root->to, root->n);
      x->done = true;
    }
  }
}
inline bool all_done(const std::vector<op*>& ops) {
  for (op* o : ops)
    if (!o->done) return false;
  return true;
}
// Every rank is inside a call and none of them can return: nothing can ever progress.
inline bool stuck(const world& w) {
  if (w.ranks == 0 || static_cast<int>(w.waiting.size()) < w.ranks) return false;
  for (const auto* ops : w.waiting)
    if (all_done(*ops)) return false;
  return true;
}
// Waits for every op in `ops`; false on deadlock or a mismatched pair.
inline bool wait_all(std::unique_lock<std::mutex>& l, const std::vector<op*>& ops) {
  world& w = world::get();
  w.cv.notify_all();
  w.waiting.push_back(&ops);
  bool ok = true;
  while (!all_done(ops)) {
    if (w.deadlock || stuck(w)) {
      w.deadlock = true;
      ok = false;
      break;
    }
    w.cv.wait_for(l, std::chrono::milliseconds(50));
  }
  w.waiting.erase(std::find(w.waiting.begin(), w.waiting.end(), &ops));
  w.cv.notify_all();
  if (!ok) return false;
  for (op* o : ops)
    if (o->failed) return false;
  return true;
}
inline ncclResult_t submit(const std::shared_ptr<comm_state>& c, int rank, op o, bool blocking, std::vector<op*>* pending,
                           bool& unsettled) {
  if (unsettled) {
    ++unsettled_calls;
    return ncclInvalidArgument;
  }
  if (group_depth > 0) {
    group_ops.push_back({c, rank, new op(o), blocking, pending, &unsettled});
    return ncclSuccess;
  }
  world& w = world::get();
  std::unique_lock<std::mutex> l(w.m);
  op* p = new op(o);
  post(*c, rank, p);
  if (!blocking) {  // goes on in the background; ncclCommGetAsyncError tells when it is done
    w.cv.notify_all();
    pending->push_back(p);
    unsettled = true;
    ++in_progress_answers;
    return ncclInProgress;
  }
  const std::vector<op*> mine{p};
  bool ok = wait_all(l, mine);
  if (ok) delete p;  // on failure the peer may still hold it: leak rather than dangle
  return ok ? ncclSuccess : ncclInternalError;
}

}  // namespace meshcast_nccl_emulation

// `async_error`: what ncclCommGetAsyncError reports (a test's stand-in for a failed link or peer).
struct meshcast_emulated_comm {
  std::shared_ptr<meshcast_nccl_emulation::comm_state> state;
  int rank;
  ncclResult_t async_error = ncclSuccess;
  bool blocking = true;
  std::vector<meshcast_nccl_emulation::op*> pending;  // nonblocking calls': posted, not yet reported done
  bool unsettled = false;  // answered ncclInProgress; NCCL refuses other calls until polled to ncclSuccess
  int device = meshcast_current_device;  // the creating thread's, as NCCL takes it
};
typedef meshcast_emulated_comm* ncclComm_t;

inline const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclInternalError:
      return "internal error (emulated NCCL: deadlock, every rank is blocked in a call, or a send and a receive "
             "of different sizes)";
    case ncclInvalidArgument: return "invalid argument";
    case ncclRemoteError: return "remote process exited or there was a network error";
    default: return "invalid usage";
  }
}
inline ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  auto& w = meshcast_nccl_emulation::world::get();
  std::lock_guard<std::mutex> l(w.m);
  long long n = w.next_id++;
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, &n, sizeof n);
  return ncclSuccess;
}
inline ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  auto& w = meshcast_nccl_emulation::world::get();
  std::lock_guard<std::mutex> l(w.m);
  long long n = 0;
  std::memcpy(&n, id.internal, sizeof n);
  auto& state = w.comms[n];
  if (!state) {
    state = std::make_shared<meshcast_nccl_emulation::comm_state>();
    state->nranks = nranks;
  }
  if (state->nranks != nranks || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  ++state->joined;
  w.cv.notify_all();
  const bool blocking = !config || config->blocking != 0;
  *comm = new meshcast_emulated_comm{state, rank, ncclSuccess, blocking, {}};
  if (!blocking) ++meshcast_nccl_emulation::nonblocking_comms;
  if (blocking || state->joined >= nranks) return ncclSuccess;
  (*comm)->unsettled = true;
  ++meshcast_nccl_emulation::in_progress_answers;
  return ncclInProgress;
}
inline ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}
inline ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm->unsettled) {  // NCCL refuses, and leaks it; freed here all the same
    ++meshcast_nccl_emulation::unsettled_calls;
    delete comm;
    return ncclInvalidArgument;
  }
  delete comm;
  return ncclSuccess;
}
inline ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (comm->unsettled) return ++meshcast_nccl_emulation::unsettled_calls, ncclInvalidArgument;
  if (comm->blocking) return ncclSuccess;
  ++meshcast_nccl_emulation::finalized_comms;
  ++meshcast_nccl_emulation::in_progress_answers;
  comm->unsettled = true;
  return ncclInProgress;
}
namespace meshcast_nccl_emulation {
/// Calls of ncclCommAbort (tests read it): a communicator whose work a failure left stuck is aborted.
inline std::atomic<int> aborted_comms{0};
}  // namespace meshcast_nccl_emulation
inline ncclResult_t ncclCommAbort(ncclComm_t comm) {
  ++meshcast_nccl_emulation::aborted_comms;
  delete comm;
  return ncclSuccess;
}
inline ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm->unsettled) return ++meshcast_nccl_emulation::unsettled_calls, ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}
inline ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  auto& w = meshcast_nccl_emulation::world::get();
  std::lock_guard<std::mutex> l(w.m);
  *error = comm->async_error;
  if (*error != ncclSuccess) return ncclSuccess;
  if (!comm->blocking && comm->state->joined < comm->state->nranks) {
    *error = ncclInProgress;
    return ncclSuccess;
  }
  auto& p = comm->pending;
  for (auto* o : p)
    if (o->done && o->failed) *error = ncclInternalError;  // left pending: the peer may hold it
  if (*error != ncclSuccess) return ncclSuccess;
  std::erase_if(p, [](meshcast_nccl_emulation::op* o) {
    if (!o->done) return false;
    delete o;
    return true;
  });
  if (!p.empty()) *error = ncclInProgress;
  else comm->unsettled = false;
  return ncclSuccess;
}
inline ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm->unsettled) return ++meshcast_nccl_emulation::unsettled_calls, ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}
inline ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm->unsettled) return ++meshcast_nccl_emulation::unsettled_calls, ncclInvalidArgument;
  *count = comm->state->nranks;
  return ncclSuccess;
}
inline ncclResult_t ncclSend(const void* buf, std::size_t count, ncclDataType_t, int peer, ncclComm_t comm, cudaStream_t) {
  meshcast_nccl_emulation::op o{meshcast_nccl_emulation::op::send};
  o.from = buf, o.n = count, o.peer = peer;
  return meshcast_nccl_emulation::submit(comm->state, comm->rank, o, comm->blocking, &comm->pending, comm->unsettled);
}
inline ncclResult_t ncclRecv(void* buf, std::size_t count, ncclDataType_t, int peer, ncclComm_t comm, cudaStream_t) {
  meshcast_nccl_emulation::op o{meshcast_nccl_emulation::op::recv};
  o.to = buf, o.n = count, o.peer = peer;
  return meshcast_nccl_emulation::submit(comm->state, comm->rank, o, comm->blocking, &comm->pending, comm->unsettled);
}
inline ncclResult_t ncclBroadcast(const void* send, void* recv, std::size_t count, ncclDataType_t, int root, ncclComm_t comm,
                                  cudaStream_t) {
  meshcast_nccl_emulation::op o{meshcast_nccl_emulation::op::bcast};
  if (comm->rank == root && send != recv) std::memmove(recv, send, count);
  o.to = recv, o.n = count, o.peer = root;
  return meshcast_nccl_emulation::submit(comm->state, comm->rank, o, comm->blocking, &comm->pending, comm->unsettled);
}
inline ncclResult_t ncclGroupStart() {
  ++meshcast_nccl_emulation::group_depth;
  return ncclSuccess;
}
inline ncclResult_t ncclGroupEnd() {
  using namespace meshcast_nccl_emulation;
  if (group_depth == 0) return ncclInvalidUsage;
  if (--group_depth > 0) return ncclSuccess;
  world& w = world::get();
  std::unique_lock<std::mutex> l(w.m);
  // As blocking as the last communicator given to the group (NCCL's ncclGroupCommJoin).
  const bool nonblocking = !group_ops.empty() && !group_ops.back().blocking;
  std::vector<op*> ops;
  for (auto& r : group_ops) {
    post(*r.comm, r.rank, r.o);
    ops.push_back(r.o);
    if (nonblocking) r.pending->push_back(r.o), *r.unsettled = true;
  }
  group_ops.clear();
  for (std::size_t seen = largest_group.load(); ops.size() > seen && !largest_group.compare_exchange_weak(seen, ops.size());) {
  }
  if (nonblocking) {  // goes on in the background; ncclCommGetAsyncError tells when it is done
    w.cv.notify_all();
    ++in_progress_answers;
    return ncclInProgress;
  }
  bool ok = wait_all(l, ops);
  if (ok)
    for (op* o : ops) delete o;
  return ok ? ncclSuccess : ncclInternalError;
}

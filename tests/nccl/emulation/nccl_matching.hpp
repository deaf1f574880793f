// The emulated NCCL's state (nccl.h): operations, communicators, matching, waiting, and the
// kernels a group launches, one per communicator, one after the other. Tests only; included by
// nccl.h after its types. Everything here runs under the emulated world's lock unless said.
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

namespace meshcast_nccl_emulation {

struct op {
  enum kind_t { send, recv, bcast } kind;
  const void* from = nullptr;
  void* to = nullptr;
  std::size_t n = 0;
  int peer = 0;  // send/recv: the peer; bcast: the root
  bool done = false;
  bool failed = false;
  bool held = false;  // a kernel of a group's launch with kernels after it not yet started: kept alive
};

struct comm_state {
  long long id = 0;  // the unique id's number: stands for NCCL's commHash in the launch order
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
// NCCL runs a group as one kernel per communicator, one after the other on the stream, in
// ascending order of the communicators' hashes (ncclGroupCommJoin): a kernel starts only once the
// one before it is done, whatever order the calls were made in. The emulation orders them by id,
// or the other way round while `reversed_launch_order` is set (a test tries both orders a hash
// may give).
inline std::atomic<bool> reversed_launch_order{false};
struct kernel {
  std::shared_ptr<comm_state> comm;
  int rank = 0;  // the launching rank's, in this communicator
  std::vector<op*> ops;
};
struct launch {
  std::vector<kernel> kernels;  // in launch order
  std::size_t started = 0;
};
inline std::vector<std::unique_ptr<launch>> launches;  // with kernels not yet started
/// ncclBroadcast calls made (tests read it: a test of groups' communicators needs some).
inline std::atomic<int> broadcasts{0};
// Starts every kernel whose predecessor is done.
inline void advance_launches() {
  for (bool moved = true; moved;) {
    moved = false;
    for (auto& l : launches)
      while (l->started < l->kernels.size() && (l->started == 0 || all_done(l->kernels[l->started - 1].ops))) {
        if (l->started > 0)
          for (op* o : l->kernels[l->started - 1].ops) o->held = false;
        kernel& k = l->kernels[l->started++];
        for (op* o : k.ops) post(*k.comm, k.rank, o);
        moved = true;
      }
    std::erase_if(launches, [](const std::unique_ptr<launch>& l) { return l->started == l->kernels.size(); });
  }
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
  for (advance_launches(); !all_done(ops); advance_launches()) {
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

// CPU stand-in for NCCL's API (the calls the NCCL backend makes), over threads and host memory.
// Tests only. Semantics kept from NCCL:
//  - ncclSend / ncclRecv outside a group block until the peer posts the matching call, so two
//    ranks that both send first deadlock, as they would on GPUs;
//  - inside ncclGroupStart/End, calls are only recorded, and ncclGroupEnd launches them as one
//    kernel per communicator, one after the other in an order of the communicators that every rank
//    shares (NCCL's: ascending commHash; here the id's, or its reverse), each kernel's calls all at
//    once (in a blocking group, it waits for all of them): any order of calls on one communicator
//    within a group completes, while calls on two may wait on each other across ranks;
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

#include "nccl_matching.hpp"

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
  const meshcast_emulation_call emulated;
  auto& w = meshcast_nccl_emulation::world::get();
  std::lock_guard<std::mutex> l(w.m);
  long long n = 0;
  std::memcpy(&n, id.internal, sizeof n);
  auto& state = w.comms[n];
  if (!state) {
    state = std::make_shared<meshcast_nccl_emulation::comm_state>();
    state->id = n;
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
  const meshcast_emulation_call emulated;
  auto& w = meshcast_nccl_emulation::world::get();
  std::lock_guard<std::mutex> l(w.m);
  meshcast_nccl_emulation::advance_launches();
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
    if (!o->done || o->held) return false;  // held: its launch still reads it
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
  const meshcast_emulation_call emulated;
  meshcast_nccl_emulation::op o{meshcast_nccl_emulation::op::send};
  o.from = buf, o.n = count, o.peer = peer;
  return meshcast_nccl_emulation::submit(comm->state, comm->rank, o, comm->blocking, &comm->pending, comm->unsettled);
}
inline ncclResult_t ncclRecv(void* buf, std::size_t count, ncclDataType_t, int peer, ncclComm_t comm, cudaStream_t) {
  const meshcast_emulation_call emulated;
  meshcast_nccl_emulation::op o{meshcast_nccl_emulation::op::recv};
  o.to = buf, o.n = count, o.peer = peer;
  return meshcast_nccl_emulation::submit(comm->state, comm->rank, o, comm->blocking, &comm->pending, comm->unsettled);
}
inline ncclResult_t ncclBroadcast(const void* send, void* recv, std::size_t count, ncclDataType_t, int root, ncclComm_t comm,
                                  cudaStream_t) {
  const meshcast_emulation_call emulated;
  meshcast_nccl_emulation::op o{meshcast_nccl_emulation::op::bcast};
  if (comm->rank == root && send != recv) std::memmove(recv, send, count);
  o.to = recv, o.n = count, o.peer = root;
  ++meshcast_nccl_emulation::broadcasts;
  return meshcast_nccl_emulation::submit(comm->state, comm->rank, o, comm->blocking, &comm->pending, comm->unsettled);
}
inline ncclResult_t ncclGroupStart() {
  ++meshcast_nccl_emulation::group_depth;
  return ncclSuccess;
}
inline ncclResult_t ncclGroupEnd() {
  const meshcast_emulation_call emulated;
  using namespace meshcast_nccl_emulation;
  if (group_depth == 0) return ncclInvalidUsage;
  if (--group_depth > 0) return ncclSuccess;
  world& w = world::get();
  std::unique_lock<std::mutex> l(w.m);
  // As blocking as the last communicator given to the group (NCCL's ncclGroupCommJoin).
  const bool nonblocking = !group_ops.empty() && !group_ops.back().blocking;
  // One kernel per communicator, in launch order; each keeps its calls' order.
  const bool reversed = reversed_launch_order.load();
  std::stable_sort(group_ops.begin(), group_ops.end(), [reversed](const recorded& a, const recorded& b) {
    return reversed ? a.comm->id > b.comm->id : a.comm->id < b.comm->id;
  });
  auto started = std::make_unique<launch>();
  std::vector<op*> ops;
  for (auto& r : group_ops) {
    if (started->kernels.empty() || started->kernels.back().comm != r.comm) started->kernels.push_back({r.comm, r.rank, {}});
    started->kernels.back().ops.push_back(r.o);
    ops.push_back(r.o);
    if (nonblocking) r.pending->push_back(r.o), *r.unsettled = true;
  }
  for (std::size_t k = 0; k + 1 < started->kernels.size(); ++k)
    for (op* o : started->kernels[k].ops) o->held = true;
  if (!started->kernels.empty()) launches.push_back(std::move(started));
  advance_launches();
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

/* ucx_finalize_progress: an LD_PRELOAD shim that removes the MPI_Finalize hang of MPICH 4.0.x/4.1.x
 * (ch4:ucx) over UCX's TCP transport. scripts/cluster.sh builds it and loads it into every rank.
 *
 * The hang. MPICH's UCX finalize hook (src/mpid/ch4/netmod/ucx/ucx_init.c, MPICH 4.0.2) closes every
 * endpoint with ucp_disconnect_nb (a flush), spins in ucp_worker_progress until its own flushes are
 * done, and then blocks in a PMI barrier, where it no longer drives UCX. UCX's TCP transport (UCX
 * 1.13, src/uct/tcp/tcp_ep.c) completes the flush of an endpoint that has sent anything since its
 * last flush by sending a zero-length PUT request (25 bytes) and waiting for the peer's PUT ACK, and
 * the peer sends that ACK only from its own ucp_worker_progress. So when rank B finishes its
 * flushes and enters the PMI barrier before rank A's flush request reaches it, A spins forever
 * waiting for an ACK that B, blocked in read() on its PMI socket, never sends; every other rank
 * waits in the PMI barrier for A. On a hung run, `ss -tnp` shows exactly those 25 unread bytes in
 * B's receive queue on the socket from A. MPICH 4.2.0 dropped the barrier after the disconnects
 * (commit 08d8105b "ch4/ucx: remove MPIR_pmi_barrier in finalize"); Debian 12 ships 4.0.2.
 *
 * The fix. Once the process has started closing endpoints (its first ucp_disconnect_nb), a read()
 * on the PMI socket (fd PMI_FD, set by hydra) waits for the socket to become readable while calling
 * ucp_worker_progress on the process's UCX workers, as MPICH 4.2 effectively allows by not
 * blocking there. Only the thread that closed the endpoints does so, never re-entrantly, and only
 * until MPICH destroys the worker. Nothing else changes: the PMI protocol, the data, the order.
 *
 * Build: cc -O2 -shared -fPIC -o libucx_finalize_progress.so ucx_finalize_progress.c -ldl
 * Use:   mpiexec -genv LD_PRELOAD /path/libucx_finalize_progress.so ...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

typedef void* ucp_worker_h;
typedef void* ucp_ep_h;
typedef void* ucp_context_h;
typedef int ucs_status_t;

enum { max_workers = 64 };
static ucp_worker_h workers[max_workers];
static int worker_count;
static int pmi_fd = -2;  // -2: not read yet, -1: no PMI_FD
static __thread int closing;   // this thread has closed endpoints
static __thread int in_shim;   // re-entrancy guard

static void* next(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (!f) abort();
  return f;
}

ucs_status_t ucp_worker_create(ucp_context_h context, const void* params, ucp_worker_h* worker) {
  static ucs_status_t (*real)(ucp_context_h, const void*, ucp_worker_h*);
  if (!real) real = (ucs_status_t (*)(ucp_context_h, const void*, ucp_worker_h*))next("ucp_worker_create");
  ucs_status_t status = real(context, params, worker);
  if (status == 0 && worker_count < max_workers) workers[worker_count++] = *worker;
  return status;
}

void ucp_worker_destroy(ucp_worker_h worker) {
  static void (*real)(ucp_worker_h);
  if (!real) real = (void (*)(ucp_worker_h))next("ucp_worker_destroy");
  for (int i = 0; i < worker_count; ++i)
    if (workers[i] == worker) workers[i] = workers[--worker_count];
  real(worker);
}

void* ucp_disconnect_nb(ucp_ep_h ep) {
  static void* (*real)(ucp_ep_h);
  if (!real) real = (void* (*)(ucp_ep_h))next("ucp_disconnect_nb");
  closing = 1;
  return real(ep);
}

ssize_t read(int fd, void* buf, size_t count) {
  static ssize_t (*real)(int, void*, size_t);
  if (!real) real = (ssize_t (*)(int, void*, size_t))next("read");
  if (closing && !in_shim && worker_count > 0) {
    if (pmi_fd == -2) {
      const char* s = getenv("PMI_FD");
      pmi_fd = s ? atoi(s) : -1;
    }
    if (fd == pmi_fd) {
      static unsigned (*progress)(ucp_worker_h);
      if (!progress) progress = (unsigned (*)(ucp_worker_h))next("ucp_worker_progress");
      in_shim = 1;
      struct pollfd p = {.fd = fd, .events = POLLIN};
      while (worker_count > 0 && poll(&p, 1, 0) == 0) {
        unsigned done = 0;
        for (int i = 0; i < worker_count; ++i) done += progress(workers[i]);
        if (!done) poll(&p, 1, 1);  // nothing to do: wait up to 1 ms instead of spinning
        if (p.revents) break;
      }
      in_shim = 0;
    }
  }
  return real(fd, buf, count);
}

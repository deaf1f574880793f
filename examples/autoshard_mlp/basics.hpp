// meshcast-autoshard-mlp-mpi (../autoshard_mlp_mpi.cpp), part: matrix products and MPI waits that leave the core to other ranks.
// Included once, by that program's one translation unit: its names stay in an unnamed namespace.
#pragma once

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <meshcast/autoshard.hpp>
#include <meshcast/core/detail/read_document.hpp>
#include <meshcast/meshcast.hpp>  // detail::failure_of
#include <meshcast/mpi.hpp>
#include "../cli/end_job.hpp"
#include "../cli/flag_values.hpp"
#include "../cli/one_blas_thread.hpp"  // CBC and MPI in one executable

#if MESHCAST_HAS_CBLAS
extern "C" void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float* a, int lda,
                            const float* b, int ldb, float beta, float* c, int ldc);
#endif
#if MESHCAST_HAS_OPENBLAS
extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_config(void);
#endif

namespace {

namespace mc = meshcast;
namespace as = meshcast::autoshard;
using mc::error;
using mc::index_t;
using meshcast_cli::axes_text;
using meshcast_cli::parse_list;
using meshcast_cli::parse_number;

int world_rank = 0, world_size = 1;

// ---- matrix products -------------------------------------------------------------------------

const char* blas_name() {
#if MESHCAST_HAS_OPENBLAS
  return "OpenBLAS";
#elif MESHCAST_HAS_CBLAS
  return "BLAS (cblas_sgemm)";
#else
  return "no BLAS (plain loops)";
#endif
}

/// C[m,n] = A[m,k] B[k,n], dense row-major.
void sgemm(index_t m, index_t n, index_t k, const float* a, const float* b, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(c, c + m * n, 0.0f);
    return;
  }
#if MESHCAST_HAS_CBLAS
  cblas_sgemm(101 /* row major */, 111 /* no trans */, 111, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(k), b, static_cast<int>(n), 0.0f, c, static_cast<int>(n));
#else
  std::fill(c, c + m * n, 0.0f);
  for (index_t i = 0; i < m; ++i)
    for (index_t p = 0; p < k; ++p) {
      const float x = a[i * k + p];
      const float* brow = b + p * n;
      float* crow = c + i * n;
      for (index_t j = 0; j < n; ++j) crow[j] += x * brow[j];
    }
#endif
}

// ---- waiting without holding a core (ranks may outnumber cores) ------------------------------

constexpr double wait_limit_s = 300;

void wait(MPI_Request& r, const char* what, double limit_s = wait_limit_s) {
  int done = 0, spins = 0;
  const auto begin = std::chrono::steady_clock::now();
  while (true) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (++spins > 64) {
      sched_yield();  // leave the core to a rank with work, without sleeping past the message
      if (spins % 4096 == 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() > limit_s) {
        std::fprintf(stderr, "meshcast-autoshard-mlp-mpi: rank %d: no progress for %.0f s in %s; aborting\n",
                     world_rank, limit_s, what);
        meshcast::cli::end_job(3);
      }
    }
  }
}

void barrier(MPI_Comm comm = MPI_COMM_WORLD) {
  MPI_Request r;
  MPI_Ibarrier(comm, &r);
  wait(r, "a barrier");
}

void allreduce(void* data, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, const char* what) {
  MPI_Request r;
  MPI_Iallreduce(MPI_IN_PLACE, data, count, type, op, comm, &r);
  wait(r, what);
}

void broadcast(void* data, int count, MPI_Datatype type, int root, MPI_Comm comm, const char* what,
               double limit_s = wait_limit_s) {
  MPI_Request r;
  MPI_Ibcast(data, count, type, root, comm, &r);
  wait(r, what, limit_s);
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

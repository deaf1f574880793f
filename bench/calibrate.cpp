// Measures what the network model needs, between rank 0 and rank `--peer` (default 1): put them
// on two hosts for the NIC, on one host for the intra-host link.
//   - payload bandwidth: one large message, best of several (what one flow gets of a NIC);
//   - per-transfer latency: transfers of a medium size issued one after another, each complete
//     before the next starts (the ordered executor's pattern, with its 1-byte NIC token), fitted
//     as time = count * (latency + bytes / bandwidth).
// Prints one JSON object: {"payload_gbps": ..., "latency_us": ..., "one_way_small_us": ...}.
//
//   scripts/cluster.sh mpiexec -ppn 1 -n 2 build/test/bench/meshcast-calibrate [--mib 32]
//   scripts/cluster.sh mpiexec -ppn 2 -n 2 build/test/bench/meshcast-calibrate   (intra-host)
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "flags.hpp"

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double timeout_s = 600;  // --timeout-s: how long one wait may last

// Blocking in the way the executor waits: MPI_Test with a short spin, then sleeps. A wait has a
// deadline (it spun for ever on a peer that was gone, found by review): past it, this rank says so
// and ends the job.
void wait(MPI_Request& r) {
  int done = 0, spins = 0;
  const double until = now() + timeout_s;
  while (true) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (now() > until) {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      std::fprintf(stderr, "meshcast-calibrate (rank %d): error: a transfer or barrier did not complete within %g s "
                   "(--timeout-s)\n", rank, timeout_s);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (++spins > 64) {
      struct timespec ts{0, 50'000};
      nanosleep(&ts, nullptr);
    }
  }
}
// A barrier whose waiters sleep: ranks that are not measuring leave the cores to those that are.
void barrier() {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  wait(r);
}
}  // namespace

constexpr const char* usage =
    "usage: mpiexec -n N meshcast-calibrate [--mib 32] [--peer R] [--timeout-s 600]   (N >= 2; --mib 1..2047; R a rank\n"
    "       other than 0; --timeout-s 0.001..1e6, the longest one transfer or barrier may take)\n";

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::size_t mib = 32;
  int other = 1;
  try {
    const meshcast_bench::flags f(argc, argv, {"--mib", "--peer", "--timeout-s"});
    if (f.help()) {
      if (rank == 0) std::fputs(usage, stdout);
      MPI_Finalize();
      return 0;
    }
    mib = static_cast<std::size_t>(f.count("--mib", 32, 1, 2047));  // the byte count must fit an int
    other = static_cast<int>(f.count("--peer", 1, 1, 1 << 30));
    timeout_s = f.real("--timeout-s", 600, 0.001, 1e6);
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "meshcast-calibrate: %s\n%s", e.what(), usage);
    MPI_Finalize();
    return 2;
  }
  if (size < 2 || other >= size) {
    if (rank == 0)
      std::fprintf(stderr, "meshcast-calibrate: run with at least 2 ranks (%d here); --peer names a rank other than 0 (%d given)\n",
                   size, other);
    MPI_Finalize();
    return 2;
  }
  const std::size_t big = mib << 20, medium = 256 << 10;
  std::vector<char> buf(big), token(1);
  const bool active = rank == 0 || rank == other;
  const int peer = rank == 0 ? other : 0;
  auto transfer = [&](std::size_t n) {
    MPI_Request r;
    if (rank == 0) MPI_Isend(buf.data(), static_cast<int>(n), MPI_BYTE, other, 0, MPI_COMM_WORLD, &r);
    else if (rank == other) MPI_Irecv(buf.data(), static_cast<int>(n), MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r);
    else return;
    wait(r);
  };
  // 1. One large flow.
  double best_big = 1e300;
  for (int k = 0; k < 4; ++k) {
    barrier();
    const double t0 = now();
    transfer(big);
    barrier();
    best_big = std::min(best_big, now() - t0);
  }
  const double bps = static_cast<double>(big) / best_big;
  // 2. Medium transfers one after another, each followed by a token the next waits for.
  const int count = 64;
  double best_seq = 1e300;
  for (int k = 0; k < 3; ++k) {
    barrier();
    const double t0 = now();
    for (int i = 0; i < count && active; ++i) {
      transfer(medium);
      MPI_Request r;
      if (rank == other) MPI_Isend(token.data(), 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r);
      else MPI_Irecv(token.data(), 1, MPI_BYTE, other, 1, MPI_COMM_WORLD, &r);
      wait(r);
    }
    barrier();
    best_seq = std::min(best_seq, now() - t0);
  }
  const double latency = best_seq / count - static_cast<double>(medium) / bps;
  // 3. A small message's one-way time (half a round trip).
  double best_rtt = 1e300;
  for (int k = 0; k < 50 && active; ++k) {
    const double t0 = now();
    MPI_Request r;
    if (rank == 0) {
      MPI_Isend(token.data(), 1, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r), wait(r);
      MPI_Irecv(token.data(), 1, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r), wait(r);
    } else {
      MPI_Irecv(token.data(), 1, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r), wait(r);
      MPI_Isend(token.data(), 1, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &r), wait(r);
    }
    best_rtt = std::min(best_rtt, now() - t0);
  }
  // 4. Fan-out: rank 0 sends one large message to every rank in [other, size) at once (put them
  // on other hosts): what several TCP flows sharing one NIC direction get together.
  double best_fan = 1e300;
  const int fan = size - other;
  const std::size_t part = big / static_cast<std::size_t>(std::max(fan, 1));
  for (int k = 0; k < 3; ++k) {
    barrier();
    const double t0 = now();
    std::vector<MPI_Request> rs;
    if (rank == 0)
      for (int q = other; q < size; ++q) {
        rs.emplace_back();
        MPI_Isend(buf.data(), static_cast<int>(part), MPI_BYTE, q, 3, MPI_COMM_WORLD, &rs.back());
      }
    else if (rank >= other) {
      rs.emplace_back();
      MPI_Irecv(buf.data(), static_cast<int>(part), MPI_BYTE, 0, 3, MPI_COMM_WORLD, &rs.back());
    }
    for (MPI_Request& r : rs) wait(r);
    barrier();
    best_fan = std::min(best_fan, now() - t0);
  }
  if (rank == 0 && latency < 0)  // reported as 0 below, which a user would pass to --latency-us: said, not silent
    std::fprintf(stderr,
                 "meshcast-calibrate: note: the latency fit came out negative (%.1f us): the small and large "
                 "messages' times do not lie on one line; latency_us says 0, one_way_small_us is the better guide\n",
                 latency * 1e6);
  if (rank == 0)
    std::printf("{\"payload_gbps\": %.6f, \"latency_us\": %.1f, \"one_way_small_us\": %.1f, \"large_message_mib\": %zu, "
                "\"fan_out\": %d, \"fan_out_gbps\": %.6f}\n",
                bps * 8 / 1e9, std::max(0.0, latency) * 1e6, best_rtt / 2 * 1e6, mib, fan,
                static_cast<double>(part) * fan / best_fan * 8 / 1e9);
  MPI_Finalize();
  return 0;
}

// The MPI backend's two broadcast modes, measured: MPI_Ibcast on a cached sub-communicator
// against a pipelined chain of point-to-point messages (1 MiB chunks forwarded as they arrive).
// One source device broadcasts N int32 to every other rank (strategy broadcast).
//
//   mpiexec -n 5 meshcast-bench-broadcast-modes [N]
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <meshcast/mpi.hpp>
#include "cli/fill.hpp"
#include "cli/flag_values.hpp"
#include "end_on_error.hpp"
using namespace meshcast;
int main(int argc, char** argv) try {
  MPI_Init(&argc, &argv);
  int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc == 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    if (rank == 0) std::fputs("usage: mpiexec -n N meshcast-bench-broadcast-modes [N_ELEMENTS]   (N >= 2; 1..2^29-1 elements)\n", stdout);
    MPI_Finalize();
    return 0;
  }
  if (size < 2) {
    if (rank == 0) std::fprintf(stderr, "run under mpiexec with at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  index_t n = 1 << 24;
  // N: a whole number of elements, 1 to 2^29 - 1: MPI_Ibcast moves the 4-byte elements in one
  // message, whose byte count is an int.
  if (argc > 1) {
    const std::optional<std::int64_t> v = meshcast_cli::whole_integer(argv[1]);  // decimal digits only
    if (argc > 2 || !v || *v < 1 || *v > (std::int64_t{1} << 29) - 1) {
      if (rank == 0) std::fprintf(stderr, "usage: meshcast-bench-broadcast-modes [N], N elements in 1..2^29-1\n");
      MPI_Finalize();
      return 2;
    }
    n = *v;
  }
  dynamic_shape sh{n};
  plan p = make_plan(dynamic_layout(dynamic_mesh{1}, dynamic_spec("R"), sh), dynamic_layout(dynamic_mesh{size - 1}, dynamic_spec("R"), sh));
  network net = network::alpa_testbed(default_hosts(p.device_count, 1, 1));
  for (transfer_kind how : {transfer_kind::group_broadcast, transfer_kind::chain}) {
    schedule s = solve(make_instance(p, net, broadcast{.how = how}), greedy{});
    executor<mpi_backend> exec(mpi_backend(MPI_COMM_WORLD, 60), p, s);
    std::vector<std::byte> src(exec.source_bytes()), dst(exec.destination_bytes());
    if (!src.empty()) cli::fill(p.src.tile(0), p.src.shape, 4, src);
    double best = 1e9;
    for (int r = 0; r < 5; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      auto t0 = std::chrono::steady_clock::now();
      exec.run(src, dst);
      MPI_Barrier(MPI_COMM_WORLD);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::size_t wrong = dst.empty() ? 0 : cli::count_wrong(p.dst.tile(0), p.src.shape, 4, dst);
    unsigned long long w = wrong, tw = 0;
    MPI_Reduce(&w, &tw, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) std::printf("%s: %d ranks, %.1f MiB to %d devices: best %.2f ms, algbw %.2f GB/s, %llu wrong\n", how == transfer_kind::chain ? "chain" : "communicator", size, n * 4 / 1048576.0, size - 1, best * 1e3, n * 4 / best / 1e9, tw);
  }
  MPI_Finalize();
} catch (const std::exception& e) {
  meshcast_bench::end_on_error("meshcast-bench-broadcast-modes", e);
}

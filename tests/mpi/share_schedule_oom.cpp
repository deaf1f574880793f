// share_schedule with one rank out of memory alone: tests/cli/check_share_schedule_oom.py preloads
// tests/mpi/fail_nth_new.cpp on one rank, which refuses an allocation of the schedule's wire size.
// Every rank must stop with an error at once (status 2), never wait out the 20 s timeout. With
// --sizes, rank 0 prints the wire form's bytes and every rank ends.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <meshcast/mpi.hpp>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  using namespace meshcast;
  int status = 0;
  try {
    // 64 tensors transposed on one mesh: a schedule whose wire form is past 64 KiB, the size from
    // which bounded_broadcast's ranks agree on their buffers.
    const dynamic_shape shape{64, 64};
    const dynamic_layout src(dynamic_mesh{ranks}, dynamic_spec("S0,R"), shape), dst(dynamic_mesh{ranks}, dynamic_spec("R,S0"), shape);
    std::vector<plan> plans(64, make_plan(src, dst, {.element_bytes = 4, .devices = device_map::same()}));
    const network net = network::alpa_testbed(default_hosts(ranks, 1, 1));
    schedule s = solve_batch(std::span<const plan>(plans), net, send_recv{}, greedy{});
    if (argc > 1 && std::strcmp(argv[1], "--sizes") == 0) {
      if (rank == 0) std::printf("wire_bytes %zu\n", to_wire(s).size() * sizeof(std::int64_t));
    } else {
      share_schedule(MPI_COMM_WORLD, std::span<const plan>(plans), s, 0, 20.0);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "share_schedule_oom (rank %d): error: %s\n", rank, e.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}

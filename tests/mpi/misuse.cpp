// Misuse of the MPI executor is a meshcast::error on every rank, never an MPI abort or a hang.
// Run with 4 ranks.
#include <mpi.h>

#include <cstdio>
#include <string>

#include <meshcast/meshcast.hpp>
#include <meshcast/mpi.hpp>
#include <meshcast/exec/backend/mpi.hpp>

using namespace meshcast;

namespace {
int failures = 0;
void expect_error(const char* what, auto&& f, const char* needle) {
  try {
    f();
    std::fprintf(stderr, "%s: no error\n", what);
    ++failures;
  } catch (const error& e) {
    if (std::string(e.what()).find(needle) == std::string::npos) {
      std::fprintf(stderr, "%s: unexpected message: %s\n", what, e.what());
      ++failures;
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // A plan of 8 devices on a 4-rank communicator (was "Invalid rank" inside MPI).
  plan eight = make_plan(dynamic_layout(parse_mesh("4"), dynamic_spec("S0"), dynamic_shape{16}),
                         dynamic_layout(parse_mesh("4"), dynamic_spec("R"), dynamic_shape{16}));
  schedule s8 = solve(make_instance(eight, network::alpa_testbed(default_hosts(8, 4, 4)), send_recv{}), greedy{});
  expect_error("8-device plan on 4 ranks", [&] { executor<mpi_backend> e(mpi_backend(MPI_COMM_WORLD, 5), eight, s8); },
               "communicator has 4 ranks");
  // Buffers smaller than the tiles.
  plan four = make_plan(dynamic_layout(parse_mesh("4"), dynamic_spec("S0"), dynamic_shape{16}),
                        dynamic_layout(parse_mesh("4"), dynamic_spec("R"), dynamic_shape{16}), {.devices = device_map::same()});
  schedule s4 = solve(make_instance(four, network::alpa_testbed(default_hosts(4, 4, 2)), send_recv{}), greedy{});
  executor<mpi_backend> e(mpi_backend(MPI_COMM_WORLD, 5), four, s4);
  std::vector<std::byte> small(4), out(e.destination_bytes());
  expect_error("short source buffer", [&] { e.run(small, out); }, "smaller than its tiles");
  // A schedule made for another plan: ops that name devices the plan does not have.
  expect_error("a schedule from another plan", [&] { executor<mpi_backend> x(mpi_backend(MPI_COMM_WORLD, 5), four, s8); },
               "another plan");
  // A message past MPI's int count (3 GiB of bytes, no staging cap): refused when the executor is
  // built, on every rank alike (it failed mid-run on the message's two ranks, the others timed
  // out). No buffer of that size is ever made.
  plan big = make_plan(dynamic_layout(parse_mesh("1"), dynamic_spec("R"), dynamic_shape{index_t{3} << 30}),
                       dynamic_layout(parse_mesh("1"), dynamic_spec("R"), dynamic_shape{index_t{3} << 30}));
  schedule sbig = solve(make_instance(big, network::alpa_testbed(default_hosts(2, 1, 1)), send_recv{}), greedy{});
  expect_error("a 3 GiB message", [&] { executor<mpi_backend> x(mpi_backend(MPI_COMM_WORLD, 5), big, sbig); },
               "this transport's messages carry");
  expect_error("a 3 GiB message in the one call's resharder", [&] {
    const dynamic_layout half(dynamic_mesh{size / 2}, dynamic_spec("R"), dynamic_shape{index_t{3} << 30});
    resharder<> r(MPI_COMM_WORLD, half, half, 1, reshard_options{.timeout_s = 20, .max_staging_bytes = 0});
  }, "staging cap");
  // The timeout itself is checked.
  expect_error("a NaN timeout", [&] { mpi_backend b(MPI_COMM_WORLD, std::numeric_limits<double>::quiet_NaN()); }, "timeout");
  // Everyone still agrees at the end (bounded): no rank was left behind.
  const bool all = all_ok(MPI_COMM_WORLD, failures == 0, 30, "collecting results");
  if (rank == 0) std::printf("mpi misuse: %s\n", all ? "all checks passed" : "FAILED");
  MPI_Finalize();
  return all ? 0 : 1;
}

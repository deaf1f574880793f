// Multi-rank test: random layouts (uneven sizes; cross-mesh, same-mesh and overlapping device
// lists) resharded by the MPI executor for every strategy and several solvers; every destination
// element is compared with its global index, and source shards must be left untouched.
//
//   mpiexec -n N meshcast-test-reshard-mpi [cases]
#include <mpi.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <meshcast/mpi.hpp>

#include "cli/fill.hpp"
#include "support/random_layouts.hpp"

using namespace meshcast;

namespace {

std::vector<index_t> random_mesh_of(index_t devices, std::mt19937_64& rng) {
  std::vector<index_t> axes;
  index_t left = devices;
  while (left > 1 && axes.size() < 2) {
    std::vector<index_t> divisors;
    for (index_t d = 2; d <= left; ++d)
      if (left % d == 0) divisors.push_back(d);
    index_t d = divisors[rng() % divisors.size()];
    axes.push_back(d);
    left /= d;
  }
  if (left > 1 || axes.empty()) axes.push_back(left);
  if (rng() % 3 == 0) axes.insert(axes.begin() + static_cast<long>(rng() % (axes.size() + 1)), 1);
  return axes;
}

template <class Strategy, class Solver>
std::string run_case(const plan& p, const network& net, bool split, Strategy st, Solver solver, int rank, double limit_s,
                     execution mode) {
  schedule s;
  if (rank == 0) {
    instance in = make_instance(p, net, st, {.split_replicas = split, .mode = mode});
    solver_options o;
    o.time_limit_s = limit_s;
    s = solve(in, solver, o);
  }
  share_schedule(MPI_COMM_WORLD, p, s);
  mpi_backend backend(MPI_COMM_WORLD, 60, 64);  // small chunks: chains of several pieces
  executor<mpi_backend> exec(backend, p, s);
  const auto eb = static_cast<std::size_t>(p.element_bytes);
  std::vector<std::byte> source(exec.source_bytes()), destination(exec.destination_bytes(), std::byte{0x5a});
  const box src_tile = p.source_tile(rank), dst_tile = p.destination_tile(rank);
  if (!source.empty()) cli::fill(src_tile, p.src.shape, eb, source);
  const auto pristine = source;
  exec.run(source, destination);
  if (source != pristine) return "source shard written";
  if (!destination.empty() && cli::count_wrong(dst_tile, p.src.shape, eb, destination) != 0) return "wrong elements";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int cases = argc > 1 ? std::atoi(argv[1]) : 6;
  int failures = 0, runs = 0;
  for (int c = 0; c < cases; ++c) {
    // Same on every rank.
    meshcast::testing::random_layout_source gen{std::mt19937_64(1000 * static_cast<unsigned>(size) + static_cast<unsigned>(c))};
    std::mt19937_64& rng = gen.rng;
    const index_t n = size;
    int mode = static_cast<int>(rng() % 3);  // 0 cross-mesh, 1 same mesh, 2 overlapping lists
    if (n < 2 && mode == 0) mode = 1;
    index_t src_count = mode == 0 ? 1 + static_cast<index_t>(rng() % (n - 1)) : n;
    index_t dst_count = mode == 0 ? n - src_count : mode == 1 ? n : 1 + static_cast<index_t>(rng() % n);
    plan_options options;
    options.element_bytes = (rng() % 2) ? 4 : 8;
    if (mode == 1) options.devices = device_map::same();
    if (mode == 2) {
      std::vector<index_t> ids(static_cast<std::size_t>(n));
      for (index_t i = 0; i < n; ++i) ids[i] = i;
      std::shuffle(ids.begin(), ids.end(), rng);
      ids.resize(static_cast<std::size_t>(dst_count));
      options.devices = device_map::listed(ids);
    }
    const int tensor_rank = 1 + static_cast<int>(rng() % 3);
    std::vector<index_t> shape(tensor_rank);
    for (auto& x : shape) x = 1 + static_cast<index_t>(rng() % 11);  // uneven, tiny dims
    dynamic_mesh sm(random_mesh_of(src_count, rng)), dm(random_mesh_of(dst_count, rng));
    dynamic_shape sh(shape);
    plan p = make_plan(dynamic_layout(sm, dynamic_spec(gen.random_spec(sm.rank(), tensor_rank)), sh),
                       dynamic_layout(dm, dynamic_spec(gen.random_spec(dm.rank(), tensor_rank)), sh), options);
    if (p.device_count != n) continue;  // an overlapping list that left the last rank out
    network net = network::alpa_testbed(default_hosts(p.device_count, src_count, 1 + static_cast<index_t>(rng() % 3)));
    const bool split = rng() % 2;
    auto check = [&](const std::string& what, const std::string& problem) {
      ++runs;
      int bad = problem.empty() ? 0 : 1, any = 0;
      MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (bad) std::fprintf(stderr, "rank %d: case %d %s (%s -> %s): %s\n", rank, c, what.c_str(),
                            p.src.to_string().c_str(), p.dst.to_string().c_str(), problem.c_str());
      failures += any;
    };
    for (execution mode : {execution::ordered, execution::concurrent}) {
      const std::string m = std::string(to_string(mode)) + " ";
      check(m + "send_recv/naive", run_case(p, net, split, send_recv{}, naive{}, rank, 0.05, mode));
      check(m + "send_recv/greedy", run_case(p, net, split, send_recv{}, greedy{}, rank, 0.05, mode));
      check(m + "send_recv/open_shop", run_case(p, net, split, send_recv{}, open_shop{}, rank, 0.05, mode));
      check(m + "send_recv_allgather/greedy", run_case(p, net, split, send_recv_allgather{}, greedy{}, rank, 0.05, mode));
      check(m + "send_recv_allgather/open_shop", run_case(p, net, split, send_recv_allgather{}, open_shop{}, rank, 0.05, mode));
      check(m + "send_recv_allgather/alpa_greedy", run_case(p, net, split, send_recv_allgather{}, alpa_greedy{}, rank, 0.05, mode));
      check(m + "broadcast/alpa_least_loaded", run_case(p, net, split, broadcast{}, alpa_least_loaded{}, rank, 0.05, mode));
      check(m + "broadcast/branch_and_bound", run_case(p, net, split, broadcast{}, branch_and_bound{}, rank, 0.05, mode));
      check(m + "broadcast(group)/greedy",
            run_case(p, net, split, broadcast{.how = transfer_kind::group_broadcast}, greedy{}, rank, 0.05, mode));
    }
  }
  if (rank == 0) std::printf("%d ranks: %d runs, %d failed\n", size, runs, failures);
  MPI_Finalize();
  return failures == 0 && runs > 0 ? 0 : 1;
}

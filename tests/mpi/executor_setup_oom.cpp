// A resharder's construction with one rank out of memory alone: tests/cli/check_executor_setup_oom.py
// preloads tests/mpi/fail_nth_new.cpp on one rank and refuses, run by run, each allocation of at
// least MESHCAST_FAIL_MIN_SIZE bytes the construction makes there (planning, the solve on rank 0,
// sharing the schedule, the executor's own setup before it makes its broadcast groups). Every rank
// must stop with an error at once, never wait out the 20 s timeout. Without a refusal the batch
// runs once and is checked; the preloaded rank prints how many allocations it counted.
// With --discover-hosts only meshcast::discover_hosts is armed (what a resharder without
// devices_per_host or host_of calls), and the batch then runs over the hosts it found.
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <meshcast/mpi.hpp>
#include <vector>

namespace {
// The preload module's switch, when it is loaded: counts only the construction's allocations.
long arm(int on) {
  using arm_fn = long (*)(int);
  static const auto f = reinterpret_cast<arm_fn>(dlsym(RTLD_DEFAULT, "meshcast_fail_nth_arm"));
  return f ? f(on) : -1;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  using namespace meshcast;
  int status = 0;
  try {
    // 32 tensors, each split over the mesh and wanted whole everywhere: broadcast groups of every
    // rank, made by the executor once its setup is done.
    const dynamic_shape shape{256, 64};
    const dynamic_layout src(dynamic_mesh{ranks}, dynamic_spec("S0,R"), shape), dst(dynamic_mesh{ranks}, dynamic_spec("R,R"), shape);
    std::vector<tensor_layouts> tensors(32, tensor_layouts{src.value(), dst.value(), sizeof(float)});
    reshard_options o;
    o.timeout_s = 20;
    o.devices = device_map::same();
    o.buckets = false;        // one broadcast a task, not point-to-point buckets
    o.devices_per_host = 1;   // and across hosts, where the strategy broadcasts
    const broadcast strategy{.how = transfer_kind::group_broadcast};
    std::vector<tensor_layouts> given = tensors;  // the copy the resharder takes, made before counting
    const bool discover = argc > 1 && std::strcmp(argv[1], "--discover-hosts") == 0;
    long counted = -1;
    if (discover) {
      arm(1);
      o.host_of = discover_hosts(MPI_COMM_WORLD, o.timeout_s);
      counted = arm(0);
      if (o.host_of.size() != static_cast<std::size_t>(ranks)) throw error("discover_hosts found the hosts of " + std::to_string(o.host_of.size()) + " ranks");
    } else {
      arm(1);
    }
    batch_resharder<greedy, broadcast> r(MPI_COMM_WORLD, std::move(given), o, greedy{}, strategy);
    if (!discover) counted = arm(0);
    if (counted >= 0) std::printf("armed_allocations %ld\n", counted);
    long groups = 0;
    for (const transfer& t : r.schedule().transfers)
      groups += t.kind == transfer_kind::group_broadcast || t.kind == transfer_kind::chain;
    if (rank == 0) std::printf("group_transfers %ld of %zu\n", groups, r.schedule().transfers.size());
    std::vector<std::vector<float>> in(tensors.size()), out(tensors.size());
    std::vector<std::span<const std::byte>> ins;
    std::vector<std::span<std::byte>> outs;
    for (std::size_t k = 0; k < tensors.size(); ++k) {
      in[k].assign(static_cast<std::size_t>(256 * 64 / ranks), static_cast<float>(rank * 1000 + k));
      out[k].assign(static_cast<std::size_t>(256 * 64), -1.0f);
      ins.push_back(std::as_bytes(std::span<const float>(in[k])));
      outs.push_back(std::as_writable_bytes(std::span<float>(out[k])));
    }
    r(ins, outs);
    for (std::size_t k = 0; k < tensors.size(); ++k)
      for (std::size_t i = 0; i < out[k].size(); ++i)
        if (out[k][i] != static_cast<float>(static_cast<int>(i / (out[k].size() / static_cast<std::size_t>(ranks))) * 1000 + k))
          throw error("tensor " + std::to_string(k) + " element " + std::to_string(i) + " is wrong");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "executor_setup_oom (rank %d): error: %s\n", rank, e.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}

// GPU test (label gpu): the NCCL backend on real GPUs, one MPI rank per GPU, random reshards for
// every strategy checked element by element, then the one call, over a blocking communicator and
// over a nonblocking one (ncclConfig_t::blocking = 0, broadcast groups made so too). Exits 77
// (skipped) without enough GPUs.
#include <mpi.h>

#include <cstdio>
#include <random>
#include <vector>

#include <meshcast/exec/backend/nccl_mpi_bootstrap.hpp>
#include <meshcast/mpi.hpp>
#include <meshcast/nccl.hpp>

#include "one_gpu_per_rank.hpp"

#include "cli/fill.hpp"

using namespace meshcast;

template <class Strategy>
static bool reshard(const plan& p, ncclComm_t world, cudaStream_t stream, int rank, execution mode, bool nonblocking) {
  network net = network::current(default_hosts(p.device_count, static_cast<index_t>(p.src_devices.size()), 8));
  schedule s;
  if (rank == 0) s = solve(make_instance(p, net, Strategy{}, {.split_replicas = true, .mode = mode}), greedy{});
  share_schedule(MPI_COMM_WORLD, p, s);
  nccl_backend<mpi_nccl_bootstrap> b(world, stream, mpi_nccl_bootstrap{}, nccl_group_transfers, 60, nonblocking);
  executor<nccl_backend<mpi_nccl_bootstrap>> exec(b, p, s);
  const auto eb = static_cast<std::size_t>(p.element_bytes);
  std::vector<std::byte> host_src(exec.source_bytes()), host_dst(exec.destination_bytes());
  const box src_tile = p.source_tile(rank), dst_tile = p.destination_tile(rank);
  if (!host_src.empty()) cli::fill(src_tile, p.src.shape, eb, host_src);
  cuda_memory::buffer src(host_src.size()), dst(host_dst.size());
  cudaMemcpy(src.data(), host_src.data(), host_src.size(), cudaMemcpyHostToDevice);
  exec.run({src.data(), host_src.size()}, {dst.data(), host_dst.size()});
  cudaMemcpy(host_dst.data(), dst.data(), host_dst.size(), cudaMemcpyDeviceToHost);
  return host_dst.empty() || cli::count_wrong(dst_tile, p.src.shape, eb, host_dst) == 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (!one_gpu_per_rank(rank, size)) {
    MPI_Finalize();
    return 77;
  }
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  int failures = 0;
  for (const bool nonblocking : {false, true}) {
    ncclComm_t world = nccl_world(MPI_COMM_WORLD, 60, nonblocking);
    std::mt19937_64 rng(7);
    for (int c = 0; c < (nonblocking ? 3 : 8); ++c) {
      index_t half = size / 2;
      dynamic_shape sh{1 + static_cast<index_t>(rng() % 300), 1 + static_cast<index_t>(rng() % 300)};
      const char* specs[] = {"S0,R", "R,S0", "R,R"};
      plan p = make_plan(dynamic_layout(dynamic_mesh{std::max<index_t>(half, 1)}, dynamic_spec(specs[rng() % 3]), sh),
                         dynamic_layout(dynamic_mesh{size - half}, dynamic_spec(specs[rng() % 3]), sh));
      bool ok = true;
      for (execution mode : {execution::ordered, execution::concurrent})
        ok = ok && reshard<send_recv>(p, world, stream, rank, mode, nonblocking) &&
             reshard<send_recv_allgather>(p, world, stream, rank, mode, nonblocking) &&
             reshard<broadcast>(p, world, stream, rank, mode, nonblocking);
      int bad = ok ? 0 : 1, any = 0;
      MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      failures += any;
    }
    {  // The one call over NCCL (no MPI inside): in place, S0,R -> R,S0.
      dynamic_layout a(dynamic_mesh{size}, dynamic_spec("S0,R"), dynamic_shape{97, 31}), b(dynamic_mesh{size}, dynamic_spec("R,S0"), dynamic_shape{97, 31});
      const box ta = a.tile(rank), tb = b.tile(rank);
      std::vector<std::byte> host_src(static_cast<std::size_t>(ta.volume()) * 4), host_dst(static_cast<std::size_t>(tb.volume()) * 4);
      if (!host_src.empty()) cli::fill(ta, a.value().shape, 4, host_src);
      cuda_memory::buffer src(host_src.size()), dst(host_dst.size());
      cudaMemcpy(src.data(), host_src.data(), host_src.size(), cudaMemcpyHostToDevice);
      std::span<const float> in(reinterpret_cast<const float*>(src.data()), host_src.size() / 4);
      std::span<float> out(reinterpret_cast<float*>(dst.data()), host_dst.size() / 4);
      reshard(world, stream, a, b, in, out, reshard_options{.devices = device_map::same(), .nccl_nonblocking = nonblocking});
      cudaMemcpy(host_dst.data(), dst.data(), host_dst.size(), cudaMemcpyDeviceToHost);
      const int bad = host_dst.empty() || cli::count_wrong(tb, a.value().shape, 4, host_dst) == 0 ? 0 : 1;
      int any = 0;
      MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      failures += any;
    }
    ncclCommDestroy(world);
  }
  cudaStreamDestroy(stream);
  if (rank == 0) std::printf("%d ranks on GPUs: %d failed cases\n", size, failures);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}

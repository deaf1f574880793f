// GPU test (label gpu): the one call over NCCL in compiled mode (meshcast::compiled_nccl: the host
// compiler, the real <nccl.h>, libmeshcast-nccl), one MPI rank per GPU, every element checked;
// before it, the one call over MPI, in compiled mode too where the build links meshcast::compiled
// beside it (one program, both libraries), else header-only. Includes the two front ends alone, as
// a compiled-mode program does. Exits 77 (skipped) without a GPU for every rank.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <span>
#include <vector>

#include <meshcast/mpi.hpp>
#include <meshcast/nccl.hpp>

#include "one_gpu_per_rank.hpp"

using namespace meshcast;

// Element (i, j) of the tensor holds i * cols + j in every layout, so each rank can check its tile.
static std::vector<float> tile_values(const box& tile, index_t cols) {
  std::vector<float> v;
  for (index_t i = tile[0].lo; i < tile[0].hi; ++i)
    for (index_t j = tile[1].lo; j < tile[1].hi; ++j) v.push_back(static_cast<float>(i * cols + j));
  return v;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  {  // over MPI, host memory
    const index_t rows = 19, cols = 7;
    const dynamic_layout a(dynamic_mesh{size}, dynamic_spec("S0,R"), dynamic_shape{rows, cols});
    const dynamic_layout c(dynamic_mesh{size}, dynamic_spec("R,S0"), dynamic_shape{rows, cols});
    const std::vector<float> in = tile_values(a.tile(rank), cols), want = tile_values(c.tile(rank), cols);
    std::vector<float> out(want.size(), -1.0f);
    int bad = 0, any = 0;
    try {
      reshard(MPI_COMM_WORLD, a, c, std::span<const float>(in), std::span<float>(out),
              reshard_options{.devices = device_map::same()});
      bad = out == want ? 0 : 1;
    } catch (const std::exception& e) {
      std::printf("rank %d over MPI: %s\n", rank, e.what());
      bad = 1;
    }
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
      if (rank == 0) std::printf("%d ranks over MPI: wrong elements\n", size);
      MPI_Finalize();
      return 1;
    }
  }
  if (!one_gpu_per_rank(rank, size)) {
    MPI_Finalize();
    return 77;
  }
  ncclUniqueId id;
  if (rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  ncclCommInitRank(&comm, size, id, rank);
  cudaStream_t stream;
  cudaStreamCreate(&stream);

  const index_t rows = 97, cols = 31;
  const dynamic_layout a(dynamic_mesh{size}, dynamic_spec("S0,R"), dynamic_shape{rows, cols});
  const dynamic_layout b(dynamic_mesh{size}, dynamic_spec("R,S0"), dynamic_shape{rows, cols});
  const std::vector<float> in_host = tile_values(a.tile(rank), cols), want = tile_values(b.tile(rank), cols);
  std::vector<float> out_host(want.size(), -1.0f);
  float *in = nullptr, *out = nullptr;
  cudaMalloc(&in, in_host.size() * sizeof(float) + 1);
  cudaMalloc(&out, out_host.size() * sizeof(float) + 1);
  cudaMemcpy(in, in_host.data(), in_host.size() * sizeof(float), cudaMemcpyHostToDevice);
  int bad = 0;
  try {
    reshard(comm, stream, a, b, std::span<const float>(in, in_host.size()), std::span<float>(out, out_host.size()),
            reshard_options{.devices = device_map::same()});
    cudaMemcpy(out_host.data(), out, out_host.size() * sizeof(float), cudaMemcpyDeviceToHost);
    bad = out_host == want ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("rank %d: %s\n", rank, e.what());
    bad = 1;
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  cudaFree(in);
  cudaFree(out);
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
  if (rank == 0) std::printf(any ? "%d ranks on GPUs: wrong elements\n" : "%d ranks on GPUs: every element right\n", size);
  MPI_Finalize();
  return any;
}

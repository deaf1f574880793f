// GPU test (label gpu): <meshcast/benchmark.hpp>'s session timing NCCL reshards with CUDA events
// (<meshcast/api/benchmark_nccl.hpp>), one MPI rank per GPU, real NCCL. Prints rank 0's Google
// Benchmark report; exits non-zero when an element is wrong, 77 (skipped) without enough GPUs.
#include <mpi.h>

#include <cstdio>

#include <meshcast/exec/backend/nccl_mpi_bootstrap.hpp>
#include <meshcast/benchmark.hpp>
#include <meshcast/api/benchmark_nccl.hpp>

int main(int argc, char** argv) {
  meshcast::benchmark_session session(argc, argv);
  int size = 0, gpus = 0, least = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
  MPI_Allreduce(&gpus, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (least < size) {  // NCCL needs one GPU per rank
    if (session.rank() == 0) std::printf("skipped: %d ranks but %d GPUs\n", size, least);
    return 77;
  }
  cudaSetDevice(session.rank() % gpus);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  ncclComm_t comm = meshcast::nccl_world(MPI_COMM_WORLD);
  const meshcast::dynamic_shape shape{4096, 1024};
  meshcast::dynamic_layout rows(meshcast::dynamic_mesh{size}, meshcast::dynamic_spec("S0,R"), shape);
  meshcast::dynamic_layout cols(meshcast::dynamic_mesh{size}, meshcast::dynamic_spec("R,S0"), shape);
  meshcast::dynamic_layout whole(meshcast::dynamic_mesh{size}, meshcast::dynamic_spec("R,R"), shape);
  const meshcast::reshard_options same{.devices = meshcast::device_map::same()};
  int rc = 0;
  {
    session.add("nccl/rows_to_columns", meshcast::nccl_reshard_job(comm, stream, rows, cols, sizeof(float), same));
    session.add("nccl/rows_to_replicated", meshcast::nccl_reshard_job(comm, stream, rows, whole, sizeof(float), same));
    rc = session.run();
  }
  ncclCommDestroy(comm);
  cudaStreamDestroy(stream);
  return rc;
}

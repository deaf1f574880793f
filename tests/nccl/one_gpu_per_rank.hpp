// The GPU tests' start: every MPI rank takes a GPU of its own (NCCL needs one per rank), or,
// where the ranks have fewer, rank 0 says so and the test is to exit 77 (ctest: skipped).
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>

/// Collective over MPI_COMM_WORLD. True with this rank's device set; false when to skip.
inline bool one_gpu_per_rank(int rank, int size) {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
  int least = gpus;
  MPI_Allreduce(&gpus, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (least < size) {
    if (rank == 0) std::printf("skipped: %d ranks but %d GPUs\n", size, least);
    return false;
  }
  cudaSetDevice(rank % gpus);
  return true;
}

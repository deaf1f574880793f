// meshcast-pipeline-mpi's clock exchange is bounded by its timeout: at 2 ranks, rank 1 never takes
// part and rank 0 must get a timeout_error naming the exchange within the timeout (it used
// blocking MPI_Send/MPI_Recv, a hang). Then both ranks meet and end normally.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "pipeline_mpi/clock.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int ok = 1;
  if (rank == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string what;
    try {
      pipeline_mpi::clock_offset(0.5);
      what = "returned";
    } catch (const meshcast::timeout_error& e) {
      what = e.what();
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ok = what.find("estimating the clocks' offsets") != std::string::npos && took >= 0.5 && took < 30;
    std::printf("clock exchange with a rank that never comes: %s after %.2f s\n", what.c_str(), took);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::printf("pipeline clock bounded: %s\n", ok ? "ok" : "FAILED");
  std::fflush(stdout);
  MPI_Finalize();
  return ok ? 0 : 1;
}

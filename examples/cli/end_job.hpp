// Ending the whole MPI job from one rank, within a bound. MPI_Abort asks the launcher to end the
// job and waits for its answer (MPICH's PMI_Abort reads from the local proxy); on a host cut off
// from the launcher that answer never comes, so the rank ends itself a second later in any case
// (where the launcher is reachable, it ends the job at once).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace meshcast::cli {

[[noreturn]] inline void end_job(int status) {
  try {
    std::thread([status] {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      std::_Exit(status);
    }).detach();
  } catch (...) {  // no thread: MPI_Abort alone
  }
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);
}

}  // namespace meshcast::cli

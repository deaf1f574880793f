// A regression test for examples/cli/one_blas_thread.hpp: linked with CBC and MPI like
// meshcast-reshard, the process must reach main with one thread. Without the header OpenBLAS's
// constructor has started its workers by then, and UCX's constructor rewrites mmap under them
// (a rank's SIGSEGV in a few dozen 20-rank starts). Deterministic: it counts threads, it does not
// wait for the crash. Run with OPENBLAS_NUM_THREADS unset (the header leaves a user's value alone).
#include <coin/Cbc_C_Interface.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <istream>
#include <string>

#include "cli/one_blas_thread.hpp"

int main(int argc, char** argv) {
  int threads = -1;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) threads = std::atoi(line.c_str() + 8);
  // The new start keeps the program's path, so its process name (what pgrep and
  // tests/cluster/faults.py look for) is its own, not "exe".
  std::string comm;
  std::getline(std::ifstream("/proc/self/comm") >> std::ws, comm);
  std::string own = argv[0];
  own = own.substr(own.find_last_of('/') + 1).substr(0, 15);
  MPI_Init(&argc, &argv);  // MPI and CBC linked and used, as in the executables it stands for
  Cbc_deleteModel(Cbc_newModel());
  MPI_Finalize();
  const char* blas = std::getenv("OPENBLAS_NUM_THREADS");
  std::printf("threads at main: %d, OPENBLAS_NUM_THREADS=%s, process name %s\n", threads, blas ? blas : "(unset)",
              comm.c_str());
  // One thread, and because of the new start (OpenBLAS without the variable would start workers).
  return threads == 1 && blas && std::strcmp(blas, "1") == 0 && comm == own ? 0 : 1;
}

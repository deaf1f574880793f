// meshcast-reshard: reshards a tensor across MPI ranks (rank r is device r) and checks the result.
//
//   mpiexec -n 20 meshcast-reshard --shape 1024x1024x512 --src-mesh 2x4 --src-spec S0,R,R
//       --dst-mesh 3x4 --dst-spec R,S0,R --solver greedy
//
// Every source shard is filled with each element's global row-major index (little-endian, int32
// for --dtype-bytes 4, int64 for 8, wrapping); every destination element is checked; rank 0
// prints one summary line. Exit status 0 only when every element on every rank is right.
//
// Failures: every wait on other ranks has a deadline (--timeout-s). Input errors are the same on
// every rank and rank 0 reports them; a rank's own failure (a file it cannot write, memory it
// cannot get, a peer that does not answer) is reported by that rank. When the ranks can still
// agree, all of them end with exit status 2; when a peer is gone or stopped, the ranks that notice
// report it, wait a moment for the others to do the same, and end the job with MPI_Abort.
#include "cli/reshard_main.hpp"

int main(int argc, char** argv) { return meshcast::cli::reshard_main<>(argc, argv); }

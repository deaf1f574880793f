// For executables that link both CBC (the ILP solver) and MPICH over UCX: asks OpenBLAS for one
// thread before any shared library starts.
//
// Why: OpenBLAS, which CBC brings in through LAPACK, starts its worker threads in its own
// constructor, and they call mmap at once. libucs's constructor, which the dynamic loader runs
// after OpenBLAS's, rewrites mmap's first instructions in place (UCX's "bistro" memory hooks). A
// worker inside mmap while it is rewritten runs half-written code and the rank dies with SIGSEGV:
// about one 20-rank start in a few dozen on this machine (CI, mpi.reshard_cli; the core shows
// blas_memory_alloc on one thread and ucm_bistro_patch on the other). CBC gains nothing from BLAS
// threads. The entry below sits in .preinit_array, which the loader runs before every shared
// library's constructor. Setting the variable there is not enough (libc's own initialisation,
// which runs next, resets the environment to the one the process started with), so where the
// user has not set OPENBLAS_NUM_THREADS it executes the program again at once, before any library
// has started, with OPENBLAS_NUM_THREADS=1 added: same process, same arguments, same path (so its
// process name, which tools such as pgrep and tests/cluster/faults.py look for, stays the same). Should that fail
// (no /proc), the program goes on as before. It does not when the program runs under valgrind
// (which would not follow the new start) or was started through the loader (`ld.so prog`: there
// /proc/self/exe is the loader). OpenBLAS's other variables (GOTO_NUM_THREADS, OMP_NUM_THREADS)
// then no longer govern it: OPENBLAS_NUM_THREADS, which comes first, does (set it to choose).
// Programs of one's own that link both libraries: see docs/limits.md.
#pragma once

#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace meshcast_cli {
inline void one_blas_thread(int, char** argv, char** envp) {
  constexpr char name[] = "OPENBLAS_NUM_THREADS=", valgrind[] = "VALGRIND_LAUNCHER=";
  std::size_t n = 0;
  for (; envp && envp[n]; ++n)
    if (std::strncmp(envp[n], name, sizeof name - 1) == 0 || std::strncmp(envp[n], valgrind, sizeof valgrind - 1) == 0)
      return;  // the user's choice, the second start, or valgrind
  // Only where /proc/self/exe is the program that was started (not the loader running it).
  const auto* started = reinterpret_cast<const char*>(getauxval(AT_EXECFN));
  struct stat self {}, program {};
  if (!started || stat("/proc/self/exe", &self) != 0 || stat(started, &program) != 0 || self.st_dev != program.st_dev ||
      self.st_ino != program.st_ino)
    return;
  constexpr std::size_t room = 4096;
  if (n + 2 > room) return;
  char* env[room];  // nothing is allocated: libc has not initialised yet
  for (std::size_t i = 0; i < n; ++i) env[i] = envp[i];
  static char one[] = "OPENBLAS_NUM_THREADS=1";
  env[n] = one;
  env[n + 1] = nullptr;
  execve(started, argv, env);  // by the name it was started with: its process name stays the same
}
}  // namespace meshcast_cli

[[gnu::section(".preinit_array"), gnu::used]] static void (*const meshcast_cli_one_blas_thread)(int, char**, char**) =
    &meshcast_cli::one_blas_thread;

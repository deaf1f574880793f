// An LD_PRELOAD module for one rank of a test: its MESHCAST_FAIL_NTH-th `operator new` of exactly
// MESHCAST_FAIL_SIZE bytes throws std::bad_alloc, so that a rank runs out of memory alone, where
// its peers do not (tests/cli/check_bench_alloc_failure.py). With MESHCAST_FAIL_MIN_SIZE instead,
// it counts the allocations of at least that many bytes made while the program has armed it
// (meshcast_fail_nth_arm, found with dlsym: a sweep over every allocation of one stretch of code,
// tests/cli/check_executor_setup_oom.py), or from the start with MESHCAST_FAIL_ARMED=1 (a whole
// program's, tests/cli/check_reshard_oom.py), and says at exit how many it counted. Every other
// allocation is malloc's.
#include <cstdio>
#include <cstdlib>
#include <new>

namespace {
long fail_size = -1, fail_min_size = -1, fail_nth = 0, seen = 0;
bool read_environment = false, armed = false;

void read_once() {
  if (read_environment) return;
  read_environment = true;
  if (const char* s = std::getenv("MESHCAST_FAIL_SIZE")) fail_size = std::atol(s);
  if (const char* s = std::getenv("MESHCAST_FAIL_MIN_SIZE")) fail_min_size = std::atol(s);
  if (const char* n = std::getenv("MESHCAST_FAIL_NTH")) fail_nth = std::atol(n);
  if (const char* a = std::getenv("MESHCAST_FAIL_ARMED")) armed = std::atol(a) != 0;
}

struct report_at_exit {
  ~report_at_exit() {
    if (fail_min_size >= 0) std::fprintf(stderr, "fail_nth_new: counted %ld allocations\n", seen);
  }
} report;

bool counted(std::size_t bytes) {
  if (fail_min_size >= 0) return armed && static_cast<long>(bytes) >= fail_min_size;
  return static_cast<long>(bytes) == fail_size;
}
}  // namespace

/// Counts (and refuses the N-th of) the allocations of at least MESHCAST_FAIL_MIN_SIZE bytes from
/// now while `on`; returns how many were counted so far.
extern "C" long meshcast_fail_nth_arm(int on) {
  read_once();
  armed = on != 0;
  return seen;
}

void* operator new(std::size_t bytes) {
  read_once();
  if (counted(bytes) && ++seen == fail_nth) {
    std::fprintf(stderr, "fail_nth_new: allocation %ld of %zu bytes refused\n", seen, bytes);
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t bytes) { return operator new(bytes); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

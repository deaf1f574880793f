// An LD_PRELOAD module for one rank of a test: its MESHCAST_FAIL_NTH-th `operator new` of exactly
// MESHCAST_FAIL_SIZE bytes throws std::bad_alloc, so that a rank runs out of memory alone, where
// its peers do not (tests/cli/check_bench_alloc_failure.py). Every other allocation is malloc's.
#include <cstdio>
#include <cstdlib>
#include <new>

namespace {
long fail_size = -1, fail_nth = 0, seen = 0;
bool read_environment = false;

void read_once() {
  if (read_environment) return;
  read_environment = true;
  if (const char* s = std::getenv("MESHCAST_FAIL_SIZE")) fail_size = std::atol(s);
  if (const char* n = std::getenv("MESHCAST_FAIL_NTH")) fail_nth = std::atol(n);
}
}  // namespace

void* operator new(std::size_t bytes) {
  read_once();
  if (static_cast<long>(bytes) == fail_size && ++seen == fail_nth) {
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

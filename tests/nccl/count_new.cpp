// The C++ heap's allocations, counted per thread while that thread asks (count_new.hpp), except
// those the emulated NCCL makes inside its calls (meshcast_emulation_call): theirs stand for an
// NCCL's or a CUDA runtime's, not the library's. Replaces operator new and delete for the whole
// executable, so it is not linked under the sanitizers, whose runtime must own them.
#include <cuda_runtime.h>  // the emulation's: meshcast_emulation_calls

#include <cstdlib>
#include <new>

#include "count_new.hpp"

namespace meshcast_test {
thread_local bool counting_new = false;
thread_local std::size_t counted_new = 0;
}  // namespace meshcast_test

namespace {
void* counted_allocation(std::size_t n) noexcept {
  if (meshcast_test::counting_new && meshcast_emulation_calls == 0) ++meshcast_test::counted_new;
  return std::malloc(n ? n : 1);
}
void* allocation_or_throw(std::size_t n) {
  if (void* p = counted_allocation(n)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return allocation_or_throw(n); }
void* operator new[](std::size_t n) { return allocation_or_throw(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_allocation(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_allocation(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

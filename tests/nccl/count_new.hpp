// What a thread allocates from the C++ heap while it counts (tests/nccl/count_new.cpp, linked
// where MESHCAST_TEST_COUNTS_NEW is defined), the emulated NCCL's own allocations left out.
#pragma once

#include <cstddef>

namespace meshcast_test {
extern thread_local bool counting_new;
extern thread_local std::size_t counted_new;
}  // namespace meshcast_test

// Checks of the multi-rank tests: a failed check prints its rank and what failed, and counts;
// main returns non-zero when any rank counted one.
#pragma once

#include <cstdio>
#include <string>

namespace meshcast_test {

inline int failures = 0, rank = 0, size = 0;

inline void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: %s\n", rank, what.c_str());
    ++failures;
  }
}

}  // namespace meshcast_test

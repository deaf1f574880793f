// detail::mt19937_64 is std::mt19937_64 to the letter (core/detail/mersenne_twister.hpp): the
// solvers' and pipeline searches' results depend on every output.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <random>

#include <meshcast/meshcast.hpp>  // holds detail::mt19937_64 (through the greedy solver), also in single_include/

TEST_CASE("mt19937_64 gives the standard's sequence for every seed tried") {
  const std::uint64_t seeds[] = {0,          1,          5489,       7,          20240611,
                                 0x9e3779b97f4a7c15ULL, std::numeric_limits<std::uint64_t>::max(),
                                 std::uint64_t{1} << 63, 0xdeadbeefcafef00dULL};
  for (std::uint64_t seed : seeds) {
    CAPTURE(seed);
    std::mt19937_64 theirs(seed);
    meshcast::detail::mt19937_64 ours(seed);
    for (int i = 0; i < 3 * 312 + 5; ++i) REQUIRE(ours() == theirs());  // three twists and some
  }
}

TEST_CASE("mt19937_64's 10000th output from the default seed is the standard's") {
  meshcast::detail::mt19937_64 g;
  for (int i = 1; i < 10000; ++i) g();
  CHECK(g() == 9981545732273789042ULL);  // [rand.predef] names this value
}

TEST_CASE("mt19937_64 re-seeded starts its sequence again and is a uniform random bit generator") {
  static_assert(std::uniform_random_bit_generator<meshcast::detail::mt19937_64>);
  meshcast::detail::mt19937_64 g(42);
  const std::uint64_t first = g();
  for (int i = 0; i < 1000; ++i) g();
  g.seed(42);
  CHECK(g() == first);
  std::uniform_int_distribution<int> d(0, 9);  // usable where the standard's engine is
  const int v = d(g);
  CHECK((v >= 0 && v <= 9));
}

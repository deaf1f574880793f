// detail::mt19937_64 is std::mt19937_64 to the letter (core/detail/mersenne_twister.hpp), and
// detail::weighted_index is libstdc++'s discrete_distribution (core/detail/weighted_draw.hpp): the
// solvers' and pipeline searches' results depend on every output.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

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

TEST_CASE("weighted_index draws as libstdc++'s discrete_distribution does, and uses the generator alike") {
  // alpa_greedy's weights are max_load - load + 1 over byte loads: whole numbers from 1 to ~1e12;
  // reals of every scale and single weights too (no draw: the next output is the same).
  meshcast::detail::mt19937_64 make(7);
  for (int trial = 0; trial < 20000; ++trial) {
    CAPTURE(trial);
    const std::size_t n = 1 + make() % 12;
    std::vector<double> w(n);
    for (double& x : w) {
      switch (trial % 4) {
        case 0: x = static_cast<double>(1 + make() % 4); break;
        case 1: x = static_cast<double>(1 + make() % 1000000000000ULL); break;
        case 2: x = static_cast<double>(make() >> 11) * 0x1p-53 * 1e6 + 1e-9; break;
        default: x = trial % 8 == 3 ? 1.0 : static_cast<double>(make() % 3); break;  // zeros among them
      }
    }
    if (std::all_of(w.begin(), w.end(), [](double x) { return x == 0; })) w[0] = 1;
    const std::uint64_t seed = make();
    meshcast::detail::mt19937_64 ours(seed);
    meshcast::detail::mt19937_64 theirs(seed);
    for (int draw = 0; draw < 4; ++draw) {
      const std::size_t got = meshcast::detail::weighted_index(w, ours);
      REQUIRE(got < n);
      CHECK(w[got] > 0);
#if defined(__GLIBCXX__)
      const std::size_t want = std::discrete_distribution<std::size_t>(w.begin(), w.end())(theirs);
      REQUIRE(got == want);
#endif
    }
#if defined(__GLIBCXX__)
    CHECK(ours() == theirs());  // as many outputs used
#endif
  }
}

TEST_CASE("weighted_index follows the weights: frequencies over 200000 draws within 1% of the shares") {
  const std::vector<double> w = {1, 2, 3, 4, 0, 10};
  meshcast::detail::mt19937_64 g(20241202);
  std::vector<int> count(w.size(), 0);
  const int draws = 200000;
  for (int i = 0; i < draws; ++i) ++count[meshcast::detail::weighted_index(w, g)];
  CHECK(count[4] == 0);
  for (std::size_t i = 0; i < w.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(count[i] / double(draws) - w[i] / 20.0) < 0.01);
  }
  CHECK(meshcast::detail::canonical_double(g) < 1.0);
}

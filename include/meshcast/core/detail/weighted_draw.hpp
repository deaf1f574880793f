// Drawing an index with probability proportional to its weight, as libstdc++'s
// std::discrete_distribution draws it: the same arithmetic (weights divided by their sum, running
// sums, the last one set to 1, the first sum not below one canonical draw) and the same use of the
// generator (none for fewer than two weights, else one 64-bit output), so alpa_greedy's schedules
// are what they were with <random> (tests/test_random.cpp compares the two), and are the same on
// every standard library. <random> alone costs the umbrella header a fifth of a second to parse.
#pragma once

#include <cmath>
#include <cstddef>
#include <span>

#include "mersenne_twister.hpp"

namespace meshcast::detail {

/// A uniform double in [0, 1) from one output of `rng`: its 64 bits over 2^64, rounded to nearest.
inline double canonical_double(mt19937_64& rng) noexcept {
  const double p = static_cast<double>(rng()) / 18446744073709551616.0;  // 2^64
  return p < 1 ? p : std::nextafter(1.0, 0.0);
}

/// An index into `weights` (finite, non-negative, of positive sum), drawn with probability
/// proportional to its weight; 0 without a draw for fewer than two weights.
inline std::size_t weighted_index(std::span<const double> weights, mt19937_64& rng) noexcept {
  if (weights.size() < 2) return 0;
  double sum = 0;
  for (double w : weights) sum += w;
  const double p = canonical_double(rng);
  double running = 0;
  for (std::size_t i = 0; i + 1 < weights.size(); ++i) {
    running += weights[i] / sum;
    if (!(running < p)) return i;
  }
  return weights.size() - 1;  // whose running sum is 1 by definition
}

}  // namespace meshcast::detail

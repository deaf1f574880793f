// The 64-bit Mersenne Twister (MT19937-64, Matsumoto and Nishimura), to the letter of the C++
// standard's std::mt19937_64: the same seeding and the same sequence (tests/test_random.cpp
// compares the two). The solvers use nothing of <random> but this generator's raw outputs, and
// <random> alone costs every includer of <meshcast/mpi.hpp> a fifth of a second to parse.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace meshcast::detail {

class mt19937_64 {
 public:
  using result_type = std::uint64_t;
  static constexpr result_type default_seed = 5489u;
  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return ~result_type{0}; }

  explicit mt19937_64(result_type seed = default_seed) noexcept { this->seed(seed); }

  void seed(result_type value) noexcept {
    x_[0] = value;
    for (std::size_t i = 1; i < n; ++i) x_[i] = 6364136223846793005u * (x_[i - 1] ^ (x_[i - 1] >> 62)) + i;
    next_ = n;
  }

  result_type operator()() noexcept {
    if (next_ == n) twist();
    result_type y = x_[next_++];
    y ^= (y >> 29) & 0x5555555555555555u;
    y ^= (y << 17) & 0x71d67fffeda60000u;
    y ^= (y << 37) & 0xfff7eee000000000u;
    return y ^ (y >> 43);
  }

 private:
  static constexpr std::size_t n = 312, m = 156;
  static constexpr result_type upper = ~result_type{0} << 31, lower = ~upper;

  void twist() noexcept {
    for (std::size_t i = 0; i < n; ++i) {
      const result_type y = (x_[i] & upper) | (x_[(i + 1) % n] & lower);
      x_[i] = x_[(i + m) % n] ^ (y >> 1) ^ ((y & 1) ? 0xb5026f5aa96619e9u : 0u);
    }
    next_ = 0;
  }

  std::array<result_type, n> x_{};
  std::size_t next_ = n;
};

}  // namespace meshcast::detail

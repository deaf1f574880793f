// meshcast-pipeline-mpi's compute: the kinds (--compute), the calibrated 64x64 matrix product, and
// one F or B entry's work of a given duration.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <string>
#include <vector>

#include <meshcast/pipeline.hpp>

#include "clock.hpp"

namespace pipeline_mpi {
using namespace meshcast;

enum class compute_kind { spin, sleep, matmul };
inline const char* to_string(compute_kind c) { return c == compute_kind::spin ? "spin" : c == compute_kind::sleep ? "sleep" : "matmul"; }

constexpr int block = 64;
struct matmul_state {
  std::vector<float> a, b, c;
  double product_s = 1e-4;
  matmul_state() : a(block * block), b(block * block), c(block * block) {
    for (int i = 0; i < block * block; ++i) a[i] = 1.0f + static_cast<float>(i % 7) * 1e-3f, b[i] = 1.0f - static_cast<float>(i % 5) * 1e-3f;
  }
  void product() {
    for (int i = 0; i < block; ++i)
      for (int k = 0; k < block; ++k) {
        const float x = a[i * block + k];
        for (int j = 0; j < block; ++j) c[i * block + j] += x * b[k * block + j];
      }
    // Keep the values bounded and the work observable.
    a[0] = c[0] * 1e-9f + 1.0f;
  }
  void calibrate() {
    for (int i = 0; i < 20; ++i) product();
    double best = 1e300;
    for (int k = 0; k < 7; ++k) {
      const auto t0 = clock_type::now();
      for (int i = 0; i < 20; ++i) product();
      best = std::min(best, seconds_since(t0) / 20);
    }
    product_s = best;
  }
};

/// The longest one F or B entry may compute. Beyond it the deadline below (clock ticks) and the
/// matmul count would overflow; no run of this program is meant to take that long.
constexpr double max_compute_s = 1e6;

/// Refuses a stage whose forward or backward time, in seconds, is longer than max_compute_s.
inline void check_compute_times(const pipeline::description& d) {
  for (std::size_t s = 0; s < d.stages.size(); ++s)
    for (const bool fwd : {true, false}) {
      if (!fwd && !d.training()) continue;
      const double units = fwd ? d.stages[s].forward : d.stages[s].backward;
      if (!(units * d.time_unit_s <= max_compute_s))
        throw error("stages[" + std::to_string(s) + "]." + (fwd ? "forward" : "backward") + " is " +
                    meshcast::detail::number(units) + " units of " + meshcast::detail::number(d.time_unit_s) +
                    " s, longer than the " + meshcast::detail::number(max_compute_s) + " s one entry may compute");
    }
}

inline void compute(compute_kind kind, double seconds, matmul_state& mm) {
  const auto t0 = clock_type::now();
  const auto until = t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  switch (kind) {
    case compute_kind::spin:
      while (clock_type::now() < until) {
      }
      break;
    case compute_kind::sleep:
      std::this_thread::sleep_until(until);
      break;
    case compute_kind::matmul:
      for (long long n = std::llround(seconds / std::max(mm.product_s, 1e-9)); n > 0; --n) mm.product();
      break;
  }
}

}  // namespace pipeline_mpi

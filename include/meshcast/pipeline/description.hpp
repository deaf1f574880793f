// A pipeline description: stages (compute time per microbatch), the transfers between them
// (edges), the number of microbatches, the training schedule that fixes each stage's compute
// order, and whether a stage computes and communicates on one stream or on two.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/detail/checked.hpp"
#include "../core/detail/number_text.hpp"

namespace meshcast::pipeline {

/// The compute order of every stage (see `compute_order` in graph.hpp).
enum class schedule_kind {
  forward_only,  ///< F0 .. F(m-1)
  gpipe,         ///< F0 .. F(m-1), then B0 .. B(m-1)
  one_f_one_b,   ///< "1f1b" (PipeDream-Flush): min(m, n-i) forwards, then B and F alternate
  eager_1f1b,    ///< Alpa's overlap-friendly 1F1B: min(m, 2(n-i)-1) forwards, then B and F alternate
};

/// `shared`: a stage runs one instruction at a time. `separate`: a compute stream and a
/// communication stream per stage, each taking that stage's instructions of its kind in order.
enum class stream_mode { shared, separate };

/// Compute time of one microbatch on a stage (any time unit, the same for the whole pipeline).
struct stage {
  double forward = 0;
  double backward = 0;  ///< used by the training schedules only
};

/// One transfer per microbatch from `from` to `to` in the forward pass and, in training
/// schedules, one from `to` back to `from` in the backward pass.
struct edge {
  index_t from = 0;
  index_t to = 0;
  double time = 0;                            ///< forward transfer time
  std::optional<double> backward_time = {};  ///< backward transfer time; `time` when absent
  double back() const noexcept { return backward_time ? *backward_time : time; }
};

struct description {
  std::vector<stage> stages;
  index_t microbatches = 1;
  schedule_kind schedule = schedule_kind::forward_only;
  stream_mode streams = stream_mode::shared;
  std::vector<edge> edges;
  double time_unit_s = 1;  ///< seconds per time unit (for traces and tensor edges' times)

  index_t stage_count() const noexcept { return static_cast<index_t>(stages.size()); }
  bool training() const noexcept { return schedule != schedule_kind::forward_only; }
  /// 1 (forward only) or 2 (forward and backward).
  index_t passes() const noexcept { return training() ? 2 : 1; }
};

/// Most stages a pipeline may have.
inline constexpr index_t max_stages = 4096;
/// Most microbatches a pipeline may have.
inline constexpr index_t max_microbatches = 100000;
/// Most instructions all the stages' lists may hold together (a transfer counts twice: its send
/// and its receive). Keeps every policy's memory and the printed lists bounded.
inline constexpr index_t max_instructions = 4000000;

inline constexpr std::string_view to_string(schedule_kind k) noexcept {
  switch (k) {
    case schedule_kind::forward_only: return "forward_only";
    case schedule_kind::gpipe: return "gpipe";
    case schedule_kind::one_f_one_b: return "1f1b";
    case schedule_kind::eager_1f1b: return "eager_1f1b";
  }
  return "?";
}

inline constexpr std::string_view to_string(stream_mode s) noexcept {
  return s == stream_mode::shared ? "shared" : "separate";
}

/// The schedule named `name`; throws naming `what` when there is none.
inline schedule_kind parse_schedule_kind(std::string_view name, std::string_view what = "schedule") {
  for (schedule_kind k : {schedule_kind::forward_only, schedule_kind::gpipe, schedule_kind::one_f_one_b,
                          schedule_kind::eager_1f1b})
    if (name == to_string(k)) return k;
  throw error(std::string(what) + " '" + std::string(name) +
              "' is not a schedule (expected forward_only, gpipe, 1f1b or eager_1f1b)");
}

/// The stream mode named `name`; throws naming `what` when there is none.
inline stream_mode parse_stream_mode(std::string_view name, std::string_view what = "streams") {
  if (name == "shared") return stream_mode::shared;
  if (name == "separate") return stream_mode::separate;
  throw error(std::string(what) + " '" + std::string(name) + "' is not a stream mode (expected shared or separate)");
}

namespace detail {
inline void check_time(double t, const std::string& what) {
  if (!std::isfinite(t) || t < 0) throw error(what + " is " + meshcast::detail::number(t) + ": a time must be a finite number >= 0");
}
}  // namespace detail

/// Number of entries the stages' lists hold together (each transfer twice), with checked
/// arithmetic; throws if it overflows.
inline index_t instruction_count(const description& d) {
  const index_t per_mb = meshcast::detail::checked_add(
      d.stage_count(), meshcast::detail::checked_mul(2, static_cast<index_t>(d.edges.size()), "the number of transfers"),
      "the number of instructions");
  return meshcast::detail::checked_mul(meshcast::detail::checked_mul(per_mb, d.passes(), "the number of instructions"),
                                       d.microbatches, "the number of instructions");
}

/// Checks everything a policy relies on; throws `meshcast::error` naming the bad input
/// ("edges[2].to ...", "stages[0].forward ...").
inline void validate(const description& d) {
  const index_t n = d.stage_count();
  if (n < 1) throw error("stages must list at least one stage");
  if (n > max_stages)
    throw error("stages lists " + std::to_string(n) + " stages, more than the limit of " + std::to_string(max_stages));
  if (d.microbatches < 1 || d.microbatches > max_microbatches)
    throw error("microbatches is " + std::to_string(d.microbatches) + ", outside [1, " +
                std::to_string(max_microbatches) + "]");
  if (!std::isfinite(d.time_unit_s) || !(d.time_unit_s > 0))
    throw error("time_unit_s is " + meshcast::detail::number(d.time_unit_s) + ", must be a positive number");
  for (index_t s = 0; s < n; ++s) {
    detail::check_time(d.stages[s].forward, "stages[" + std::to_string(s) + "].forward");
    if (d.training()) detail::check_time(d.stages[s].backward, "stages[" + std::to_string(s) + "].backward");
  }
  // Duplicates found through a sorted copy of (from, to, index): linear memory.
  std::vector<std::uint64_t> keys;
  keys.reserve(d.edges.size());
  for (std::size_t i = 0; i < d.edges.size(); ++i) {
    const edge& e = d.edges[i];
    const std::string at = "edges[" + std::to_string(i) + "]";
    if (e.from < 0 || e.from >= n)
      throw error(at + ".from is " + std::to_string(e.from) + ", outside [0, " + std::to_string(n - 1) + "]");
    if (e.to < 0 || e.to >= n)
      throw error(at + ".to is " + std::to_string(e.to) + ", outside [0, " + std::to_string(n - 1) + "]");
    if (e.from >= e.to)
      throw error(at + ".to is " + std::to_string(e.to) + " but must be greater than .from (" + std::to_string(e.from) +
                  "): data flows from earlier stages to later ones");
    detail::check_time(e.time, at + ".time");
    if (e.backward_time) detail::check_time(*e.backward_time, at + ".backward_time");
    keys.push_back((static_cast<std::uint64_t>(e.from) << 12 | static_cast<std::uint64_t>(e.to)) << 40 | i);
  }
  std::sort(keys.begin(), keys.end());
  for (std::size_t k = 1; k < keys.size(); ++k)
    if (keys[k] >> 40 == keys[k - 1] >> 40) {
      const std::size_t first = keys[k - 1] & ((std::uint64_t{1} << 40) - 1), again = keys[k] & ((std::uint64_t{1} << 40) - 1);
      throw error("edges[" + std::to_string(again) + "] repeats edges[" + std::to_string(first) + "] (" +
                  std::to_string(d.edges[first].from) + " -> " + std::to_string(d.edges[first].to) +
                  "): give one edge per pair of stages");
    }
  // Every start and finish a policy computes is a sum of some of these times, so a finite total
  // keeps them finite (1e308 twice would overflow to inf and leave no operation that can finish).
  double per_microbatch = 0;
  for (const stage& s : d.stages) per_microbatch += s.forward + (d.training() ? s.backward : 0);
  for (const edge& e : d.edges) per_microbatch += e.time + (d.training() ? e.back() : 0);
  const double total = per_microbatch * static_cast<double>(d.microbatches);
  if (!(total <= std::numeric_limits<double>::max() / 4))
    throw error("the stages' and edges' times add up to " + meshcast::detail::number(total) + " over " +
                std::to_string(d.microbatches) + " microbatches, beyond what a double holds with room to schedule; " +
                "express them in a larger time unit");
  const index_t count = instruction_count(d);
  if (count > max_instructions)
    throw error("the pipeline has " + std::to_string(count) + " instructions (stages x passes x microbatches plus " +
                "two per transfer), more than the limit of " + std::to_string(max_instructions));
}

}  // namespace meshcast::pipeline

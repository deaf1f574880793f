// What a benchmark of <meshcast/benchmark.hpp> times, apart from how it is timed and reported:
// a job that runs once per iteration on every rank and counts the elements it delivered wrong.
// Needs neither MPI nor Google Benchmark, so that other transports (NCCL:
// <meshcast/benchmark_nccl.hpp>) build their jobs from it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../plan/plan.hpp"
#include "../model/schedule.hpp"

namespace meshcast {

namespace detail {
// Calls f(byte offset in the tile, global row-major index) for every element of `tile`, in order.
template <class F>
void for_each_index(const box& tile, const extents_value& shape, std::size_t eb, F&& f) {
  if (tile.empty()) return;
  index_t idx[max_rank];
  for (int d = 0; d < tile.rank; ++d) idx[d] = tile[d].lo;
  for (std::size_t at = 0;; at += eb) {
    std::uint64_t linear = 0;
    for (int d = 0; d < tile.rank; ++d) linear = linear * static_cast<std::uint64_t>(shape[d]) + static_cast<std::uint64_t>(idx[d]);
    f(at, linear);
    int d = tile.rank - 1;
    while (d >= 0 && ++idx[d] == tile[d].hi) idx[d] = tile[d].lo, --d;
    if (d < 0) return;
  }
}

// Byte b of an element holding `linear` in `eb` bytes, little-endian (0 past the eighth byte).
constexpr std::byte index_byte(std::uint64_t linear, std::size_t b) noexcept {
  return static_cast<std::byte>(b < 8 ? (linear >> (8 * b)) & 0xff : 0);
}

// The element's global row-major index, little-endian in `eb` bytes, for every element of `tile`.
inline void fill_with_index(const box& tile, const extents_value& shape, std::size_t eb, std::byte* out) {
  for_each_index(tile, shape, eb, [&](std::size_t at, std::uint64_t linear) {
    for (std::size_t b = 0; b < eb; ++b) out[at + b] = index_byte(linear, b);
  });
}

}  // namespace detail

/// What a benchmark times: `run` does the job once on every rank (collective); `clear` poisons
/// the outputs before the checked run; `wrong` counts this rank's wrong elements after it.
/// `bytes` is the tensor's size, `busiest_bytes` what the busiest rank receives from others,
/// `bound_s` the physical bound and `predicted_s` the model's prediction (0: none). `run_timed`,
/// where given, runs the job and returns its own measure of this rank's seconds (CUDA events on a
/// stream), used instead of the host clock around `run`. `label` is shown beside the result
/// (Google Benchmark's label: the mode and strategy that ran, say). `timeout_s` bounds the
/// session's own waits on the other ranks around each run (0: no bound). `acquire` and `release`,
/// where given, make and free what the job's runs need (its buffers): the session calls `acquire`
/// on every rank before a benchmark's first run (an MPI job's agree there), and `release` when it
/// moves on to the next and after the last, so that it holds one benchmark's buffers at a time
/// rather than every registered one's. The session releases nothing after a failed run.
struct timed_job {
  std::function<void()> run, clear, acquire, release;
  std::function<std::size_t()> wrong;
  std::function<double()> run_timed;
  double bytes = 0, busiest_bytes = 0, predicted_s = 0, bound_s = 0, timeout_s = 60;
  std::string label;
};

namespace detail {
// A rank's source and destination bytes for one tensor, the sources holding each element's index,
// for benchmarks that check what they deliver. The expected destination is worked out when
// checking rather than stored: a copy of it was a third of a benchmark's memory.
struct checked_buffers {
  std::vector<std::byte> in, out;
  std::size_t element_bytes;
  box destination;
  extents_value shape;
  checked_buffers(const plan& p, int rank, std::size_t source_elements, std::size_t destination_elements)
      : in(source_elements * static_cast<std::size_t>(p.element_bytes)),
        out(destination_elements * static_cast<std::size_t>(p.element_bytes)),
        element_bytes(static_cast<std::size_t>(p.element_bytes)),
        destination(p.destination_tile(rank)),
        shape(p.src.shape) {
    if (static_cast<std::size_t>(destination.volume()) != destination_elements)
      throw error("checked_buffers: the destination holds " + std::to_string(destination_elements) + " elements, its tile " +
                  std::to_string(destination.volume()));
    fill_with_index(p.source_tile(rank), shape, element_bytes, in.data());
  }
  // Every element poisoned so that it cannot read as right: its first byte is the complement of
  // the expected one (a constant matched the index of one element in 256 of 1-byte elements).
  void clear() {
    std::fill(out.begin(), out.end(), std::byte{0xa5});
    for_each_index(destination, shape, element_bytes, [&](std::size_t at, std::uint64_t linear) { out[at] = ~index_byte(linear, 0); });
  }
  std::size_t wrong() const {
    std::size_t n = 0;
    for_each_index(destination, shape, element_bytes, [&](std::size_t at, std::uint64_t linear) {
      for (std::size_t b = 0; b < element_bytes; ++b)
        if (out[at + b] != index_byte(linear, b)) {
          ++n;
          break;
        }
    });
    return n;
  }
};
}  // namespace detail

namespace detail {
// A reshard's counters from its plan and schedule: tensor bytes, what the busiest device takes in
// from other devices, the prediction and the physical bound.
inline void set_reshard_counters(timed_job& job, const plan& p, const schedule& s) {
  job.bytes = static_cast<double>(p.tensor_bytes());
  job.predicted_s = s.makespan_s;
  job.bound_s = s.physical_bound_s;
  job.label = std::string(to_string(s.mode)) + " " + s.strategy;
  std::vector<double> in_bytes(static_cast<std::size_t>(p.device_count), 0.0);
  for (const transfer& t : s.transfers)
    for (index_t d : t.receivers)
      if (d != t.sender) job.busiest_bytes = std::max(job.busiest_bytes, in_bytes[static_cast<std::size_t>(d)] += static_cast<double>(t.bytes));
}
}  // namespace detail

}  // namespace meshcast

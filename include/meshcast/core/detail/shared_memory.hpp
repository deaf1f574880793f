// Shards that share memory: a destination that overlaps a source, or another destination, is read
// after it was written or written twice, and the reshard ends with wrong elements and no error.
// Sources may share memory with each other (tied weights): they are only read.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace meshcast::detail {

/// One shard's bytes, for shared_memory_problem (a caller keeps a vector of them between runs, so
/// that a steady run allocates nothing).
struct shard_range {
  std::uintptr_t begin, end;
  bool written;
  std::size_t tensor;
};

/// Why tensor shards `in` and `out` (the first `in_bytes(k)` / `out_bytes(k)` bytes of each are
/// used) share memory where one of them is written, or nothing. O(n log n) in the tensors;
/// `scratch` holds the ranges.
template <class InBytes, class OutBytes>
std::string shared_memory_problem(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out,
                                  InBytes&& in_bytes, OutBytes&& out_bytes, std::vector<shard_range>& scratch) {
  std::vector<shard_range>& ranges = scratch;
  ranges.clear();
  auto add = [&](const std::byte* p, std::size_t bytes, bool written, std::size_t k) {
    if (bytes == 0) return;  // an empty shard holds no memory
    const auto begin = reinterpret_cast<std::uintptr_t>(p);
    ranges.push_back({begin, begin + bytes, written, k});
  };
  for (std::size_t k = 0; k < in.size(); ++k) add(in[k].data(), std::min(in[k].size(), static_cast<std::size_t>(in_bytes(k))), false, k);
  for (std::size_t k = 0; k < out.size(); ++k) add(out[k].data(), std::min(out[k].size(), static_cast<std::size_t>(out_bytes(k))), true, k);
  std::sort(ranges.begin(), ranges.end(), [](const shard_range& a, const shard_range& b) { return a.begin < b.begin; });
  const bool batch = in.size() > 1 || out.size() > 1;
  auto name = [&](const shard_range& r) {
    return std::string(r.written ? "the destination shard" : "the source shard") +
           (batch ? " of tensor " + std::to_string(r.tensor) : std::string());
  };
  // Sweeping by start: a range overlaps an earlier one exactly when it starts before the furthest
  // end so far; the furthest written and read ones are kept apart, as only pairs with a write count.
  const shard_range* written = nullptr;
  const shard_range* read = nullptr;
  for (const shard_range& r : ranges) {
    const shard_range* other = written && r.begin < written->end ? written : r.written && read && r.begin < read->end ? read : nullptr;
    if (other)
      return (other->written ? name(*other) : name(r)) + " shares memory with " + (other->written ? name(r) : name(*other)) +
             "; give every destination shard memory of its own";
    const shard_range*& furthest = r.written ? written : read;
    if (!furthest || r.end > furthest->end) furthest = &r;
  }
  return {};
}

}  // namespace meshcast::detail

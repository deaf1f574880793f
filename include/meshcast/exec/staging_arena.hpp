// Where a rank's message buffers live: one block of memory, allocated once, handed out in pieces.
// Under a staging cap that the run's buffers together exceed, pieces are taken and given back as
// steps start and complete (first fit); otherwise every step keeps its own piece for good.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>

namespace meshcast::detail {

/// First-fit allocation of byte ranges in [0, capacity). Taken ranges may be given back in any
/// order; nothing is allocated after construction beyond the list of taken ranges' capacity.
class staging_arena {
 public:
  explicit staging_arena(std::size_t capacity = 0) : capacity_(capacity) {}
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t held() const noexcept { return held_; }
  bool empty() const noexcept { return taken_.empty(); }

  /// The offset of `bytes` free bytes, now taken; nothing where no gap is that large.
  std::optional<std::size_t> take(std::size_t bytes) {
    std::size_t at = 0;
    auto it = taken_.begin();
    for (; it != taken_.end(); ++it) {
      if (it->first - at >= bytes) break;
      at = it->first + it->second;
    }
    if (it == taken_.end() && capacity_ - at < bytes) return std::nullopt;
    taken_.insert(it, {at, bytes});
    held_ += bytes;
    return at;
  }
  /// Gives back the range taken at `offset`.
  void give(std::size_t offset) {
    auto it = std::lower_bound(taken_.begin(), taken_.end(), std::pair<std::size_t, std::size_t>{offset, 0});
    if (it == taken_.end() || it->first != offset) return;
    held_ -= it->second;
    taken_.erase(it);
  }
  void clear() noexcept { taken_.clear(), held_ = 0; }
  void reserve(std::size_t ranges) { taken_.reserve(ranges); }

 private:
  std::size_t capacity_ = 0, held_ = 0;
  std::vector<std::pair<std::size_t, std::size_t>> taken_;  // (offset, bytes), by offset
};

}  // namespace meshcast::detail

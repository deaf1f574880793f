// Host memory: shards and message buffers in ordinary RAM, copied with memcpy. The memory policy
// of the MPI backend; the executor packs, unpacks and copies through it (exec/pack.hpp).
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>

namespace meshcast {

struct host_memory {
  /// A buffer that keeps its address when moved (requests point into it).
  struct buffer {
    std::unique_ptr<std::byte[]> bytes;
    std::byte* data() const noexcept { return bytes.get(); }
  };
  buffer allocate(std::size_t n) { return {std::make_unique_for_overwrite<std::byte[]>(n ? n : 1)}; }
  void copy(std::byte* to, const std::byte* from, std::size_t n) { std::memcpy(to, from, n); }
  /// `height` rows of `width` bytes, `from_pitch` and `to_pitch` bytes apart.
  void copy_2d(std::byte* to, std::size_t to_pitch, const std::byte* from, std::size_t from_pitch, std::size_t width,
               std::size_t height) {
    if (width == to_pitch && width == from_pitch) {
      std::memcpy(to, from, width * height);
      return;
    }
    for (std::size_t r = 0; r < height; ++r) std::memcpy(to + r * to_pitch, from + r * from_pitch, width);
  }
  void synchronize() noexcept {}
};

}  // namespace meshcast

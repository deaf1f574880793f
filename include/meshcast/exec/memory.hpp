// The memory-policy concept: where shards and message buffers live and how bytes are copied
// there. Executors pack, unpack and copy regions through it (exec/pack.hpp), so a backend only
// moves bytes between devices.
#pragma once

#include <concepts>
#include <cstddef>

namespace meshcast {

template <class M>
concept memory_policy = requires(M& m, std::byte* to, const std::byte* from, std::size_t n, typename M::buffer& b) {
  typename M::buffer;
  { m.allocate(n) } -> std::same_as<typename M::buffer>;
  { b.data() } -> std::convertible_to<std::byte*>;
  m.copy(to, from, n);
  m.copy_2d(to, n, from, n, n, n);  ///< height rows of width bytes at the given pitches
  m.synchronize();                  ///< every copy issued so far is complete when it returns
};

}  // namespace meshcast

// Device meshes: N-d grids of devices, numbered row-major over their coordinates.
#pragma once

#include <string>
#include <vector>

#include "extents.hpp"

namespace meshcast {

/// A device mesh whose shape is static (`mesh<2, 4>`), mixed (`mesh<dyn, 4>{3}`).
/// A fully static mesh is an empty type.
template <index_t... Es>
class mesh : public extents<Es...> {
  static_assert(sizeof...(Es) >= 1, "A mesh needs at least one axis.");
  static_assert(((Es == dyn || Es >= 1) && ...), "Every mesh axis must hold at least one device.");

 public:
  constexpr mesh() noexcept = default;
  template <class... Ints>
    requires(sizeof...(Ints) > 0)
  constexpr explicit mesh(Ints... dynamic_values) : extents<Es...>(dynamic_values...) {
    for (int i = 0; i < this->rank(); ++i)
      if (this->extent(i) < 1)
        throw error("mesh axis " + std::to_string(i) + " has size " + std::to_string(this->extent(i)) +
                    "; every mesh axis must hold at least one device");
  }
  constexpr index_t size() const noexcept { return this->product(); }
};

/// A mesh whose rank and sizes are known only at run time, built from a vector of axis sizes.
class dynamic_mesh : public dynamic_extents {
 public:
  constexpr dynamic_mesh() = default;
  constexpr dynamic_mesh(std::initializer_list<index_t> sizes) : dynamic_extents(sizes) { check(); }
  template <class Int>
  constexpr explicit dynamic_mesh(const std::vector<Int>& sizes) : dynamic_extents(sizes) { check(); }
  constexpr explicit dynamic_mesh(const dynamic_extents& e) : dynamic_extents(e) { check(); }
  constexpr index_t size() const noexcept { return this->product(); }

 private:
  constexpr void check() const {
    if (rank() == 0) throw error("a mesh needs at least one axis");
    for (int i = 0; i < rank(); ++i)
      if (extent(i) < 1)
        throw error("mesh axis " + std::to_string(i) + " has size " + std::to_string(extent(i)) +
                    "; every mesh axis must hold at least one device");
  }
};

/// Parses a mesh like "2x4"; the message of a failure names the text.
inline dynamic_mesh parse_mesh(const std::string& text) {
  try {
    return dynamic_mesh(parse_extents(text, "mesh"));
  } catch (const error& e) {
    throw error("mesh '" + text + "': " + e.what());
  }
}

/// Row-major coordinate of device `id` on a mesh with the given extents.
constexpr std::array<index_t, max_rank> mesh_coordinate(const extents_value& m, index_t id) noexcept {
  std::array<index_t, max_rank> c{};
  for (int i = m.rank - 1; i >= 0; --i) {
    c[i] = id % m[i];
    id /= m[i];
  }
  return c;
}

template <class M>
concept mesh_like = extents_like<M> && requires(const M& m) {
  { m.size() } -> std::convertible_to<index_t>;
};

}  // namespace meshcast

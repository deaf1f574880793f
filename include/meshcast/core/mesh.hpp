// Device meshes: N-d grids of devices, numbered row-major over their coordinates.
#pragma once

#include <string>
#include <vector>

#include "extents.hpp"

namespace meshcast {

namespace detail {
/// Every axis holds a device and the mesh holds at most `max_devices`; the message names the mesh.
constexpr void check_mesh(const extents_value& m) {
  if (m.rank == 0) throw error("a mesh needs at least one axis");
  index_t n = 1;
  for (int i = 0; i < m.rank; ++i) {
    if (m[i] < 1)
      throw error("mesh '" + m.to_string() + "' has size " + std::to_string(m[i]) + " on axis " + std::to_string(i) +
                  "; every mesh axis must hold at least one device");
    if (!detail::product_fits(n, m[i], n) || n > max_devices)
      throw error("mesh '" + m.to_string() + "' has more than meshcast::max_devices (" + std::to_string(max_devices) +
                  ") devices");
  }
}
}  // namespace detail

/// A device mesh whose shape is static (`mesh<2, 4>`), mixed (`mesh<dyn, 4>{3}`).
/// A fully static mesh is an empty type.
template <index_t... Es>
class mesh : public extents<Es...> {
  static_assert(sizeof...(Es) >= 1, "A mesh needs at least one axis.");
  static_assert(((Es == dyn || Es >= 1) && ...), "Every mesh axis must hold at least one device.");
  static_assert(((Es == dyn || Es <= max_devices) && ...) && [] {
    index_t n = 1;
    for (index_t e : {index_t{1}, Es...})
      if (e != dyn && (n *= e) > max_devices) return false;
    return true;
  }(), "The mesh has more devices than meshcast::max_devices.");

 public:
  constexpr mesh() noexcept = default;
  template <class... Ints>
    requires(sizeof...(Ints) > 0)
  constexpr explicit mesh(Ints... dynamic_values) : extents<Es...>(dynamic_values...) {
    detail::check_mesh(to_value(*this));
  }
  constexpr index_t size() const noexcept { return this->product(); }  // checked on construction
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
  constexpr void check() const { detail::check_mesh(to_value(*this)); }
};

/// Parses a mesh like "2x4"; the message of a failure names the text.
inline dynamic_mesh parse_mesh(const std::string& text) { return dynamic_mesh(parse_extents(text, "mesh")); }

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

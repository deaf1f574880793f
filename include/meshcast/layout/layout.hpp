// Layouts: a tensor shape laid over a mesh by a spec; gives every device its tile.
#pragma once

#include <string>
#include <type_traits>

#include "../core/box.hpp"
#include "chunk.hpp"
#include "../core/mesh.hpp"
#include "../core/shape.hpp"
#include "../core/spec.hpp"

namespace meshcast {

namespace detail {
template <class T>
concept has_static_rank = requires { std::integral_constant<int, T::rank()>{}; };
}  // namespace detail

/// A layout in value form: mesh sizes, spec and tensor shape, already validated.
struct layout_value {
  extents_value mesh;
  spec_value spec;
  extents_value shape;

  // Not noexcept: the product of a hand-built, unvalidated mesh throws on overflow (was terminate).
  constexpr index_t device_count() const { return mesh.product(); }

  /// Number of chunks dim d is split into (1 when replicated).
  constexpr index_t chunk_count(int d) const noexcept {
    index_t k = 1;
    for (int a = 0; a < spec.dims[d].axis_count; ++a) k *= mesh[spec.dims[d].axes[a]];
    return k;
  }
  /// Chunk index along dim d of the device at mesh coordinate c: row-major over the listed axes.
  constexpr index_t chunk_index(int d, const std::array<index_t, max_rank>& c) const noexcept {
    index_t j = 0;
    for (int a = 0; a < spec.dims[d].axis_count; ++a) j = j * mesh[spec.dims[d].axes[a]] + c[spec.dims[d].axes[a]];
    return j;
  }
  /// The tile of the device with row-major mesh index `device`.
  constexpr box tile(index_t device) const noexcept {
    auto c = mesh_coordinate(mesh, device);
    box b;
    b.rank = shape.rank;
    for (int d = 0; d < shape.rank; ++d) b.dims[d] = chunk_range(shape[d], chunk_count(d), chunk_index(d, c));
    return b;
  }
  /// The whole tensor as a box.
  constexpr box whole() const noexcept {
    box b;
    b.rank = shape.rank;
    for (int d = 0; d < shape.rank; ++d) b.dims[d] = {0, shape[d]};
    return b;
  }
  std::string to_string() const {
    return "shape " + shape.to_string() + " on mesh " + mesh.to_string() + " as " + spec.to_string();
  }
};

/// Checks a layout given in value form; the message names the offending input.
constexpr void validate(const layout_value& l) {
  if (l.mesh.rank > max_rank || l.shape.rank > max_rank || l.spec.rank > max_rank || l.mesh.rank < 0 ||
      l.shape.rank < 0 || l.spec.rank < 0)
    throw error("a layout's mesh, spec and shape may have at most meshcast::max_rank entries");
  detail::check_mesh(l.mesh);
  if (l.shape.rank < 1) throw error("a tensor shape needs at least one dim");
  for (int d = 0; d < l.shape.rank; ++d)
    if (l.shape[d] < 0) throw error("shape " + l.shape.to_string() + " has a negative size");
  index_t volume = 1;
  for (int d = 0; d < l.shape.rank; ++d)
    if (!detail::product_fits(volume, l.shape[d], volume))
      throw error("shape " + l.shape.to_string() + " has more elements than fit in 64 bits");
  detail::check_spec_bounds(l.spec);
  if (l.spec.rank != l.shape.rank)
    throw error("spec '" + l.spec.to_string() + "' has " + std::to_string(l.spec.rank) + " entries but shape '" +
                l.shape.to_string() + "' has " + std::to_string(l.shape.rank) + " dims; give one R or S per dim");
  if (l.spec.max_axis() >= l.mesh.rank)
    throw error("spec '" + l.spec.to_string() + "' uses mesh axis " + std::to_string(l.spec.max_axis()) +
                " but mesh '" + l.mesh.to_string() + "' has only " + std::to_string(l.mesh.rank) + " axes");
  if (const char* problem = detail::check_spec(l.spec))
    throw error("spec '" + l.spec.to_string() + "': " + problem);
}

/// A tensor of shape `Shape` laid over mesh `Mesh` by spec `Spec`. Each of the three may be static
/// or dynamic; whatever can be checked at compile time is.
template <mesh_like Mesh, spec_like Spec, extents_like Shape>
class layout {
  static constexpr bool spec_and_mesh_static = Spec::is_static() && detail::has_static_rank<Mesh>;
  static constexpr bool spec_and_shape_static = Spec::is_static() && detail::has_static_rank<Shape>;
  static_assert(!spec_and_mesh_static || [] {
    if constexpr (spec_and_mesh_static) return Spec::max_axis() < Mesh::rank();
    else return true;
  }(), "The spec shards over a mesh axis that the mesh does not have: every axis in S<...> must be less than the mesh rank.");
  static_assert(!spec_and_shape_static || [] {
    if constexpr (spec_and_shape_static) return Spec::rank() == Shape::rank();
    else return true;
  }(), "The spec's number of entries differs from the tensor's rank: give exactly one R or S<...> per tensor dim.");

 public:
  using mesh_type = Mesh;
  using spec_type = Spec;
  using shape_type = Shape;

  // Only a layout known whole at compile time is valid unconstructed: a default mesh<dyn, 4> has an
  // axis of 0 devices, and tile() divided by it (found by review).
  constexpr layout() requires(std::is_default_constructible_v<Mesh> && Mesh::is_static() && Spec::is_static() &&
                              std::is_default_constructible_v<Shape> && Shape::is_static()) = default;
  constexpr layout(Mesh m, Spec s, Shape t) : mesh_(m), spec_(s), shape_(t) { validate(value()); }

  constexpr const Mesh& mesh() const noexcept { return mesh_; }
  constexpr const Spec& spec() const noexcept { return spec_; }
  constexpr const Shape& shape() const noexcept { return shape_; }
  constexpr layout_value value() const noexcept { return {to_value(mesh_), spec_.value(), to_value(shape_)}; }
  constexpr box tile(index_t device) const noexcept { return value().tile(device); }

 private:
  [[no_unique_address]] Mesh mesh_{};
  [[no_unique_address]] Spec spec_{};
  [[no_unique_address]] Shape shape_{};
};

template <class M, class Sp, class Sh>
layout(M, Sp, Sh) -> layout<M, Sp, Sh>;

/// The fully run-time layout type, as the command-line tools build it.
using dynamic_layout = layout<dynamic_mesh, dynamic_spec, dynamic_shape>;

template <class L>
concept layout_like = requires(const L& l) {
  { l.value() } -> std::convertible_to<layout_value>;
};

namespace detail {
// Whether two layout types' shapes can be equal: ranks and every extent known at compile time on
// both sides must agree (what only the run time knows is checked then).
template <class Src, class Dst>
constexpr bool static_shapes_agree() {
  if constexpr (requires { typename Src::shape_type; typename Dst::shape_type; }) {
    using A = typename Src::shape_type;
    using B = typename Dst::shape_type;
    if constexpr (has_static_rank<A> && has_static_rank<B>) {
      if (A::rank() != B::rank()) return false;
      for (int i = 0; i < A::rank(); ++i)
        if (A::static_extent(i) != dyn && B::static_extent(i) != dyn && A::static_extent(i) != B::static_extent(i))
          return false;
    }
  }
  return true;
}
}  // namespace detail

}  // namespace meshcast

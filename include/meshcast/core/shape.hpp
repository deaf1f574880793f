// Tensor shapes: static (`shape<1024, 512>`), mixed (`shape<dyn, 512>{n}`) or dynamic.
#pragma once

#include <string>
#include <vector>

#include "extents.hpp"

namespace meshcast {

/// The global shape of the tensor being resharded. Zero-length dims are allowed.
template <index_t... Ns>
class shape : public extents<Ns...> {
  static_assert(sizeof...(Ns) >= 1, "A tensor shape needs at least one dim.");

 public:
  using extents<Ns...>::extents;
};

class dynamic_shape : public dynamic_extents {
 public:
  using dynamic_extents::dynamic_extents;
  constexpr explicit dynamic_shape(const dynamic_extents& e) : dynamic_extents(e) {}
};

inline dynamic_shape parse_shape(const std::string& text) { return dynamic_shape(parse_extents(text, "shape")); }

}  // namespace meshcast

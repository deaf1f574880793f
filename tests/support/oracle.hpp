// Independent statements of where elements live, for checking plans and schedules.
#pragma once

#include <vector>

#include <meshcast/meshcast.hpp>

namespace meshcast::testing {

// Independent statement of the chunk rule: does the device at mesh index `dev` hold element `e`?
inline bool holds(const layout_value& l, index_t dev, const std::vector<index_t>& e) {
  std::vector<index_t> coord(l.mesh.rank);
  for (int a = l.mesh.rank - 1; a >= 0; --a) coord[a] = dev % l.mesh[a], dev /= l.mesh[a];
  for (int d = 0; d < l.shape.rank; ++d) {
    index_t k = 1, j = 0;
    for (int x = 0; x < l.spec.dims[d].axis_count; ++x) {
      int a = l.spec.dims[d].axes[x];
      k *= l.mesh[a];
      j = j * l.mesh[a] + coord[a];
    }
    index_t q = (l.shape[d] + k - 1) / k;
    if (e[d] / q != j) return false;
  }
  return true;
}

// Calls f(element) for every element of a box, row-major.
template <class F>
void for_each_element(const box& b, F&& f) {
  if (b.empty()) return;
  std::vector<index_t> e(b.rank);
  for (int d = 0; d < b.rank; ++d) e[d] = b[d].lo;
  while (true) {
    f(e);
    int d = b.rank - 1;
    while (d >= 0 && ++e[d] == b[d].hi) e[d] = b[d].lo, --d;
    if (d < 0) return;
  }
}

inline index_t linear(const extents_value& shape, const std::vector<index_t>& e) {
  index_t x = 0;
  for (int d = 0; d < shape.rank; ++d) x = x * shape[d] + e[d];
  return x;
}

}  // namespace meshcast::testing

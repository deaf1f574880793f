// Specs of whole tensors on the logical mesh, as automatic sharding uses them: canonical form
// (mesh axes of size 1 dropped, since splitting over one device changes nothing), local sizes,
// and the enumeration of every spec a tensor may take.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "../core/spec.hpp"
#include "checked.hpp"
#include "mesh_model.hpp"

namespace meshcast::autoshard {

/// Axes listed per dim, as a plain list (the form the enumerations build).
using axis_lists = std::vector<std::vector<int>>;

inline spec_value spec_of_lists(const axis_lists& l) {
  spec_value s;
  s.rank = static_cast<int>(l.size());
  for (int d = 0; d < s.rank; ++d) {
    s.dims[d].axis_count = static_cast<int>(l[d].size());
    for (std::size_t k = 0; k < l[d].size(); ++k) s.dims[d].axes[k] = l[d][k];
  }
  return s;
}

/// The spec with every mesh axis of size 1 removed.
inline spec_value canonical(const spec_value& s, const mesh_model& m) {
  spec_value c;
  c.rank = s.rank;
  for (int d = 0; d < s.rank; ++d)
    for (int k = 0; k < s.dims[d].axis_count; ++k) {
      const int a = s.dims[d].axes[k];
      if (a < m.rank() && m.sizes[a] > 1) c.dims[d].axes[c.dims[d].axis_count++] = a;
    }
  return c;
}

/// Throws naming `what` when the spec uses a mesh axis the mesh does not have or its rank differs.
inline void check_spec_on_mesh(const spec_value& s, std::size_t rank, const mesh_model& m, const std::string& what) {
  if (static_cast<std::size_t>(s.rank) != rank)
    throw error(what + ": spec '" + s.to_string() + "' has " + std::to_string(s.rank) + " entries but the tensor has " +
                std::to_string(rank) + " dims");
  if (s.max_axis() >= m.rank())
    throw error(what + ": spec '" + s.to_string() + "' uses mesh axis " + std::to_string(s.max_axis()) +
                " but the mesh has " + std::to_string(m.rank()) + " axes");
}

/// Number of shards of dim d.
inline index_t shards(const spec_value& s, int d, const mesh_model& m) {
  index_t k = 1;
  for (int i = 0; i < s.dims[d].axis_count; ++i) k *= m.sizes[s.dims[d].axes[i]];
  return k;
}

/// Bytes of the largest shard a device holds (chunk rule: ceil(n / k) along each split dim).
inline index_t local_bytes(const std::vector<index_t>& shape, const spec_value& s, const mesh_model& m,
                           index_t element_bytes) {
  index_t b = element_bytes;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const index_t k = shards(s, static_cast<int>(d), m);
    b = checked_mul(b, (shape[d] + k - 1) / k, "local shard bytes");
  }
  return b;
}

/// Mesh axes that can split anything (size above 1), ascending.
inline std::vector<int> usable_axes(const mesh_model& m) {
  std::vector<int> a;
  for (int i = 0; i < m.rank(); ++i)
    if (m.sizes[i] > 1) a.push_back(i);
  return a;
}

/// Every assignment of the usable axes to the `extent.size()` slots (each axis to one slot, in
/// every order, or to none) such that slot d holds at most extent[d] shards and only slots with
/// allowed[d] take axes. Slot lists are appended after `base` (whose axes are not reassigned).
inline std::vector<axis_lists> assignments(const std::vector<int>& axes, const mesh_model& m,
                                           const std::vector<index_t>& extent, const std::vector<char>& allowed,
                                           const axis_lists& base) {
  std::vector<axis_lists> cur{base};
  for (int a : axes) {
    std::vector<axis_lists> next;
    for (const axis_lists& l : cur) {
      next.push_back(l);  // axis a unused
      for (std::size_t d = 0; d < l.size(); ++d) {
        if (!allowed[d]) continue;
        index_t k = m.sizes[a];
        for (int b : l[d]) k *= m.sizes[b];
        if (k > extent[d]) continue;
        // Insert a at every position after base[d] (every order of the added axes, once each).
        for (std::size_t pos = base[d].size(); pos <= l[d].size(); ++pos) {
          axis_lists n = l;
          n[d].insert(n[d].begin() + static_cast<std::ptrdiff_t>(pos), a);
          next.push_back(std::move(n));
        }
      }
    }
    cur = std::move(next);
  }
  return cur;
}

/// Every canonical spec a tensor of this shape may take (no dim split into more shards than it has
/// elements).
inline std::vector<spec_value> tensor_specs(const std::vector<index_t>& shape, const mesh_model& m) {
  std::vector<spec_value> out;
  for (const axis_lists& l : assignments(usable_axes(m), m, shape, std::vector<char>(shape.size(), 1),
                                         axis_lists(shape.size())))
    out.push_back(spec_of_lists(l));
  return out;
}

}  // namespace meshcast::autoshard

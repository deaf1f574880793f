// Random meshes, specs and shapes for the law and oracle tests.
#pragma once

#include <algorithm>
#include <random>
#include <vector>

#include <meshcast/meshcast.hpp>

namespace meshcast::testing {

struct random_layout_source {
  std::mt19937_64 rng;
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

  dynamic_mesh random_mesh() {
    std::vector<index_t> sizes(uniform(1, 3));
    for (auto& s : sizes) s = uniform(1, 4);
    return dynamic_mesh(sizes);
  }
  // Each mesh axis goes to at most one dim, in random order within the dim.
  spec_value random_spec(int mesh_rank, int tensor_rank) {
    spec_value v;
    v.rank = tensor_rank;
    std::vector<int> axes(mesh_rank);
    for (int a = 0; a < mesh_rank; ++a) axes[a] = a;
    std::shuffle(axes.begin(), axes.end(), rng);
    for (int a : axes) {
      int d = uniform(-1, tensor_rank - 1);
      if (d >= 0) v.dims[d].axes[v.dims[d].axis_count++] = a;
    }
    return v;
  }
  dynamic_shape random_shape(int rank) {
    std::vector<index_t> n(rank);
    for (auto& x : n) x = uniform(0, 5) == 0 ? uniform(0, 2) : uniform(1, 13);  // tiny and uneven dims
    return dynamic_shape(n);
  }
};

}  // namespace meshcast::testing

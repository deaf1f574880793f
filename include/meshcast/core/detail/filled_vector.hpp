// A vector of n copies of a value, built element by element.
#pragma once

#include <cstddef>
#include <vector>

namespace meshcast::detail {

// libstdc++'s sized constructor and resize() fill through a path clang 14 rejects in constant
// evaluation; push_back works on both compilers, so constexpr code builds vectors this way.
template <class T>
constexpr std::vector<T> filled_vector(std::size_t n, const T& value) {
  std::vector<T> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) v.push_back(value);
  return v;
}

}  // namespace meshcast::detail

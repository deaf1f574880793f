// Sharding specs: one entry per tensor dim, `R` (replicated) or `S<a, b, ...>` (split over mesh
// axes a, b, ...; first listed axis major). A mesh axis used by no dim replicates the tensor.
//
// Static form: `spec<S<0>, R>`; run-time form: `dynamic_spec("S0,R")`. Both reduce to a
// `spec_value`, which is what layouts and plans work with.
#pragma once

#include <array>
#include <concepts>
#include <string>
#include <type_traits>
#include <utility>

#include "config.hpp"
#include "error.hpp"

namespace meshcast {

/// Replicated tensor dim.
struct R {};

/// Tensor dim split over the listed mesh axes (row-major over them, first axis major).
template <int... Axes>
struct S {
  static_assert(sizeof...(Axes) >= 1, "S<...> needs at least one mesh axis: write R for a replicated dim.");
  static_assert(((Axes >= 0 && Axes < max_rank) && ...), "A mesh axis in S<...> must be between 0 and max_rank - 1.");
};

/// One tensor dim of a spec in value form.
struct dim_sharding {
  int axis_count = 0;  // 0 means replicated
  std::array<int, max_rank> axes{};
  constexpr bool replicated() const noexcept { return axis_count == 0; }
  friend constexpr bool operator==(const dim_sharding&, const dim_sharding&) = default;
};

/// A spec in value form: what the algorithms use, whatever form the user wrote.
struct spec_value {
  int rank = 0;
  std::array<dim_sharding, max_rank> dims{};

  /// "S0,R" style text, the inverse of `dynamic_spec(text)`.
  std::string to_string() const {
    std::string s;
    for (int d = 0; d < rank; ++d) {
      if (d) s += ',';
      if (dims[d].replicated()) {
        s += 'R';
      } else {
        s += 'S';
        for (int k = 0; k < dims[d].axis_count; ++k) s += static_cast<char>('0' + dims[d].axes[k]);
      }
    }
    return s;
  }
  /// Largest mesh axis any dim uses, or -1 when every dim is replicated.
  constexpr int max_axis() const noexcept {
    int m = -1;
    for (int d = 0; d < rank; ++d)
      for (int k = 0; k < dims[d].axis_count; ++k) m = dims[d].axes[k] > m ? dims[d].axes[k] : m;
    return m;
  }
  friend constexpr bool operator==(const spec_value&, const spec_value&) = default;
};

namespace detail {
template <class T>
struct dim_traits {
  static constexpr bool valid = false;
};
template <>
struct dim_traits<R> {
  static constexpr bool valid = true;
  static constexpr dim_sharding value{};
};
template <int... Axes>
struct dim_traits<S<Axes...>> {
  static constexpr bool valid = sizeof(S<Axes...>) > 0;  // completes S, so its own checks fire
  static constexpr dim_sharding value{static_cast<int>(sizeof...(Axes)), {Axes...}};
};

template <int... Axes>
constexpr bool axes_distinct() {
  constexpr std::array<int, sizeof...(Axes)> a{Axes...};
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = i + 1; j < a.size(); ++j)
      if (a[i] == a[j]) return false;
  return true;
}
template <class Seq, class... Dims>
struct all_axes;
template <int... Acc>
struct all_axes<std::integer_sequence<int, Acc...>> {
  static constexpr bool distinct = axes_distinct<Acc...>();
};
template <int... Acc, class... Rest>
struct all_axes<std::integer_sequence<int, Acc...>, R, Rest...> : all_axes<std::integer_sequence<int, Acc...>, Rest...> {};
template <int... Acc, int... Axes, class... Rest>
struct all_axes<std::integer_sequence<int, Acc...>, S<Axes...>, Rest...>
    : all_axes<std::integer_sequence<int, Acc..., Axes...>, Rest...> {};

/// Throws unless every count and mesh axis of `s` lies inside spec_value's fixed arrays: a spec
/// given in value form is checked before anything indexes by its axes.
constexpr void check_spec_bounds(const spec_value& s) {
  if (s.rank < 0 || s.rank > max_rank)
    throw error("a spec has " + std::to_string(s.rank) + " entries; it may have 0 to meshcast::max_rank");
  for (int d = 0; d < s.rank; ++d) {
    if (s.dims[d].axis_count < 0 || s.dims[d].axis_count > max_rank)
      throw error("spec entry " + std::to_string(d) + " lists a bad number of mesh axes (" +
                  std::to_string(s.dims[d].axis_count) + ")");
    for (int k = 0; k < s.dims[d].axis_count; ++k)
      if (s.dims[d].axes[k] < 0 || s.dims[d].axes[k] >= max_rank)
        throw error("spec entry " + std::to_string(d) + " names mesh axis " + std::to_string(s.dims[d].axes[k]) +
                    ", outside 0..max_rank-1");
  }
}

/// Checks that a spec within bounds (check_spec_bounds) is well formed and returns the first
/// problem as a sentence (nullptr if none).
constexpr const char* check_spec(const spec_value& s) {
  bool used[max_rank] = {};
  for (int d = 0; d < s.rank; ++d)
    for (int k = 0; k < s.dims[d].axis_count; ++k) {
      int a = s.dims[d].axes[k];
      if (used[a]) return "one mesh axis is used twice";
      used[a] = true;
    }
  return nullptr;
}
}  // namespace detail

/// A sharding spec known at compile time, e.g. `spec<S<0>, R>` or Alpa's `S01` as `spec<R, S<0, 1>>`.
template <class... Dims>
struct spec {
  static_assert((detail::dim_traits<Dims>::valid && ...),
                "Each entry of a spec must be meshcast::R or meshcast::S<axes...>.");
  static_assert(sizeof...(Dims) >= 1 && sizeof...(Dims) <= max_rank,
                "A spec needs between 1 and max_rank entries, one per tensor dim.");
  static_assert(detail::all_axes<std::integer_sequence<int>, Dims...>::distinct,
                "One mesh axis is used by two tensor dims (or twice in one S<...>); each mesh axis may shard at most one dim.");

  static constexpr bool is_static() noexcept { return true; }
  static constexpr int rank() noexcept { return static_cast<int>(sizeof...(Dims)); }
  /// The highest mesh axis the spec uses (-1 if none): layouts compare it with the mesh rank.
  static constexpr int max_axis() noexcept { return value().max_axis(); }
  static constexpr spec_value value() noexcept {
    spec_value v;
    v.rank = rank();
    int d = 0;
    ((v.dims[d++] = detail::dim_traits<Dims>::value), ...);
    return v;
  }
};

/// A sharding spec parsed at run time from comma-separated tokens: `R` or `S` followed by mesh axis
/// digits (`S0,R`, `R,S01`, `S1,S0`). Spaces around tokens are ignored.
class dynamic_spec {
 public:
  constexpr dynamic_spec() = default;
  explicit dynamic_spec(const std::string& text) : value_(parse(text)) {}
  explicit dynamic_spec(const char* text) : dynamic_spec(std::string(text)) {}
  constexpr explicit dynamic_spec(const spec_value& v) : value_(v) {
    detail::check_spec_bounds(v);
    if (const char* problem = detail::check_spec(v)) throw error(std::string("spec ") + problem);
  }

  static constexpr bool is_static() noexcept { return false; }
  constexpr int rank() const noexcept { return value_.rank; }
  constexpr const spec_value& value() const noexcept { return value_; }
  std::string to_string() const { return value_.to_string(); }

 private:
  static spec_value parse(const std::string& text) {
    spec_value v;
    auto bad = [&](const std::string& why) -> error { return error("spec '" + detail::printable(text) + "': " + why); };
    std::size_t pos = 0;
    int owner[max_rank];
    for (int& o : owner) o = -1;
    while (true) {
      std::size_t next = text.find(',', pos);
      std::string token = text.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
      auto first = token.find_first_not_of(' ');
      auto last = token.find_last_not_of(' ');
      token = first == std::string::npos ? std::string() : token.substr(first, last - first + 1);
      if (v.rank == max_rank) throw bad("more than " + std::to_string(max_rank) + " entries");
      dim_sharding& dim = v.dims[v.rank];
      if (token == "R") {
        // replicated: nothing to record
      } else if (token.size() >= 2 && token[0] == 'S' &&
                 token.find_first_not_of("0123456789", 1) == std::string::npos) {
        for (std::size_t k = 1; k < token.size(); ++k) {
          int axis = token[k] - '0';
          if (axis >= max_rank)
            throw bad("token '" + detail::printable(token) + "' names mesh axis " + std::to_string(axis) + ", beyond max_rank");
          if (owner[axis] == v.rank)
            throw bad("token '" + detail::printable(token) + "' lists mesh axis " + std::to_string(axis) + " twice");
          if (owner[axis] >= 0)
            throw bad("mesh axis " + std::to_string(axis) + " is used by dims " + std::to_string(owner[axis]) +
                      " and " + std::to_string(v.rank) + "; each mesh axis may shard at most one dim");
          owner[axis] = v.rank;
          dim.axes[dim.axis_count++] = axis;
        }
      } else {
        throw bad("token '" + detail::printable(token) + "' is not R or S followed by mesh axis digits (e.g. S0, S01)");
      }
      ++v.rank;
      if (next == std::string::npos) break;
      pos = next + 1;
    }
    return v;
  }
  spec_value value_{};
};

template <class T>
concept spec_like = requires(const T& s) {
  { s.value() } -> std::convertible_to<spec_value>;
  { T::is_static() } -> std::convertible_to<bool>;
};

}  // namespace meshcast

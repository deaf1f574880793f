// Mixed static/dynamic extents, the common base of meshes and tensor shapes.
//
// `extents<2, dyn, 4>` stores only the run-time extents (here one integer); a fully static
// `extents<2, 4>` is an empty type. `dynamic_extents` has a run-time rank as well.
#pragma once

#include <array>
#include <concepts>
#include <type_traits>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "config.hpp"
#include "detail/checked.hpp"
#include "error.hpp"

namespace meshcast {

namespace detail {
template <index_t... Es>
inline constexpr int dynamic_count = ((Es == dyn ? 1 : 0) + ... + 0);

// Position of extent `i` among the run-time extents.
template <index_t... Es>
constexpr int dynamic_index(int i) {
  constexpr std::array<index_t, sizeof...(Es)> all{Es...};
  int n = 0;
  for (int k = 0; k < i; ++k) n += all[k] == dyn ? 1 : 0;
  return n;
}

inline std::string describe_extents(std::span<const index_t> values) {
  std::string s;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(values[i]);
  }
  return s;
}

// Whether the product of the static extents fits in index_t (dyn entries count as 1).
template <index_t... Es>
constexpr bool static_product_fits() {
  index_t p = 1;
  for (index_t e : {index_t{1}, Es...})
    if (e != dyn && !detail::product_fits(p, e, p)) return false;
  return true;
}

// A run-time extent given as any integer type, checked before it becomes an index_t: a negative
// value, or an unsigned one past 2^63 - 1, is an error naming the value the caller passed.
template <std::integral Int>
constexpr index_t extent_from(Int v) {
  if constexpr (std::is_signed_v<Int>) {
    if (v < 0) throw error("extent " + std::to_string(v) + " is negative");
  } else if constexpr (sizeof(Int) >= sizeof(index_t)) {
    if (v > static_cast<Int>(std::numeric_limits<index_t>::max()))
      throw error("extent " + std::to_string(v) + " does not fit in 64 bits");
  }
  return static_cast<index_t>(v);
}

template <int N>
struct dynamic_storage {
  std::array<index_t, N> values{};
};
template <>
struct dynamic_storage<0> {};  // lets a fully static extents be empty
}  // namespace detail

/// Extents with a rank fixed at compile time; each extent is a number or `dyn`.
template <index_t... Es>
class extents : private detail::dynamic_storage<detail::dynamic_count<Es...>> {
  static_assert(((Es == dyn || Es >= 0) && ...), "An extent must be non-negative or meshcast::dyn.");
  static_assert(sizeof...(Es) <= max_rank, "An extents type may have at most meshcast::max_rank entries.");
  static_assert(detail::static_product_fits<Es...>(), "The product of the extents does not fit in 64 bits.");
  using storage = detail::dynamic_storage<detail::dynamic_count<Es...>>;

 public:
  static constexpr int rank() noexcept { return static_cast<int>(sizeof...(Es)); }
  static constexpr int rank_dynamic() noexcept { return detail::dynamic_count<Es...>; }
  /// The compile-time extent of axis `i`, or `dyn`.
  static constexpr index_t static_extent(int i) noexcept {
    constexpr std::array<index_t, sizeof...(Es)> all{Es...};
    return all[i];
  }
  static constexpr bool is_static() noexcept { return rank_dynamic() == 0; }

  constexpr extents() noexcept = default;

  /// One value per `dyn` extent, in order: integers only, so that 2.9 is not silently 2.
  template <std::integral... Ints>
    requires(sizeof...(Ints) == detail::dynamic_count<Es...> && sizeof...(Ints) > 0)
  constexpr explicit extents(Ints... dynamic_values) : storage{{detail::extent_from(dynamic_values)...}} {
    product();  // throws when the product does not fit
  }
  /// Anything but integers is refused with a sentence, not dropped from overload resolution.
  template <class... Args>
    requires(sizeof...(Args) == detail::dynamic_count<Es...> && sizeof...(Args) > 0 && !(std::integral<Args> && ...))
  constexpr explicit extents(Args...) {
    static_assert((std::integral<Args> && ...),
                  "A run-time extent must be given as an integer: a real such as 2.9 would be cut to 2.");
  }

  constexpr index_t extent(int i) const noexcept {
    if constexpr (rank_dynamic() == 0) {
      return static_extent(i);
    } else {
      index_t s = static_extent(i);
      return s != dyn ? s : this->values[detail::dynamic_index<Es...>(i)];
    }
  }
  /// The product of the extents; throws when it does not fit in 64 bits.
  constexpr index_t product() const {
    index_t p = 1;
    for (int i = 0; i < rank(); ++i) p = detail::checked_mul(p, extent(i), "the product of extents");
    return p;
  }
};

/// Extents whose rank is known only at run time (e.g. parsed from a command line).
class dynamic_extents {
 public:
  constexpr dynamic_extents() noexcept = default;
  constexpr dynamic_extents(std::initializer_list<index_t> values) { assign(values.begin(), values.size()); }
  template <class Int>
    requires std::is_integral_v<Int>
  constexpr explicit dynamic_extents(const std::vector<Int>& values) {
    assign(values.data(), values.size());
  }

  constexpr int rank() const noexcept { return rank_; }
  static constexpr int rank_dynamic() noexcept { return dyn_rank; }
  static constexpr index_t static_extent(int) noexcept { return dyn; }
  static constexpr bool is_static() noexcept { return false; }
  constexpr index_t extent(int i) const noexcept { return values_[i]; }
  /// The product of the extents (checked when the extents were set: it fits in 64 bits).
  constexpr index_t product() const noexcept {
    index_t p = 1;
    for (int i = 0; i < rank_; ++i) p *= values_[i];
    return p;
  }

 private:
  static constexpr int dyn_rank = -1;  // "every extent, and the rank, are dynamic"
  template <class Int>
  constexpr void assign(const Int* v, std::size_t n) {
    if (n > static_cast<std::size_t>(max_rank))
      throw error("rank " + std::to_string(n) + " exceeds meshcast::max_rank (" + std::to_string(max_rank) + ")");
    rank_ = static_cast<int>(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (v[i] < 0) throw error("extent " + std::to_string(v[i]) + " is negative");
      if (!std::in_range<index_t>(v[i])) throw error("extent " + std::to_string(v[i]) + " does not fit in 64 bits");
      values_[i] = static_cast<index_t>(v[i]);
    }
    index_t p = 1;
    for (int i = 0; i < rank_; ++i)
      if (!detail::product_fits(p, values_[i], p))
        throw error("extents " + detail::describe_extents({values_.data(), n}) + " have a product that does not fit in 64 bits");
  }
  int rank_ = 0;
  std::array<index_t, max_rank> values_{};
};

/// Anything with `rank()` and `extent(i)`: the static, mixed and dynamic extents above.
template <class E>
concept extents_like = requires(const E& e, int i) {
  { e.rank() } -> std::convertible_to<int>;
  { e.extent(i) } -> std::convertible_to<index_t>;
  { E::is_static() } -> std::convertible_to<bool>;
};

/// Copies any extents into a plain array (the form the run-time algorithms use).
struct extents_value {
  int rank = 0;
  std::array<index_t, max_rank> values{};
  constexpr index_t operator[](int i) const noexcept { return values[i]; }
  /// The product of the extents; throws when it does not fit in 64 bits.
  constexpr index_t product() const {
    index_t p = 1;
    for (int i = 0; i < rank; ++i)
      if (!detail::product_fits(p, values[i], p)) detail::overflow("the product of extents " + to_string());
    return p;
  }
  std::string to_string() const { return detail::describe_extents({values.data(), static_cast<std::size_t>(rank)}); }
  friend constexpr bool operator==(const extents_value&, const extents_value&) = default;
};

template <extents_like E>
constexpr extents_value to_value(const E& e) noexcept {
  extents_value v;
  v.rank = e.rank();
  for (int i = 0; i < v.rank; ++i) v.values[i] = e.extent(i);
  return v;
}

/// Parses "2x4" (or "1024x512") into extents; the message names the bad text.
inline dynamic_extents parse_extents(const std::string& text, const char* what) {
  const std::string shown = std::string(what) + " '" + detail::printable(text) + "'";
  if (text.empty()) throw error(shown + " is empty; expected e.g. 2x4");
  std::vector<index_t> values;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t next = text.find('x', pos);
    if (next == std::string::npos) next = text.size();
    std::string token = text.substr(pos, next - pos);
    if (token.empty() || token.find_first_not_of("0123456789") != std::string::npos)
      throw error(shown + " is not a list of sizes like 2x4 (bad part '" + detail::printable(token) + "')");
    if (values.size() == static_cast<std::size_t>(max_rank))
      throw error(shown + " has more than meshcast::max_rank (" + std::to_string(max_rank) + ") sizes");
    index_t v = 0;
    for (char c : token)
      if (!detail::product_fits(v, index_t{10}, v) || !detail::sum_fits(v, index_t{c - '0'}, v))
        throw error(shown + ": size " + detail::printable(token) + " does not fit in 64 bits");
    values.push_back(v);
    pos = next + 1;
  }
  index_t product = 1;
  for (index_t v : values)
    if (!detail::product_fits(product, v, product)) throw error(shown + ": the product of its sizes does not fit in 64 bits");
  return dynamic_extents(values);
}

}  // namespace meshcast

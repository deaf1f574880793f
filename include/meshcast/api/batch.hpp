// What the front ends share whatever their transport: the tensors of a batch for the one call
// (layouts and this rank's shards, typed ranges kept as bytes), and the typed single-tensor
// resharder over a transport's batch resharder (mpi.hpp's `resharder`, nccl.hpp's
// `nccl_resharder`): written once, so both transports behave and fail alike.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../layout/layout.hpp"
#include "../layout/tensor_layouts.hpp"

namespace meshcast {

struct plan;
struct schedule;
class network;

namespace detail {

template <class Src, class Dst>
constexpr void check_static_shapes() {
  static_assert(static_shapes_agree<Src, Dst>(),
                "The source and destination layouts have different static shapes: resharding keeps the tensor's shape.");
}

template <class In, class Out>
constexpr void check_shard_types() {
  using T = std::remove_cvref_t<std::ranges::range_value_t<In>>;
  static_assert(std::is_same_v<T, std::remove_cvref_t<std::ranges::range_value_t<Out>>>,
                "The source and destination shards must hold the same element type.");
  static_assert(std::is_trivially_copyable_v<T>, "Shards are moved as bytes: their element type must be trivially copyable.");
}

/// A shard (a contiguous range of elements) as bytes, read only or writable.
template <std::ranges::contiguous_range R>
std::span<const std::byte> shard_bytes(R&& r) {
  return {reinterpret_cast<const std::byte*>(std::ranges::data(r)), std::ranges::size(r) * sizeof(std::ranges::range_value_t<R>)};
}
template <std::ranges::contiguous_range R>
std::span<std::byte> writable_shard_bytes(R&& r) {
  return {reinterpret_cast<std::byte*>(std::ranges::data(r)), std::ranges::size(r) * sizeof(std::ranges::range_value_t<R>)};
}

/// One tensor resharded again and again through a transport's batch resharder `Batch` (a batch
/// of one, with typed shards). The transports' resharders derive from it and add constructors.
template <class Batch>
class typed_resharder {
 public:
  /// Elements this rank's source and destination shards hold (0 where it has none).
  std::size_t source_elements() const { return batch_.source_elements(0); }
  std::size_t destination_elements() const { return batch_.destination_elements(0); }
  const meshcast::plan& plan() const { return batch_.plans()[0]; }
  const meshcast::schedule& schedule() const { return batch_.schedule(); }
  const meshcast::network& network() const { return batch_.network(); }
  /// Bytes of message buffers this rank holds, and their release until the next run (batch_facade).
  std::size_t staging_bytes() const { return batch_.staging_bytes(); }
  void release_staging() { batch_.release_staging(); }

  /// Reshards once: `in` is this rank's source shard (read only), `out` its destination shard;
  /// both contiguous ranges of elements of the size given at construction. Collective.
  template <std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  void operator()(In&& in, Out&& out) {
    check_shard_types<In, Out>();
    using T = std::remove_cvref_t<std::ranges::range_value_t<In>>;
    std::string problem;  // every rank learns of it, as of any misuse
    if (sizeof(T) != element_bytes_)
      problem = "the shards hold " + std::to_string(sizeof(T)) + "-byte elements but the reshard was set up for " +
                std::to_string(element_bytes_) + "-byte ones";
    const std::span<const std::byte> from = shard_bytes(in);
    const std::span<std::byte> to = writable_shard_bytes(out);
    batch_.run(std::span<const std::span<const std::byte>>(&from, 1), std::span<const std::span<std::byte>>(&to, 1), problem);
  }

 protected:
  template <class... BatchArguments>
  explicit typed_resharder(std::size_t element_bytes, BatchArguments&&... arguments)
      : batch_(std::forward<BatchArguments>(arguments)...), element_bytes_(element_bytes) {}

 private:
  Batch batch_;
  std::size_t element_bytes_;
};

}  // namespace detail

/// The tensors of a batch for the one call: layouts and this rank's shards (typed ranges, kept
/// as bytes; they must outlive the call).
class batch {
 public:
  template <layout_like Src, layout_like Dst, std::ranges::contiguous_range In, std::ranges::contiguous_range Out>
  batch& add(const Src& src, const Dst& dst, In&& in, Out&& out) {
    detail::check_static_shapes<Src, Dst>();
    detail::check_shard_types<In, Out>();
    static_assert(std::ranges::borrowed_range<In> && std::ranges::borrowed_range<Out>,
                  "batch::add keeps pointers to the shards until the reshard: pass ranges that outlive the call "
                  "(a named vector, a span), not temporaries.");
    layouts_.push_back({src.value(), dst.value(), sizeof(std::ranges::range_value_t<In>)});
    in_.push_back(detail::shard_bytes(in));
    out_.push_back(detail::writable_shard_bytes(out));
    return *this;
  }
  const std::vector<tensor_layouts>& layouts() const noexcept { return layouts_; }
  std::span<const std::span<const std::byte>> in() const noexcept { return in_; }
  std::span<const std::span<std::byte>> out() const noexcept { return out_; }

 private:
  std::vector<tensor_layouts> layouts_;
  std::vector<std::span<const std::byte>> in_;
  std::vector<std::span<std::byte>> out_;
};

}  // namespace meshcast

// The definitions behind batch_core.hpp. Header-only mode includes this from <meshcast/mpi.hpp>;
// libmeshcast compiles it once in compiled mode (src/mpi.cpp).
#pragma once

#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

#include "../front_end.hpp"
#include "batch_core.hpp"
#include "channel.hpp"
#include "collectives_impl.hpp"

namespace meshcast::detail {

// The state is the front end written once for every transport, here over MPI.
struct batch_core::state : front_end<mpi_channel> {
  using front_end<mpi_channel>::front_end;
};

MESHCAST_INLINE batch_core::batch_core(MPI_Comm comm, std::vector<tensor_layouts> tensors, const reshard_options& options,
                                       const erased_policies& policies)
    : state_(new state(mpi_channel{comm, options.timeout_s}, std::move(tensors), options, policies)) {}

MESHCAST_INLINE batch_core::~batch_core() { delete state_; }
MESHCAST_INLINE batch_core::batch_core(batch_core&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
MESHCAST_INLINE batch_core& batch_core::operator=(batch_core&& other) noexcept {
  if (this != &other) {
    delete state_;
    state_ = std::exchange(other.state_, nullptr);
  }
  return *this;
}

MESHCAST_INLINE std::size_t batch_core::size() const noexcept { return state_->size(); }
MESHCAST_INLINE std::size_t batch_core::source_elements(std::size_t k) const noexcept { return state_->source_elements(k); }
MESHCAST_INLINE std::size_t batch_core::destination_elements(std::size_t k) const noexcept {
  return state_->destination_elements(k);
}
MESHCAST_INLINE const std::vector<plan>& batch_core::plans() const noexcept { return state_->plans(); }
MESHCAST_INLINE const meshcast::schedule& batch_core::schedule() const noexcept { return state_->schedule(); }
MESHCAST_INLINE const meshcast::network& batch_core::network() const noexcept { return state_->network(); }
MESHCAST_INLINE std::size_t batch_core::staging_bytes() const noexcept { return state_->staging_bytes(); }

MESHCAST_INLINE void batch_core::run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out,
                                     std::string problem) {
  state_->run(in, out, std::move(problem));
}

}  // namespace meshcast::detail

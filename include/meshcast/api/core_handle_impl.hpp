// The definitions behind core_handle.hpp, over a State whose definition is in view: each
// transport's batch_core_impl.hpp includes this after defining its State.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core_handle.hpp"

namespace meshcast::detail {

template <class State>
core_handle<State>& core_handle<State>::operator=(core_handle&& other) noexcept {
  if (this != &other) {
    delete state_;
    state_ = std::exchange(other.state_, nullptr);
  }
  return *this;
}

template <class State>
core_handle<State>::~core_handle() {
  delete state_;
}

template <class State>
std::size_t core_handle<State>::size() const noexcept {
  return state_->fe->size();
}
template <class State>
std::size_t core_handle<State>::source_elements(std::size_t k) const noexcept {
  return state_->fe->source_elements(k);
}
template <class State>
std::size_t core_handle<State>::destination_elements(std::size_t k) const noexcept {
  return state_->fe->destination_elements(k);
}
template <class State>
const std::vector<plan>& core_handle<State>::plans() const noexcept {
  return state_->fe->plans();
}
template <class State>
const meshcast::schedule& core_handle<State>::schedule() const noexcept {
  return state_->fe->schedule();
}
template <class State>
const meshcast::network& core_handle<State>::network() const noexcept {
  return state_->fe->network();
}
template <class State>
std::size_t core_handle<State>::staging_bytes() const noexcept {
  return state_->fe->staging_bytes();
}
template <class State>
void core_handle<State>::release_staging() noexcept {
  state_->fe->release_staging();
}

template <class State>
void core_handle<State>::run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out,
                             std::string problem) {
  state_->fe->run(in, out, std::move(problem));
}

}  // namespace meshcast::detail

// A built batch's front end behind a pointer: what MPI's batch_core and NCCL's nccl_batch_core
// show their includers. `State` is the transport's (defined in its _impl.hpp) and holds the
// front end as `fe`, an optional. The members are defined in core_handle_impl.hpp: included in
// header-only mode, instantiated once in the transport's library in compiled mode (an extern
// template beside each State's declaration), so that compiled-mode includers parse no front end.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace meshcast {

struct plan;
struct schedule;
class network;

namespace detail {

template <class State>
class core_handle {
 public:
  core_handle(core_handle&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  core_handle& operator=(core_handle&& other) noexcept;
  core_handle(const core_handle&) = delete;
  core_handle& operator=(const core_handle&) = delete;
  ~core_handle();

  std::size_t size() const noexcept;
  std::size_t source_elements(std::size_t k) const noexcept;
  std::size_t destination_elements(std::size_t k) const noexcept;
  const std::vector<plan>& plans() const noexcept;
  const meshcast::schedule& schedule() const noexcept;
  const meshcast::network& network() const noexcept;
  std::size_t staging_bytes() const noexcept;
  void release_staging() noexcept;

  /// Reshards once; `problem` is one this rank found on its own (every rank then fails with it).
  void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out, std::string problem);

 protected:
  /// Takes ownership of `state`, built by the transport's constructor.
  explicit core_handle(State* state) noexcept : state_(state) {}

 private:
  State* state_ = nullptr;
};

}  // namespace detail
}  // namespace meshcast

// A backend that forwards every member to an mpi_backend. Tests derive from it and hide the
// members they watch or break; the executor calls through the derived type, so nothing is virtual.
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include <meshcast/exec/backend/mpi.hpp>

class wrapped_mpi_backend {
 public:
  using memory_type = meshcast::mpi_backend::memory_type;
  using request = meshcast::mpi_backend::request;
  using group = meshcast::mpi_backend::group;
  using index_t = meshcast::index_t;
  /// The wrapped transport's protocol, and what it needs to apply it (exec/backend_traits.hpp).
  static constexpr meshcast::backend_protocol protocol = meshcast::mpi_backend::protocol;
  explicit wrapped_mpi_backend(meshcast::mpi_backend inner) : inner_(std::move(inner)) {}
  bool send_completes_early(std::size_t n) const noexcept { return inner_.send_completes_early(n); }
  memory_type& memory() noexcept { return inner_.memory(); }
  index_t device() const noexcept { return inner_.device(); }
  index_t size() const noexcept { return inner_.size(); }
  double timeout_s() const noexcept { return inner_.timeout_s(); }
  void cancel(request& r) noexcept { inner_.cancel(r); }
  request send(const std::byte* data, std::size_t n, index_t peer, int tag) { return inner_.send(data, n, peer, tag); }
  request recv(std::byte* data, std::size_t n, index_t peer, int tag) { return inner_.recv(data, n, peer, tag); }
  void prepare_groups(std::span<const std::vector<index_t>> members) { inner_.prepare_groups(members); }
  group make_group(std::span<const index_t> members, int tag) { return inner_.make_group(members, tag); }
  request broadcast(std::byte* data, std::size_t n, index_t root, group& g) { return inner_.broadcast(data, n, root, g); }
  request chain(std::byte* data, std::size_t n, group& g, int tag, std::size_t piece = 0) {
    return inner_.chain(data, n, g, tag, piece);
  }
  void wait(request& r) { inner_.wait(r); }
  bool test(request& r) { return inner_.test(r); }
  void begin_round() { inner_.begin_round(); }
  void end_round() { inner_.end_round(); }
  void flush() { inner_.flush(); }

 protected:
  meshcast::mpi_backend inner_;
};

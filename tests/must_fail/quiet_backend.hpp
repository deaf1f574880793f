// A transport with every member of the backend concept that does nothing: what the must-fail
// tests of the executor and the front end build on. Defining QUIET_BACKEND_WITHOUT_PROTOCOL
// leaves out its protocol (backend_without_protocol.cpp's misuse); QUIET_BACKEND_CANCEL_MAY_THROW
// drops `noexcept` from its cancel (backend_cancel_may_throw.cpp's); QUIET_BACKEND_PREPARES_GROUPS
// says it prepares its groups, which it cannot (backend_prepares_groups_without_member.cpp's). It
// includes no meshcast header:
// each test includes the one it tests (and exec/memory/host.hpp) first, so that the file stands
// for the umbrella against single_include/ (check.cmake).
#pragma once
#include <cstddef>
#include <span>

struct quiet_backend {
  using index_t = meshcast::index_t;
  using memory_type = meshcast::host_memory;
  struct request {};
  struct group {};
#if defined(QUIET_BACKEND_PREPARES_GROUPS)
  static constexpr meshcast::backend_protocol protocol{
      .port_tokens = true, .sends = meshcast::send_completion::on_delivery, .prepares_groups = true};
#elif !defined(QUIET_BACKEND_WITHOUT_PROTOCOL)
  static constexpr meshcast::backend_protocol protocol{.port_tokens = true, .sends = meshcast::send_completion::on_delivery};
#endif
  memory_type& memory() { return memory_; }
  index_t device() const { return 0; }
  index_t size() const { return 1; }
  double timeout_s() const { return 0; }
#ifndef QUIET_BACKEND_CANCEL_MAY_THROW
  void cancel(request&) noexcept {}
#else
  void cancel(request&) {}
#endif
  request send(const std::byte*, std::size_t, index_t, int) { return {}; }
  request recv(std::byte*, std::size_t, index_t, int) { return {}; }
  group make_group(std::span<const index_t>, int) { return {}; }
  request broadcast(std::byte*, std::size_t, index_t, group&) { return {}; }
  request chain(std::byte*, std::size_t, group&, int, std::size_t) { return {}; }
  void wait(request&) {}
  bool test(request&) { return true; }
  void begin_round() {}
  void end_round() {}
  void flush() {}
  memory_type memory_;
};

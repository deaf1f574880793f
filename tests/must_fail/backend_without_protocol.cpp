// expect: A backend must say how its messages behave
#include <meshcast/exec/executor.hpp>
#include <meshcast/exec/memory/host.hpp>
using namespace meshcast;
// A transport with every member of the backend concept; the misuse leaves out its protocol.
struct quiet_backend {
  using memory_type = host_memory;
  struct request {};
  struct group {};
#ifndef MESHCAST_MISUSE
  static constexpr backend_protocol protocol{.port_tokens = true, .sends = send_completion::on_delivery};
#endif
  memory_type& memory() { return memory_; }
  index_t device() const { return 0; }
  index_t size() const { return 1; }
  double timeout_s() const { return 0; }
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
int main() { return sizeof(executor<quiet_backend>) > 0 ? 0 : 1; }

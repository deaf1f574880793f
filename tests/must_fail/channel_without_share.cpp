// expect: A front end's transport must model meshcast::collective_channel
#include <meshcast/api/channel.hpp>
#include <meshcast/exec/memory/host.hpp>
#include "quiet_backend.hpp"
// A transport's collectives with every member; the misuse leaves out sharing the schedule.
struct quiet_channel {
  using backend_type = quiet_backend;
  int rank() const { return 0; }
  int size() const { return 1; }
  void agree_or_throw(const std::string&) {}
  bool all_equal(std::uint64_t) { return true; }
  std::vector<meshcast::index_t> hosts() { return {0}; }
#ifndef MESHCAST_MISUSE
  void share(std::span<const meshcast::plan>, meshcast::schedule&) {}
#endif
  std::string problem_here() const { return {}; }
  meshcast::network fitted(meshcast::network net) const { return net; }
  quiet_backend make_backend() const { return {}; }
};
int main() { return meshcast::detail::checked_channel<quiet_channel>::value ? 0 : 1; }

// Writing your own policies: a solver, a strategy and a backend of your own, plugged into the
// same machinery as the built-in ones (docs/policies.md walks through it). Run under MPI:
//
//   mpiexec -n 4 build/test/examples/meshcast-example-custom-policies
//
// It reshards (4) S0,R -> R,S0 on one mesh three ways and checks every element each time.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include <meshcast/mpi.hpp>

#include "custom_policies.hpp"

using namespace meshcast;

// 1. A solver and 2. a strategy: see custom_policies.hpp (shared with the command-line tools
//    built with them: custom_reshard.cpp, custom_plan.cpp).
using custom::largest_first;
using custom::capped_send_recv;

// 3. A backend: transport only (packing and copies are the executor's, through the memory
//    policy the backend names). This one wraps the MPI backend and counts what it sends.
class counting_backend {
 public:
  using memory_type = mpi_backend::memory_type;
  using request = mpi_backend::request;
  using group = mpi_backend::group;
  /// The wrapped transport's protocol, and what it needs to apply it (exec/backend_traits.hpp).
  static constexpr backend_protocol protocol = mpi_backend::protocol;
  bool send_completes_early(std::size_t n) const noexcept { return inner_.send_completes_early(n); }
  explicit counting_backend(MPI_Comm comm) : inner_(comm, 30) {}
  memory_type& memory() noexcept { return inner_.memory(); }
  index_t device() const noexcept { return inner_.device(); }
  index_t size() const noexcept { return inner_.size(); }
  double timeout_s() const noexcept { return inner_.timeout_s(); }
  void cancel(request& r) noexcept { inner_.cancel(r); }
  request send(const std::byte* data, std::size_t n, index_t peer, int tag) {
    bytes_sent_ += n;
    return inner_.send(data, n, peer, tag);
  }
  request recv(std::byte* data, std::size_t n, index_t peer, int tag) { return inner_.recv(data, n, peer, tag); }
  void prepare_groups(std::span<const std::vector<index_t>> members) { inner_.prepare_groups(members); }
  group make_group(std::span<const index_t> members, int tag) { return inner_.make_group(members, tag); }
  request broadcast(std::byte* data, std::size_t n, index_t root, group& g) { return inner_.broadcast(data, n, root, g); }
  request chain(std::byte* data, std::size_t n, group& g, int tag, std::size_t piece) { return inner_.chain(data, n, g, tag, piece); }
  void wait(request& r) { inner_.wait(r); }
  bool test(request& r) { return inner_.test(r); }
  void begin_round() {}
  void end_round() {}
  void flush() { inner_.flush(); }
  std::size_t bytes_sent() const noexcept { return bytes_sent_; }

 private:
  mpi_backend inner_;
  std::size_t bytes_sent_ = 0;
};
static_assert(backend<counting_backend>);

namespace {
std::vector<std::int32_t> shard(const layout_value& l, index_t device) {
  const box t = l.tile(device);
  std::vector<std::int32_t> v;
  for (index_t i = t[0].lo; i < t[0].hi; ++i)
    for (index_t j = t[1].lo; j < t[1].hi; ++j) v.push_back(static_cast<std::int32_t>(i * l.shape[1] + j));
  return v;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const dynamic_layout src(dynamic_mesh{size}, dynamic_spec("S0,R"), dynamic_shape{64, 300});
  const dynamic_layout dst(dynamic_mesh{size}, dynamic_spec("R,S0"), dynamic_shape{64, 300});
  const auto in = shard(src.value(), rank);
  const auto expect = shard(dst.value(), rank);
  std::vector<std::int32_t> out(expect.size());
  int failures = 0;
  // One device a host: on one machine every rank would share a host, every receiver would be
  // served locally, and the strategy never asked (docs/policies.md).
  const reshard_options in_place{.devices = device_map::same(), .devices_per_host = 1, .timeout_s = 30};

  // The one call with your solver and strategy (template parameters; the strategy's run-time
  // state through a resharder).
  reshard<largest_first, capped_send_recv>(MPI_COMM_WORLD, src, dst, in, out, in_place);
  failures += out != expect;
  resharder<largest_first, capped_send_recv> r(MPI_COMM_WORLD, src, dst, sizeof(std::int32_t), in_place, largest_first{},
                                               capped_send_recv{.max_message_bytes = 4096});
  std::fill(out.begin(), out.end(), -1);
  r(in, out);
  failures += out != expect;

  // The parts on their own, with your backend.
  plan p = make_plan(src, dst, {.element_bytes = 4, .devices = device_map::same()});
  network net = network::uniform(default_hosts(p.device_count, size, 1), network::gbit_per_s(10), network::gbit_per_s(100), 10e-6);
  schedule s;
  if (rank == 0) s = solve(make_instance(p, net, capped_send_recv{}, {.mode = execution::concurrent}), largest_first{});
  share_schedule(MPI_COMM_WORLD, p, s);
  executor<counting_backend> e(counting_backend(MPI_COMM_WORLD), p, s);
  std::fill(out.begin(), out.end(), -1);
  e.run(std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(out)));
  failures += out != expect;

  const bool ok = all_ok(MPI_COMM_WORLD, failures == 0, 30, "collecting results");
  if (rank == 0)
    std::printf("custom policies: solver %s, strategy %s (%zu transfers), backend counting_backend: %s\n",
                std::string(largest_first::name).c_str(), std::string(capped_send_recv::name).c_str(), s.transfers.size(),
                ok ? "every element right" : "WRONG");
  MPI_Finalize();
  return ok ? 0 : 1;
}

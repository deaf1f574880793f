// Connecting allocates nothing (backend_protocol::prepares_groups): the MPI backend's broadcast
// groups and chains get their member lists and barrier posts in the executor's setup, which the
// front ends agree on, so that once a group's members wait for each other no rank can run out of
// memory alone there (the others would wait out the timeout). An executor is built with
// connect_later over group broadcasts and chains among every rank; operator new of this program
// counts what connect() allocates, which must be nothing; then the run is checked element by
// element. Before prepare_groups, connect() made 13 allocations at 2 ranks and 25 at 4 (chains).
#if defined(__GNUC__) && !defined(__clang__)
// This program's operator new is malloc's, so its operator delete is free's: not a mismatch.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include <meshcast/mpi.hpp>

#include "rank_checks.hpp"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> counted{0};
}  // namespace

void* operator new(std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) counted.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

using namespace meshcast;
using namespace meshcast_test;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    // Each tensor split over the mesh and wanted whole everywhere, one device a host: group
    // broadcasts from every rank, then chains.
    const dynamic_shape shape{64, 48};
    const dynamic_layout src(dynamic_mesh{size}, dynamic_spec("S0,R"), shape), dst(dynamic_mesh{size}, dynamic_spec("R,R"), shape);
    const plan p = make_plan(src, dst, {.element_bytes = 4, .devices = device_map::same()});
    const network net = network::alpa_testbed(default_hosts(size, size, 1));
    for (const transfer_kind how : {transfer_kind::group_broadcast, transfer_kind::chain}) {
      const std::string what = std::string(to_string(how)) + ": ";
      greedy g;
      g.search_limit_s = 0;  // the same schedule on every rank
      const schedule s = solve(make_instance(p, net, broadcast{.how = how}), g);
      long groups = 0;
      for (const transfer& t : s.transfers) groups += t.kind == how;
      const long wanted = how == transfer_kind::chain && size == 2 ? 0 : size;  // a chain of one receiver is point-to-point
      expect(groups == wanted, what + std::to_string(groups) + " group transfers, not " + std::to_string(wanted));
      executor<mpi_backend> ex(mpi_backend(MPI_COMM_WORLD, 60), p, s, 0, connect_later);
      counting = true;
      ex.connect();
      counting = false;
      expect(counted == 0, what + "connect() made " + std::to_string(counted.load()) + " allocations");
      counted = 0;
      std::vector<std::int32_t> in(static_cast<std::size_t>(64 / size * 48)), out(64 * 48, -1);
      for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::int32_t>(rank * 100000 + static_cast<int>(i));
      ex.run(std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(out)));
      for (std::size_t i = 0; i < out.size(); ++i) {
        const auto owner = static_cast<std::int32_t>(i / in.size());
        if (out[i] != owner * 100000 + static_cast<std::int32_t>(i % in.size())) {
          expect(false, what + "element " + std::to_string(i) + " is wrong");
          break;
        }
      }
    }
  } catch (const std::exception& e) {
    counting = false;
    expect(false, std::string("threw: ") + e.what());
  }
  return finish("connect allocations", "connect() allocated nothing");
}

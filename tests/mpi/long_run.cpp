// A healthy run longer than the timeout finishes: the timeout bounds a wait without progress, not
// the run. Rank 0 sends 24 tensors to rank 1 (one host each), one step at a time on each rank's
// single lane; every data send is held 100 ms before it is posted, so the run takes 2.4 s or more
// against a 1 s timeout, and no wait goes 1 s without a step finishing. The executor once counted
// progress by the number of steps in flight: a rank that finished a step and posted the next in
// one poll kept it at 1, and this run was cut as "no progress for 1 s" on both ranks (found by
// review).
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <meshcast/mpi.hpp>

#include "rank_checks.hpp"
#include "wrapped_mpi_backend.hpp"

using namespace meshcast;
using namespace meshcast_test;

namespace {
constexpr int tensors = 24;
constexpr double limit_s = 1.0;  // the executor's timeout

class slow_sender : public wrapped_mpi_backend {
 public:
  explicit slow_sender(MPI_Comm comm) : wrapped_mpi_backend(mpi_backend(comm, limit_s)) {}
  request send(const std::byte* data, std::size_t n, index_t peer, int tag) {
    if (n > 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // data, not a token
    return inner_.send(data, n, peer, tag);
  }
};
static_assert(backend<slow_sender>);
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    expect(size == 2, "the test runs on 2 ranks");
    const auto net = std::make_shared<const network>(network::uniform({0, 1}, network::gbit_per_s(10), 100e9, 10e-6, 1));
    std::vector<plan> plans;
    std::vector<std::shared_ptr<const plan>> shared;
    for (int k = 0; k < tensors; ++k) {
      plans.push_back(make_plan(dynamic_layout(dynamic_mesh{1}, dynamic_spec("R,R"), dynamic_shape{16, 64}),
                                dynamic_layout(dynamic_mesh{1}, dynamic_spec("R,R"), dynamic_shape{16, 64}),
                                {.element_bytes = 4, .devices = device_map::listed({1}), .device_count = 2}));
      shared.push_back(std::make_shared<const plan>(plans.back()));
    }
    greedy g;
    g.search_limit_s = 0;  // the same schedule on every rank
    const schedule s = solve_batch(shared, net, send_recv{}, g, {.mode = execution::ordered, .bucket_bytes = 0});
    expect(s.transfers.size() == tensors, "one transfer per tensor, got " + std::to_string(s.transfers.size()));
    executor<slow_sender> ex(slow_sender(MPI_COMM_WORLD), plans, s);
    std::vector<std::vector<std::int32_t>> in(tensors), out(tensors);
    std::vector<std::span<const std::byte>> sources;
    std::vector<std::span<std::byte>> destinations;
    for (int k = 0; k < tensors; ++k) {
      if (rank == 0)
        for (int i = 0; i < 16 * 64; ++i) in[k].push_back(k * 100003 + i);
      if (rank == 1) out[k].assign(16 * 64, -1);
      sources.push_back(std::as_bytes(std::span(in[k])));
      destinations.push_back(std::as_writable_bytes(std::span(out[k])));
    }
    const auto begin = std::chrono::steady_clock::now();
    ex.run(sources, destinations);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (rank == 0) expect(took > 2 * limit_s, "the run took " + std::to_string(took) + " s: not past its timeout, tests nothing");
    if (rank == 1) {
      std::size_t wrong = 0;
      for (int k = 0; k < tensors; ++k)
        for (int i = 0; i < 16 * 64; ++i) wrong += out[k][static_cast<std::size_t>(i)] != k * 100003 + i;
      expect(wrong == 0, std::to_string(wrong) + " wrong elements");
    }
  } catch (const std::exception& e) {
    expect(false, std::string("threw: ") + e.what());
  }
  return finish("long run", "a run of 2.4 s under a 1 s timeout finishes, every element right");
}

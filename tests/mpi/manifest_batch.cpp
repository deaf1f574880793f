// A model's manifest as a library user runs it (README, "Move a whole model"): read, turned into a
// batch_resharder under `auto`, run four times on 4 ranks, every element checked. Tensors start on
// different devices (a pipeline stage's mesh), one goes to the same devices it came from. After
// the first run, a run allocates nothing from the C++ heap (plan, schedule and buffers are kept;
// nothing is re-solved), and after release_staging exactly the message buffers' block: this file
// replaces operator new to count.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include <meshcast/api/manifest.hpp>
#include <meshcast/mpi.hpp>

#include "cli/fill.hpp"

#include "rank_checks.hpp"

using namespace meshcast;
using namespace meshcast_test;

namespace {
std::atomic<long> allocations{0};
}  // namespace

// The replacements pair malloc with free; g++ 12 takes free in a replaced delete for a mismatch.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
// The nothrow forms too (std::stable_sort's buffer uses them): every plain delete below frees what
// malloc gave, so every plain new must come from malloc (AddressSanitizer checks the pairing).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {
const char* model = R"({"devices_per_host": 2,
  "src": {"mesh": "2", "devices": [0, 1]},
  "dst": {"mesh": "2x1", "devices": [2, 3]},
  "tensors": [
    {"name": "embed", "shape": [37, 8], "dtype_bytes": 4, "src_spec": "S0,R", "dst_spec": "R,S0"},
    {"name": "layers.0.w", "shape": [16, 12], "dtype_bytes": 2, "src_spec": "R,S0", "dst_spec": "S0,R"},
    {"name": "layers.1.w", "shape": [16, 12], "dtype_bytes": 8, "src_spec": "S0,S1", "dst_spec": "R,R",
     "src": {"mesh": "1x2", "devices": [2, 3]}},
    {"name": "layers.1.norm", "shape": [5], "dtype_bytes": 1, "src_spec": "S0", "dst_spec": "R",
     "src": {"mesh": "2", "devices": [3, 1]}, "dst": {"mesh": "4", "devices": [0, 1, 2, 3]}}]})";

std::vector<std::byte> shard(const plan& p, const box& tile, std::uint64_t k) {
  std::vector<std::byte> v(static_cast<std::size_t>(tile.volume() * p.element_bytes));
  cli::for_each_tile_element(tile, p.src.shape, static_cast<std::size_t>(p.element_bytes), [&](std::size_t off, std::uint64_t i) {
    cli::put_index(v.data() + off, i + k, static_cast<std::size_t>(p.element_bytes));
  });
  return v;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    const manifest m = parse_manifest(std::string_view(model));
    expect(m.device_count == size, "the test runs on " + std::to_string(m.device_count) + " ranks");
    batch_resharder<greedy, auto_strategy> r(MPI_COMM_WORLD, m.tensors,
                                             {.host_of = hosts_in_order(m.device_count, m.devices_per_host_or(0)), .timeout_s = 60});
    const std::vector<plan>& plans = r.plans();
    std::vector<std::vector<std::byte>> in, out, expect_out;
    for (std::size_t k = 0; k < plans.size(); ++k) {
      in.push_back(r.source_elements(k) ? shard(plans[k], plans[k].source_tile(rank), k) : std::vector<std::byte>{});
      expect_out.push_back(r.destination_elements(k) ? shard(plans[k], plans[k].destination_tile(rank), k) : std::vector<std::byte>{});
      out.emplace_back(expect_out.back().size(), std::byte{0xee});
    }
    std::vector<std::span<const std::byte>> ins(in.begin(), in.end());
    std::vector<std::span<std::byte>> outs(out.begin(), out.end());
    for (int round = 0; round < 4; ++round) {
      for (auto& o : out) std::fill(o.begin(), o.end(), std::byte{0xee});
      const long before = allocations.load();
      r(ins, outs);
      const long made = allocations.load() - before;
      if (round > 0) expect(made == 0, "round " + std::to_string(round) + " allocated " + std::to_string(made) + " times");
      for (std::size_t k = 0; k < plans.size(); ++k)
        expect(out[k] == expect_out[k], "round " + std::to_string(round) + ": tensor " + m.tensors[k].name + " is wrong");
    }
    // release_staging frees the message buffers until the next run, which makes them again (one
    // allocation, the block) and delivers every element; ranks may release at different times.
    const std::size_t staging = r.staging_bytes();
    for (int round = 4; round < 8; ++round) {
      const bool release = round % 2 == 0 || rank % 2 == 0;  // rounds 5 and 7: the even ranks only
      if (release) {
        r.release_staging();
        expect(r.staging_bytes() == 0, "round " + std::to_string(round) + ": " + std::to_string(r.staging_bytes()) +
                                           " bytes of message buffers held after release_staging");
      }
      for (auto& o : out) std::fill(o.begin(), o.end(), std::byte{0xee});
      const long before = allocations.load();
      r(ins, outs);
      const long made = allocations.load() - before, expected = release && staging > 0 ? 1 : 0;
      expect(made == expected, "round " + std::to_string(round) + " allocated " + std::to_string(made) + " times, not " +
                                   std::to_string(expected));
      expect(r.staging_bytes() == staging, "round " + std::to_string(round) + ": " + std::to_string(r.staging_bytes()) +
                                               " bytes of message buffers after the run, " + std::to_string(staging) + " before");
      for (std::size_t k = 0; k < plans.size(); ++k)
        expect(out[k] == expect_out[k], "round " + std::to_string(round) + ": tensor " + m.tensors[k].name + " is wrong");
    }
    expect(r.schedule().strategy == "auto", "the schedule's strategy is " + r.schedule().strategy);
    const auto counts = tasks_by_strategy(r.schedule(), plans);
    index_t tasks = 0, counted = 0;
    for (const plan& p : plans) tasks += static_cast<index_t>(p.tasks.size());
    for (const auto& [name, n] : counts) counted += n;
    expect(counted == tasks, "tasks_by_strategy counts " + std::to_string(counted) + " of " + std::to_string(tasks) + " tasks");
  } catch (const std::exception& e) {
    expect(false, std::string("threw: ") + e.what());
  }
  return finish("manifest batch", "every element right");
}

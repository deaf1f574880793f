// Many tensors in one schedule against one at a time, measured side by side in one run.
//
// A stage boundary of three tensors from a (2,2) mesh (hosts 0-1) to a (2,2) mesh (hosts 2-3):
//   a: 2 x N rows split S0 over 4 devices: only host 0's devices hold rows (the chunk rule leaves
//      host 1's empty), so alone it can use one source NIC;
//   b: replicated (R,R) on every source device: any host can send it;
//   c: like a.
// One at a time, a and c each keep host 1's NIC idle; in one schedule b goes through host 1
// while a and c use host 0. Prints measured and predicted times of both and their ratio.
//
//   scripts/cluster.sh mpiexec -ppn 2 -n 8 build/test/bench/meshcast-bench-batch [--mib M] [--repeat R] [model flags]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <meshcast/mpi.hpp>

#include "end_on_error.hpp"
#include "flags.hpp"

using namespace meshcast;

constexpr const char* usage =
    "usage: mpiexec -ppn 2 -n 8 meshcast-bench-batch [--mib M] [--repeat R] [--nic-gbps G] [--nic-efficiency F]\n"
    "         [--latency-us U] [--intra-gbps G] [--mode ordered|concurrent]\n";

int main(int argc, char** argv) try {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  index_t mib = 8;
  int repeat = 3;
  reshard_options o{.devices_per_host = 2, .nic_gbps = 0.2, .latency_us = 60, .timeout_s = 120};
  try {
    const meshcast_bench::flags f(argc, argv, {"--mib", "--repeat", "--nic-gbps", "--nic-efficiency", "--latency-us", "--intra-gbps", "--mode"});
    if (f.help()) {
      if (rank == 0) std::fputs(usage, stdout);
      MPI_Finalize();
      return 0;
    }
    mib = f.count("--mib", mib, 1, 1 << 20);
    repeat = static_cast<int>(f.count("--repeat", repeat, 1, 1 << 20));
    o.nic_gbps = f.real("--nic-gbps", o.nic_gbps, 8e-9, 8e6);
    o.nic_efficiency = f.real("--nic-efficiency", o.nic_efficiency, 1e-3, 1);
    o.latency_us = f.real("--latency-us", o.latency_us, 0, 3.6e9);
    o.intra_gbps = f.real("--intra-gbps", o.intra_gbps, 8e-9, 8e6);
    o.mode = parse_execution(f.word("--mode", "ordered", {"ordered", "concurrent"}));
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "meshcast-bench-batch: %s\n%s", e.what(), usage);
    MPI_Finalize();
    return 2;
  }
  if (size != 8) {
    if (rank == 0) std::fprintf(stderr, "meshcast-bench-batch: run with 8 ranks, 2 per host on 4 hosts\n");
    MPI_Finalize();
    return 2;
  }
  const index_t cols = (mib << 20) / 4 / 2;  // a and c: 2 rows of int32
  dynamic_layout a_src(dynamic_mesh{2, 2}, dynamic_spec("S01,R"), dynamic_shape{2, cols});
  dynamic_layout a_dst(dynamic_mesh{2, 2}, dynamic_spec("R,S01"), dynamic_shape{2, cols});
  dynamic_layout b_src(dynamic_mesh{2, 2}, dynamic_spec("R,R"), dynamic_shape{4, cols / 2});
  dynamic_layout b_dst(dynamic_mesh{2, 2}, dynamic_spec("S0,S1"), dynamic_shape{4, cols / 2});
  std::vector<tensor_layouts> tensors = {{a_src.value(), a_dst.value(), 4}, {b_src.value(), b_dst.value(), 4},
                                         {a_src.value(), a_dst.value(), 4}};
  batch_resharder<> together(MPI_COMM_WORLD, tensors, o);
  std::vector<batch_resharder<>> alone;
  for (const tensor_layouts& t : tensors) alone.emplace_back(MPI_COMM_WORLD, std::vector<tensor_layouts>{t}, o);
  std::vector<std::vector<std::byte>> in(3), out(3);
  std::vector<std::span<const std::byte>> ins;
  std::vector<std::span<std::byte>> outs;
  for (std::size_t k = 0; k < 3; ++k) {
    in[k].assign(together.source_elements(k) * 4, std::byte{1});
    out[k].assign(together.destination_elements(k) * 4, std::byte{0});
    ins.emplace_back(in[k]);
    outs.emplace_back(out[k]);
  }
  auto timed = [&](auto&& once) {
    double best = 1e300;
    for (int r = 0; r < repeat; ++r) {
      bounded_barrier(MPI_COMM_WORLD, o.timeout_s);
      const auto t0 = std::chrono::steady_clock::now();
      once();
      bounded_barrier(MPI_COMM_WORLD, o.timeout_s);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  const double t_one = timed([&] {
    for (std::size_t k = 0; k < 3; ++k) alone[k](std::span<const std::span<const std::byte>>(&ins[k], 1), std::span<const std::span<std::byte>>(&outs[k], 1));
  });
  const double t_all = timed([&] { together(ins, outs); });
  double predicted_one = 0;
  for (auto& r : alone) predicted_one += r.schedule().makespan_s;
  if (rank == 0)
    std::printf("{\"tensors\": 3, \"mib_each\": %lld, \"mode\": \"%s\", \"one_at_a_time_s\": %.4f, \"one_at_a_time_predicted_s\": %.4f, "
                "\"batched_s\": %.4f, \"batched_predicted_s\": %.4f, \"physical_bound_s\": %.4f, \"measured_speedup\": %.3f, "
                "\"predicted_speedup\": %.3f}\n",
                static_cast<long long>(mib), std::string(to_string(o.mode)).c_str(), t_one, predicted_one, t_all,
                together.schedule().makespan_s, together.schedule().physical_bound_s, t_one / t_all,
                predicted_one / together.schedule().makespan_s);
  MPI_Finalize();
  return 0;
} catch (const std::exception& e) {
  meshcast_bench::end_on_error("meshcast-bench-batch", e);
}

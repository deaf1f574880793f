// Zero-overhead check: the executor against a hand-written loop of the same MPI calls.
//
//   mpiexec -n 8 meshcast-bench-executor-overhead --mode executor|raw [--reps N] [--shape AxB]
//
// Both modes move the same bytes with the same pack/unpack routines over a (2,2) -> (2,2)
// transpose-like reshard (S0,R -> R,S0: every rank sends to and receives from every other rank);
// the hand-written loop is what a user would write for this one case: precomputed messages,
// MPI_Isend / MPI_Irecv, MPI_Waitall, unpack. Run under valgrind --tool=callgrind
// --instr-atstart=no to count instructions of the timed loop only (see bench/overhead.sh).
#include <mpi.h>
#include <valgrind/callgrind.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <meshcast/mpi.hpp>

#include "end_on_error.hpp"
#include "flags.hpp"

using namespace meshcast;

constexpr const char* usage =
    "usage: mpiexec -n N meshcast-bench-executor-overhead [--mode executor|raw] [--reps N] [--shape AxB]\n";

int main(int argc, char** argv) try {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string mode = "executor", shape_text = "512x512";
  int reps = 50;
  dynamic_shape shape{512, 512};
  try {
    const meshcast_bench::flags f(argc, argv, {"--mode", "--reps", "--shape"});
    if (f.help()) {
      if (rank == 0) std::fputs(usage, stdout);
      MPI_Finalize();
      return 0;
    }
    mode = f.word("--mode", mode, {"executor", "raw"});
    reps = static_cast<int>(f.count("--reps", reps, 1, 1 << 24));
    shape_text = f.text("--shape", shape_text);
    shape = parse_shape(shape_text);
    // A shape S0,R cannot split is refused here, by rank 0 alone before a clean exit: through
    // end_on_error every rank aborted, and the launcher sometimes dropped every message.
    (void)dynamic_layout(dynamic_mesh{size}, dynamic_spec("S0,R"), shape);
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "meshcast-bench-executor-overhead: %s\n%s", e.what(), usage);
    MPI_Finalize();
    return 2;
  }
  dynamic_layout src(dynamic_mesh{size}, dynamic_spec("S0,R"), shape), dst(dynamic_mesh{size}, dynamic_spec("R,S0"), shape);
  plan p = make_plan(src, dst, {.devices = device_map::same()});
  network net = network::alpa_testbed(default_hosts(p.device_count, size, 1));
  schedule s = solve(make_instance(p, net, send_recv{}, {.mode = execution::concurrent}), greedy{});
  share_schedule(MPI_COMM_WORLD, p, s);
  const std::size_t eb = 4;
  const box my_src = p.src.tile(rank), my_dst = p.dst.tile(rank);
  std::vector<std::byte> source(static_cast<std::size_t>(my_src.volume()) * eb, std::byte{1});
  std::vector<std::byte> destination(static_cast<std::size_t>(my_dst.volume()) * eb);
  double best = 1e300;

  if (mode == "executor") {
    mpi_backend b(MPI_COMM_WORLD, 0);  // blocking waits, like MPI_Waitall in the hand-written loop
    executor<mpi_backend> exec(b, p, s);
    exec.run(source, destination);  // warm-up
    CALLGRIND_START_INSTRUMENTATION;
    for (int r = 0; r < reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      auto t0 = std::chrono::steady_clock::now();
      exec.run(source, destination);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    CALLGRIND_STOP_INSTRUMENTATION;
  } else {
    // The hand-written loop for this case.
    // As a careful hand-written loop would: a region contiguous in the shard it leaves or enters
    // goes straight from or into that shard (detail::contiguous_offset), the rest through a buffer.
    struct message {
      box region;
      int peer, tag;
      bool local;
      std::size_t bytes;
      std::vector<std::byte> data;
      std::size_t direct = detail::not_contiguous;
    };
    constexpr std::size_t none = detail::not_contiguous;
    std::vector<message> sends, recvs;
    for (std::size_t i = 0; i < s.transfers.size(); ++i) {
      const transfer& o = s.transfers[i];
      const index_t r = o.receivers[0];
      const std::size_t n = static_cast<std::size_t>(o.region.volume()) * eb;
      if (o.sender == rank) {
        const std::size_t at = detail::contiguous_offset(my_src, o.region, eb);
        sends.push_back({o.region, static_cast<int>(r), static_cast<int>(i), r == rank, n, std::vector<std::byte>(at == none ? n : 0), at});
      } else if (r == rank) {
        const std::size_t at = detail::contiguous_offset(my_dst, o.region, eb);
        recvs.push_back({o.region, static_cast<int>(o.sender), static_cast<int>(i), false, n, std::vector<std::byte>(at == none ? n : 0), at});
      }
      // The hand-written loop counts bytes in an int, as MPI_Isend does.
      if ((o.sender == rank || r == rank) && n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        throw error("transfer " + std::to_string(i) + " moves " + std::to_string(n) +
                    " bytes, more than one MPI message of the hand-written loop holds (2^31 - 1)");
    }
    std::vector<MPI_Request> requests(sends.size() + recvs.size());
    auto once = [&] {
      std::size_t k = 0;
      for (auto& m : recvs) {
        std::byte* into = m.direct == none ? m.data.data() : destination.data() + m.direct;
        MPI_Irecv(into, static_cast<int>(m.bytes), MPI_BYTE, m.peer, m.tag, MPI_COMM_WORLD, &requests[k++]);
      }
      for (auto& m : sends) {
        if (m.local) {
          copy_region(my_src, source, my_dst, destination, m.region, eb);
          requests[k++] = MPI_REQUEST_NULL;
          continue;
        }
        if (m.direct == none) pack(my_src, source, m.region, eb, m.data);
        const std::byte* from = m.direct == none ? m.data.data() : source.data() + m.direct;
        MPI_Isend(from, static_cast<int>(m.bytes), MPI_BYTE, m.peer, m.tag, MPI_COMM_WORLD, &requests[k++]);
      }
      MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
      for (auto& m : recvs)
        if (m.direct == none) unpack(m.data, my_dst, destination, m.region, eb);
    };
    once();  // warm-up
    CALLGRIND_START_INSTRUMENTATION;
    for (int r = 0; r < reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      auto t0 = std::chrono::steady_clock::now();
      once();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    CALLGRIND_STOP_INSTRUMENTATION;
  }
  double worst_rank = 0;
  MPI_Reduce(&best, &worst_rank, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s %d ranks %s: best of %d runs %.3f us\n", mode.c_str(), size, shape_text.c_str(), reps, worst_rank * 1e6);
  MPI_Finalize();
} catch (const std::exception& e) {
  meshcast_bench::end_on_error("meshcast-bench-executor-overhead", e);
}

// Zero-overhead check on the NCCL side: the executor over nccl_backend against a hand-written
// loop of the same NCCL and CUDA calls, both running on the emulated NCCL (threads as ranks).
//
//   meshcast-bench-nccl-overhead --mode executor|raw [--ranks R] [--reps N] [--shape AxB]
//
// Run under valgrind --tool=callgrind --instr-atstart=no (bench/overhead.sh nccl) to count the
// instructions of the timed loop; the emulation's own work (matching, waiting) is the stand-in
// for NCCL and is left out of the count.
#include <valgrind/callgrind.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nccl.h>  // the emulation: this target puts tests/nccl/emulation first on the include path

#include <meshcast/exec/backend/nccl.hpp>
#include <meshcast/meshcast.hpp>

#include "flags.hpp"
#include "thread_bootstrap.hpp"

using namespace meshcast;

constexpr const char* usage =
    "usage: meshcast-bench-nccl-overhead [--mode executor|raw] [--ranks R] [--reps N] [--shape AxB]\n";

int main(int argc, char** argv) try {
  std::string mode = "executor", shape_text = "512x512";
  int ranks = 4, reps = 50;
  dynamic_shape shape{512, 512};
  try {
    const meshcast_bench::flags f(argc, argv, {"--mode", "--ranks", "--reps", "--shape"});
    if (f.help()) {
      std::fputs(usage, stdout);
      return 0;
    }
    mode = f.word("--mode", mode, {"executor", "raw"});
    ranks = static_cast<int>(f.count("--ranks", ranks, 2, 256));
    reps = static_cast<int>(f.count("--reps", reps, 1, 1 << 24));
    shape_text = f.text("--shape", shape_text);
    shape = parse_shape(shape_text);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meshcast-bench-nccl-overhead: %s\n%s", e.what(), usage);
    return 2;
  }
  plan p = make_plan(dynamic_layout(dynamic_mesh{ranks}, dynamic_spec("S0,R"), shape),
                     dynamic_layout(dynamic_mesh{ranks}, dynamic_spec("R,S0"), shape), {.devices = device_map::same()});
  network net = network::alpa_testbed(default_hosts(p.device_count, ranks, 1));
  schedule s = solve(make_instance(p, net, send_recv{}, {.mode = execution::concurrent}), greedy{});
  const std::size_t eb = 4;
  auto board = std::make_shared<thread_bootstrap::board>();
  std::barrier sync(ranks);
  std::vector<double> best(static_cast<std::size_t>(ranks), 1e300);
  // A rank that cannot set up (its buffers do not fit in memory) says so and every rank stops
  // before the first send; a thread's exception would end the process unexplained.
  std::atomic<bool> failed{false};
  std::mutex failure_lock;
  std::string failure;
  auto fail = [&](int rank, const std::exception& e) {
    const std::lock_guard hold(failure_lock);
    failure = "rank " + std::to_string(rank) + ": " + e.what();
    failed = true;
  };
  CALLGRIND_START_INSTRUMENTATION;
  run_ranks(ranks, [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    const box my_src = p.src.tile(rank), my_dst = p.dst.tile(rank);
    std::vector<std::byte> source, destination;
    std::optional<nccl_backend<thread_bootstrap>> b;
    std::optional<executor<nccl_backend<thread_bootstrap>>> exec;
    std::function<void()> once;
    auto timed = [&] {
      sync.arrive_and_wait();
      if (failed) return;
      for (int r = 0; r < reps; ++r) {
        sync.arrive_and_wait();
        auto t0 = std::chrono::steady_clock::now();
        once();
        best[rank] = std::min(best[rank], std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
    };
    try {
      source.assign(static_cast<std::size_t>(detail::checked_mul(my_src.volume(), static_cast<index_t>(eb), "source bytes")), std::byte{1});
      destination.resize(static_cast<std::size_t>(detail::checked_mul(my_dst.volume(), static_cast<index_t>(eb), "destination bytes")));
    } catch (const std::exception& e) {
      fail(rank, e);
    }
    sync.arrive_and_wait();  // every rank's buffers, before any rank sets up a communicating object
    if (mode == "executor") {
      try {
        if (!failed) {
          b.emplace(comm, stream, thread_bootstrap{board});
          exec.emplace(*b, p, s);
          once = [&] { exec->run(source, destination); };
        }
      } catch (const std::exception& e) {
        fail(rank, e);
      }
      timed();
    } else {
      // The hand-written loop for this case: staging buffers, packs, one group of sends and
      // receives, unpacks, a stream synchronisation. As a careful hand-written loop would, a region
      // contiguous in the shard it leaves or enters goes straight from or into that shard
      // (detail::contiguous_offset); the rest through a buffer.
      constexpr std::size_t none = detail::not_contiguous;
      struct message {
        box region;
        int peer;
        bool local;
        std::size_t bytes;
        std::vector<std::byte> data;
        std::size_t direct = none;
      };
      std::vector<message> sends, recvs;
      try {
        for (const transfer& o : s.transfers) {
          if (failed) break;
          const std::size_t n = static_cast<std::size_t>(o.region.volume()) * eb;
          const index_t r = o.receivers[0];
          if (o.sender == rank) {
            const std::size_t at = r == rank ? none : detail::contiguous_offset(my_src, o.region, eb);
            sends.push_back({o.region, static_cast<int>(r), r == rank, n, std::vector<std::byte>(at == none ? n : 0), at});
          } else if (r == rank) {
            const std::size_t at = detail::contiguous_offset(my_dst, o.region, eb);
            recvs.push_back({o.region, static_cast<int>(o.sender), false, n, std::vector<std::byte>(at == none ? n : 0), at});
          }
        }
      } catch (const std::exception& e) {
        fail(rank, e);
      }
      auto copy_runs = [&](const box& tile, const box& region, std::byte* base, std::byte* packed, bool into_tile) {
        std::size_t at = 0;
        detail::for_each_run(tile, region, eb, [&](std::size_t offset, std::size_t run) {
          if (into_tile) cudaMemcpyAsync(base + offset, packed + at, run, cudaMemcpyDeviceToDevice, stream);
          else cudaMemcpyAsync(packed + at, base + offset, run, cudaMemcpyDeviceToDevice, stream);
          at += run;
        });
      };
      once = [&] {
        ncclGroupStart();
        for (auto& m : sends) {
          if (m.local) {
            std::vector<std::byte>& tmp = m.data;
            copy_runs(my_src, m.region, source.data(), tmp.data(), false);
            copy_runs(my_dst, m.region, destination.data(), tmp.data(), true);
            continue;
          }
          if (m.direct == none) copy_runs(my_src, m.region, source.data(), m.data.data(), false);
          ncclSend(m.direct == none ? m.data.data() : source.data() + m.direct, m.bytes, ncclUint8, m.peer, comm, stream);
        }
        for (auto& m : recvs)
          ncclRecv(m.direct == none ? m.data.data() : destination.data() + m.direct, m.bytes, ncclUint8, m.peer, comm, stream);
        ncclGroupEnd();
        for (auto& m : recvs)
          if (m.direct == none) copy_runs(my_dst, m.region, destination.data(), m.data.data(), true);
        cudaStreamSynchronize(stream);
      };
      timed();
    }
    cudaStreamDestroy(stream);
  });
  CALLGRIND_STOP_INSTRUMENTATION;
  if (failed) throw error(failure);
  double worst = 0;
  for (double b : best) worst = std::max(worst, b);
  std::printf("%s %d ranks %s: best of %d runs %.3f us\n", mode.c_str(), ranks, shape_text.c_str(), reps, worst * 1e6);
} catch (const std::exception& e) {
  std::fprintf(stderr, "meshcast-bench-nccl-overhead: %s\n", e.what());
  return 2;
}

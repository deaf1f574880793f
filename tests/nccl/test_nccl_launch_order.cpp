// NCCL runs a group as one kernel per communicator, one after the other on the stream, in an
// order of its own (ascending commHash), not the order of the calls. A round holding operations on
// two communicators (the world's sends and a broadcast group's) can then wait on a peer in a cycle
// when one rank splits it (a forwarding rank, a staging cap) and the other does not. The emulation
// launches groups that way, in either order of the communicators; every batch here must still end
// with every element right.
#include <doctest/doctest.h>

#include <nccl.h>  // the emulation: this target puts tests/nccl/emulation first on the include path

#include <random>
#include <string>
#include <vector>

#include <meshcast/api/manifest.hpp>
#include <meshcast/nccl.hpp>

#include "cli/fill.hpp"
#include "thread_bootstrap.hpp"

using namespace meshcast;

namespace {
// A batch of 2-5 tensors from a 2-device mesh on host 0 to a 2-device mesh on host 1 or a 2x2 one
// on hosts 1 and 2, mostly replicated at the destination: broadcast groups, forwarding receivers
// and plain sends in one schedule.
manifest random_batch(std::mt19937_64& rng) {
  const char* src_specs[] = {"S0,R", "R,S0", "R,R"};
  const char* dst_specs_1[] = {"R,R", "R,S0", "S0,R", "R,R"};
  const char* dst_specs_2[] = {"R,R", "R,S1", "S0,R", "R,R", "S1,R", "R,S0"};
  const bool wide = rng() % 2;
  std::string text = std::string(R"({"devices_per_host": 2, "src": {"mesh": "2"}, "dst": {"mesh": ")") + (wide ? "2x2" : "2") +
                     R"("}, "tensors": [)";
  const int n = 2 + static_cast<int>(rng() % 4);
  for (int k = 0; k < n; ++k)
    text += std::string(k ? "," : "") + R"({"name": "t)" + std::to_string(k) + R"(", "shape": [)" +
            std::to_string(2 + rng() % 40) + ", " + std::to_string(2 + rng() % 40) + R"(], "dtype_bytes": 4, "src_spec": ")" +
            src_specs[rng() % 3] + R"(", "dst_spec": ")" + (wide ? dst_specs_2[rng() % 6] : dst_specs_1[rng() % 4]) + R"("})";
  return parse_manifest(std::string_view(text + "]}"));
}

// Runs `m` on its emulated ranks under `strategy`; the ranks' problems, empty where all went right.
template <class Strategy>
std::vector<std::string> run_batch(const manifest& m, Strategy strategy, execution mode, std::size_t cap) {
  std::vector<std::string> problems(static_cast<std::size_t>(m.device_count));
  run_ranks(static_cast<int>(m.device_count), [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    try {
      nccl_batch_resharder<greedy, Strategy> r(comm, stream, m.tensors,
                               {.host_of = hosts_in_order(m.device_count, m.devices_per_host_or(0)), .mode = mode, .timeout_s = 10,
                                .max_staging_bytes = cap},
                               greedy{}, strategy);
      std::vector<std::vector<std::byte>> in, out;
      for (std::size_t k = 0; k < r.plans().size(); ++k) {
        const plan& p = r.plans()[k];
        const auto eb = static_cast<std::size_t>(p.element_bytes);
        in.emplace_back(r.source_elements(k) * eb);
        out.emplace_back(r.destination_elements(k) * eb, std::byte{0x55});
        if (!in.back().empty()) cli::fill(p.source_tile(rank), p.src.shape, eb, in.back());
      }
      std::vector<std::span<const std::byte>> ins(in.begin(), in.end());
      std::vector<std::span<std::byte>> outs(out.begin(), out.end());
      r(ins, outs);
      for (std::size_t k = 0; k < r.plans().size(); ++k) {
        const plan& p = r.plans()[k];
        if (!out[k].empty() && cli::count_wrong(p.destination_tile(rank), p.src.shape, static_cast<std::size_t>(p.element_bytes), out[k]))
          problems[static_cast<std::size_t>(rank)] = "tensor " + m.tensors[k].name + " wrong";
      }
    } catch (const std::exception& e) {
      problems[static_cast<std::size_t>(rank)] = e.what();
    }
    cudaStreamDestroy(stream);
  });
  return problems;
}


template <class Strategy>
void sweep(Strategy strategy, std::uint64_t seed, bool groups) {
  std::mt19937_64 rng(seed);
  const int before = meshcast_nccl_emulation::broadcasts.load();
  for (int c = 0; c < 16; ++c) {
    const manifest m = random_batch(rng);
    for (bool reversed : {false, true})
      for (execution mode : {execution::concurrent, execution::ordered})
        for (std::size_t cap : {std::size_t{0}, std::size_t{256}}) {  // 256: rounds split where buffers run out
          meshcast_nccl_emulation::reversed_launch_order = reversed;
          const auto problems = run_batch(m, strategy, mode, cap);
          meshcast_nccl_emulation::reversed_launch_order = false;
          CAPTURE(Strategy::name);
          CAPTURE(c);
          CAPTURE(reversed);
          CAPTURE(to_string(mode));
          CAPTURE(cap);
          for (const auto& p : problems) CHECK(p == "");
        }
  }
  if (groups) CHECK(meshcast_nccl_emulation::broadcasts.load() > before);  // the groups' communicators were used
}
}  // namespace

TEST_CASE("emulated NCCL launches a group as one kernel per communicator, in an order of the communicators") {
  // Rank 0 receives on A and sends on B in one group; rank 1 receives on B, then sends on A. With A
  // launched first, rank 0's send waits behind a receive that waits for rank 1's second group,
  // which waits for that send: a deadlock, found and reported. With B first, both end.
  for (bool reversed : {false, true}) {
    meshcast_nccl_emulation::reversed_launch_order = reversed;
    std::vector<ncclResult_t> ends(2, ncclSuccess);
    std::vector<int> got(2, 0);
    auto board = std::make_shared<thread_bootstrap::board>();
    run_ranks(2, [&](int rank, ncclComm_t a) {
      ncclUniqueId id{};
      if (rank == 0) ncclGetUniqueId(&id);
      thread_bootstrap{board}.share(id, std::vector<index_t>{0, 1}, 0, 1);
      ncclComm_t b = nullptr;
      ncclCommInitRank(&b, 2, id, rank);  // made after the world's: a later id
      int out = 7 + rank, in = 0;
      if (rank == 0) {
        ncclGroupStart();
        ncclRecv(&in, sizeof in, ncclUint8, 1, a, nullptr);
        ncclSend(&out, sizeof out, ncclUint8, 1, b, nullptr);
        ends[0] = ncclGroupEnd();
      } else {
        ncclGroupStart();
        ncclRecv(&in, sizeof in, ncclUint8, 0, b, nullptr);
        ends[1] = ncclGroupEnd();
        if (ends[1] == ncclSuccess) {
          ncclGroupStart();
          ncclSend(&out, sizeof out, ncclUint8, 0, a, nullptr);
          ends[1] = ncclGroupEnd();
        }
      }
      got[static_cast<std::size_t>(rank)] = in;
      ncclCommDestroy(b);
    });
    meshcast_nccl_emulation::reversed_launch_order = false;
    CAPTURE(reversed);
    if (!reversed) {
      CHECK(ends[0] == ncclInternalError);
    } else {
      CHECK(ends[0] == ncclSuccess);
      CHECK(ends[1] == ncclSuccess);
      CHECK(got[0] == 8);
      CHECK(got[1] == 7);
    }
  }
}

TEST_CASE("NCCL's kernel per communicator: random batches mixing groups and sends end right in either launch order") {
  sweep(auto_strategy{}, 11, false);
  sweep(broadcast{}, 12, true);
  sweep(broadcast{.how = transfer_kind::group_broadcast}, 13, true);
  sweep(send_recv_allgather{}, 14, false);
}

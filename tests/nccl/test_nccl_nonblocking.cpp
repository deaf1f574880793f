// Nonblocking NCCL communicators (ncclConfig_t::blocking = 0) over the emulated NCCL: calls that
// answer ncclInProgress are polled to their end, broadcast groups are made nonblocking too, and
// what NCCL's blocking calls could wait on for ever (a group's creation, a peer that never posts
// its match) gives up within the timeout.
#include <doctest/doctest.h>

#include <nccl.h>  // the emulation: this target puts tests/nccl/emulation first on the include path

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <meshcast/exec/backend/nccl.hpp>
#include <meshcast/meshcast.hpp>
#include <meshcast/nccl.hpp>

#include "row_major_values.hpp"
#include "thread_bootstrap.hpp"

using namespace meshcast;

namespace {

// Three devices gather a tensor by broadcasts, each in a communicator of its own.
plan gather_plan() {
  return make_plan(dynamic_layout(dynamic_mesh{3}, dynamic_spec("S0"), dynamic_shape{6}),
                   dynamic_layout(dynamic_mesh{3}, dynamic_spec("R"), dynamic_shape{6}), {.devices = device_map::same()});
}
schedule group_schedule(const plan& q) {
  return solve(make_instance(q, network::alpa_testbed(default_hosts(3, 3, 1)), broadcast{.how = transfer_kind::group_broadcast},
                             {.mode = execution::concurrent}),
               naive{});
}

// A member that shares the ids it is asked for and then stops: it never joins a communicator.
struct stops_after_sharing {
  thread_bootstrap inner;
  void share(ncclUniqueId& id, std::span<const index_t> members, index_t root, int tag) {
    inner.share(id, members, root, tag);
    throw error("this rank stops before it creates the group's communicator");
  }
};

}  // namespace

TEST_CASE("a nonblocking communicator: every call answered ncclInProgress is polled to its end, groups too") {
  const plan q = gather_plan();
  const schedule g = group_schedule(q);
  REQUIRE(!g.transfers.empty());
  auto board = std::make_shared<thread_bootstrap::board>();
  const int made_before = meshcast_nccl_emulation::nonblocking_comms, answers_before = meshcast_nccl_emulation::in_progress_answers;
  std::vector<std::string> problems(3);
  run_ranks(
      3,
      [&](int rank, ncclComm_t comm) {
        std::vector<std::int32_t> in(2), out(6, -1);
        for (int k = 0; k < 2; ++k) in[static_cast<std::size_t>(k)] = rank * 2 + k;
        try {
          nccl_backend<thread_bootstrap> b(comm, nullptr, thread_bootstrap{board}, nccl_group_transfers, 30, true);
          executor<nccl_backend<thread_bootstrap>> exec(b, q, g);
          for (int again = 0; again < 2; ++again) {
            exec.run(std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(out)));
            for (int k = 0; k < 6; ++k)
              if (out[static_cast<std::size_t>(k)] != k) problems[static_cast<std::size_t>(rank)] = "wrong element";
          }
        } catch (const std::exception& e) {
          problems[static_cast<std::size_t>(rank)] = e.what();
        }
      },
      true);
  for (std::size_t r = 0; r < 3; ++r) CHECK(problems[r] == "");
  // The world's three communicators and each group's, one per member; every run's groups answered
  // ncclInProgress and were polled, not refused.
  CHECK(meshcast_nccl_emulation::nonblocking_comms - made_before > 3);
  CHECK(meshcast_nccl_emulation::in_progress_answers - answers_before > 3);

  // The one call over a nonblocking communicator: the front end's own collectives are polled the
  // same way, in both modes, and the schedule `auto` picks runs.
  const int n = 4;
  dynamic_layout src(dynamic_mesh{n}, dynamic_spec("S0,R"), dynamic_shape{10, 6}), dst(dynamic_mesh{n}, dynamic_spec("R,S0"), dynamic_shape{10, 6});
  std::vector<std::string> one_call(n);
  run_ranks(
      n,
      [&](int rank, ncclComm_t comm) {
        cudaStream_t stream;
        cudaStreamCreate(&stream);
        const box a = src.tile(rank), b = dst.tile(rank);
        std::vector<std::int32_t> in = meshcast_test::row_major_shard(a, 6), out(static_cast<std::size_t>(b.volume()), -1);
        try {
          for (execution mode : {execution::ordered, execution::concurrent}) {
            reshard(comm, stream, src, dst, std::span<const std::int32_t>(in), std::span<std::int32_t>(out),
                    reshard_options{.devices = device_map::same(), .mode = mode, .nccl_nonblocking = true});
            if (!meshcast_test::holds_row_major(b, 6, out)) one_call[static_cast<std::size_t>(rank)] = "wrong element";
          }
        } catch (const std::exception& e) {
          one_call[static_cast<std::size_t>(rank)] = e.what();
        }
        cudaStreamDestroy(stream);
      },
      true);
  for (int r = 0; r < n; ++r) CHECK(one_call[static_cast<std::size_t>(r)] == "");

  // The one call with broadcasts between hosts (one device each; on one host the strategy copies
  // inside it): the groups' ids travel over the nonblocking world itself (nccl_comm_bootstrap),
  // and their communicators are made nonblocking.
  const int made_by_one_call = meshcast_nccl_emulation::nonblocking_comms;
  std::vector<std::string> gathered(3);
  run_ranks(
      3,
      [&](int rank, ncclComm_t comm) {
        cudaStream_t stream;
        cudaStreamCreate(&stream);
        std::vector<std::int32_t> in(2), out(6, -1);
        for (int k = 0; k < 2; ++k) in[static_cast<std::size_t>(k)] = rank * 2 + k;
        try {
          reshard<greedy, broadcast>(comm, stream, dynamic_layout(dynamic_mesh{3}, dynamic_spec("S0"), dynamic_shape{6}),
                                     dynamic_layout(dynamic_mesh{3}, dynamic_spec("R"), dynamic_shape{6}),
                                     std::span<const std::int32_t>(in), std::span<std::int32_t>(out),
                                     reshard_options{.devices = device_map::same(), .devices_per_host = 1, .nccl_nonblocking = true});
          for (int k = 0; k < 6; ++k)
            if (out[static_cast<std::size_t>(k)] != k) gathered[static_cast<std::size_t>(rank)] = "wrong element";
        } catch (const std::exception& e) {
          gathered[static_cast<std::size_t>(rank)] = e.what();
        }
        cudaStreamDestroy(stream);
      },
      true);
  for (std::size_t r = 0; r < 3; ++r) CHECK(gathered[r] == "");
  CHECK(meshcast_nccl_emulation::nonblocking_comms - made_by_one_call > 3);  // the world's three, and groups
}

TEST_CASE("nonblocking: a member that never creates a group's communicator, or a peer that never posts, is a timeout") {
  using clock = std::chrono::steady_clock;
  const plan q = gather_plan();
  const schedule g = group_schedule(q);
  auto board = std::make_shared<thread_bootstrap::board>();
  const int aborted_before = meshcast_nccl_emulation::aborted_comms;
  std::vector<std::string> what(3);
  std::vector<int> timed_out(3, 0);
  std::vector<double> took(3, -1);
  run_ranks(
      3,
      [&](int rank, ncclComm_t comm) {
        std::vector<std::int32_t> in(2, rank), out(6, -1);
        const auto start = clock::now();
        try {
          if (rank == 2) {
            nccl_backend<stops_after_sharing> b(comm, nullptr, stops_after_sharing{thread_bootstrap{board}}, nccl_group_transfers,
                                                0.3, true);
            executor<nccl_backend<stops_after_sharing>> exec(b, q, g);
          } else {
            nccl_backend<thread_bootstrap> b(comm, nullptr, thread_bootstrap{board}, nccl_group_transfers, 0.3, true);
            executor<nccl_backend<thread_bootstrap>> exec(b, q, g);
          }
        } catch (const timeout_error& e) {
          what[static_cast<std::size_t>(rank)] = e.what();
          timed_out[static_cast<std::size_t>(rank)] = 1;
        } catch (const std::exception& e) {
          what[static_cast<std::size_t>(rank)] = e.what();
        }
        took[static_cast<std::size_t>(rank)] = std::chrono::duration<double>(clock::now() - start).count();
      },
      true);
  CHECK(what[2] == "this rank stops before it creates the group's communicator");
  for (std::size_t r = 0; r < 2; ++r) {
    CAPTURE(r);
    CAPTURE(what[r]);
    CHECK(timed_out[r] == 1);
    CHECK(what[r].find("ncclCommInitRankConfig on a nonblocking NCCL communicator was still in progress after 0.3 s") !=
          std::string::npos);
    CHECK(took[r] >= 0.3);
    CHECK(took[r] < 30);
  }
  // What the two members began is aborted (each on a thread of its own): wait for those, bounded.
  for (int k = 0; k < 1000 && meshcast_nccl_emulation::aborted_comms - aborted_before < 2; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(meshcast_nccl_emulation::aborted_comms - aborted_before >= 2);

  // Two devices swap halves; device 1 never runs: device 0's group of one send and one receive
  // goes on in the background for ever, and polling it gives up.
  const plan p = make_plan(dynamic_layout(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{8}),
                           dynamic_layout(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{8}),
                           {.devices = device_map::listed({1, 0})});
  const schedule s = solve(make_instance(p, network::alpa_testbed(default_hosts(2, 2, 1)), send_recv{}, {}), naive{});
  std::string lone, again_what;
  double lone_took = -1;
  run_ranks(
      2,
      [&](int rank, ncclComm_t comm) {
        if (rank == 1) return;
        std::vector<std::int32_t> in(4, rank), out(4, -1);
        const auto start = clock::now();
        try {
          nccl_backend<thread_bootstrap> b(comm, nullptr, thread_bootstrap{board}, nccl_group_transfers, 0.3, true);
          executor<nccl_backend<thread_bootstrap>> exec(b, p, s);
          exec.run(std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(out)));
          lone = "the run returned";
        } catch (const timeout_error& e) {
          lone = e.what();
        } catch (const std::exception& e) {
          lone = std::string("not a timeout: ") + e.what();
        }
        lone_took = std::chrono::duration<double>(clock::now() - start).count();
        try {  // the world is left in progress: a new backend over it says so (NCCL refuses its calls)
          nccl_backend<thread_bootstrap> again(comm, nullptr, thread_bootstrap{board}, nccl_group_transfers, 0.3, true);
          again_what = "made";
        } catch (const error& e) {
          again_what = e.what();
        }
      },
      true, true);
  CAPTURE(lone);
  CHECK(lone.find("ncclGroupEnd on a nonblocking NCCL communicator was still in progress after 0.3 s") != std::string::npos);
  CHECK(lone_took >= 0.3);
  CHECK(lone_took < 30);
  CHECK(again_what.find("the NCCL communicator is still in progress with a call that gave up") != std::string::npos);
}

TEST_CASE("the emulation refuses, as NCCL does, a call on a nonblocking communicator not yet polled to ncclSuccess") {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  REQUIRE(ncclCommInitRankConfig(&comm, 2, id, 0, &config) == ncclInProgress);  // rank 1 has not joined
  const int refused_before = meshcast_nccl_emulation::unsettled_calls;
  int rank = -1;
  CHECK(ncclCommUserRank(comm, &rank) == ncclInvalidArgument);
  std::int32_t x = 0;
  CHECK(ncclSend(&x, 4, ncclUint8, 1, comm, nullptr) == ncclInvalidArgument);
  CHECK(meshcast_nccl_emulation::unsettled_calls - refused_before == 2);
  CHECK(ncclCommAbort(comm) == ncclSuccess);
  meshcast_nccl_emulation::unsettled_calls = refused_before;  // this test's refusals were its point
}

TEST_CASE("nonblocking: a group communicator left in progress is aborted when destroyed, not destroyed") {
  // Devices 0 and 1 make a group; only device 0 broadcasts in it, outside a round: the poll gives
  // up, and the backend goes without a failed run's cancel.
  auto board = std::make_shared<thread_bootstrap::board>();
  const int aborted_before = meshcast_nccl_emulation::aborted_comms;
  const int finalized_before = meshcast_nccl_emulation::finalized_comms;
  std::vector<std::string> what(2);
  run_ranks(
      2,
      [&](int rank, ncclComm_t comm) {
        std::vector<std::byte> data(8);
        try {  // outside begin_round/end_round, each call goes to NCCL at once
          // 2 s: the group's creation, which must succeed, is bounded by it too
          nccl_backend<thread_bootstrap> b(comm, nullptr, thread_bootstrap{board}, nccl_group_transfers, 2, true);
          const std::vector<index_t> members{0, 1};
          auto g = b.make_group(members, 1);
          if (rank == 0) b.broadcast(data.data(), data.size(), 0, g);
        } catch (const timeout_error& e) {
          what[static_cast<std::size_t>(rank)] = e.what();
        }
      },
      true);  // run_ranks throws had the group's communicator been destroyed while in progress
  CHECK(what[0].find("ncclBroadcast on a nonblocking NCCL communicator was still in progress after 2 s") != std::string::npos);
  CHECK(what[1] == "");
  CHECK(meshcast_nccl_emulation::finalized_comms - finalized_before >= 1);  // rank 1's, settled: finalized, then destroyed
  for (int k = 0; k < 1000 && meshcast_nccl_emulation::aborted_comms - aborted_before < 1; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(meshcast_nccl_emulation::aborted_comms - aborted_before >= 1);
}

TEST_CASE("nonblocking: after an id exchange that timed out, the channel reports it and calls NCCL no more") {
  // The root of a group sends its id; the member never posts its receive. The root's agreement
  // then names the timeout and the communicator left in progress, instead of a refused call.
  std::vector<std::string> what(2);
  run_ranks(
      2,
      [&](int rank, ncclComm_t comm) {
        if (rank == 1) return;
        cudaStream_t stream;
        cudaStreamCreate(&stream);
        std::string problem;
        try {
          detail::nccl_channel channel(comm, stream, nccl_group_transfers, 0.3, true);
          ncclUniqueId id{};
          ncclGetUniqueId(&id);
          const std::vector<index_t> members{0, 1};
          try {
            nccl_comm_bootstrap{comm, stream, 0.3}.share(id, members, 0, 1);
          } catch (const std::exception& e) {
            problem = e.what();
          }
          channel.agree_or_throw(problem);
        } catch (const std::exception& e) {
          what[0] = e.what();
        }
        cudaStreamDestroy(stream);
      },
      true, true);  // run_ranks throws had the channel called NCCL on the communicator left in progress
  CAPTURE(what[0]);
  CHECK(what[0].find("ncclGroupEnd on a nonblocking NCCL communicator was still in progress after 0.3 s") != std::string::npos);
  CHECK(what[0].find("then the NCCL communicator is still in progress with a call that gave up") != std::string::npos);
}

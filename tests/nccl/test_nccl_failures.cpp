// The NCCL backend when things go wrong, over the emulated NCCL (threads and host memory, NCCL's
// blocking semantics): calls issued out of order deadlock and are caught, a run that throws
// mid-round leaves no group open, and every wait on the stream has a deadline.
#include <doctest/doctest.h>

#include <nccl.h>  // the emulation: this target puts tests/nccl/emulation first on the include path

#include <chrono>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <meshcast/exec/backend/nccl.hpp>
#include <meshcast/meshcast.hpp>
#include <meshcast/nccl.hpp>

#include "thread_bootstrap.hpp"

using namespace meshcast;

TEST_CASE("a schedule that ranks issue in different orders deadlocks without groups, and is caught") {
  // Two devices swap halves (same mesh, S0 -> S0 reversed by listing the destinations backwards).
  plan p = make_plan(dynamic_layout(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{8}),
                     dynamic_layout(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{8}),
                     {.devices = device_map::listed({1, 0})});
  network net = network::alpa_testbed(default_hosts(2, 2, 1));
  schedule s = solve(make_instance(p, net, send_recv{}, {.mode = execution::concurrent}), naive{});
  REQUIRE(s.transfers.size() == 2);
  // A backend that never groups: each call blocks like NCCL outside ncclGroupStart/End.
  struct ungrouped : nccl_backend<thread_bootstrap> {
    using nccl_backend<thread_bootstrap>::nccl_backend;
    void begin_round() {}
    void end_round() {}
  };
  static_assert(backend<ungrouped>);
  auto board = std::make_shared<thread_bootstrap::board>();
  std::vector<std::string> errors(2);
  run_ranks(2, [&](int rank, ncclComm_t comm) {
    // Rank 1 is handed the transfers in the opposite order: both now send before they receive.
    schedule mine = s;
    if (rank == 1) std::swap(mine.transfers[0], mine.transfers[1]), std::swap(mine.model[0], mine.model[1]);
    std::vector<std::byte> source(16), destination(16);
    try {
      ungrouped b(comm, nullptr, thread_bootstrap{board});
      executor<ungrouped> exec(b, p, mine);
      exec.run(source, destination);
    } catch (const error& e) {
      errors[rank] = e.what();
    }
  });
  CHECK(errors[0].find("deadlock") != std::string::npos);
  CHECK(errors[1].find("deadlock") != std::string::npos);
}

TEST_CASE("a run that throws inside a round leaves no NCCL group open and nothing half-issued") {
  // Two devices swap halves, so each posts one send and one receive in one round.
  plan p = make_plan(dynamic_layout(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{8}),
                     dynamic_layout(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{8}),
                     {.devices = device_map::listed({1, 0})});
  network net = network::alpa_testbed(default_hosts(2, 2, 1));
  for (execution mode : {execution::ordered, execution::concurrent}) {
    CAPTURE(to_string(mode));
    schedule s = solve(make_instance(p, net, send_recv{}, {.mode = mode}), naive{});
    // Rank 0's transport fails on its second call of the round, after the first was accepted.
    struct fails_second_call : nccl_backend<thread_bootstrap> {
      using nccl_backend<thread_bootstrap>::nccl_backend;
      int calls = 0;
      request send(const std::byte* d, std::size_t n, index_t peer, int tag) {
        if (++calls == 2) throw error("injected transport failure");
        return nccl_backend<thread_bootstrap>::send(d, n, peer, tag);
      }
      request recv(std::byte* d, std::size_t n, index_t peer, int tag) {
        if (++calls == 2) throw error("injected transport failure");
        return nccl_backend<thread_bootstrap>::recv(d, n, peer, tag);
      }
    };
    static_assert(backend<fails_second_call>);
    auto board = std::make_shared<thread_bootstrap::board>();
    std::latch failed(1);
    std::vector<std::string> first(2), second(2);
    std::vector<int> depth_after(2, -1), recorded_after(2, -1);
    run_ranks(2, [&](int rank, ncclComm_t comm) {
      std::vector<std::int32_t> in(4), out(4, -1);
      for (int k = 0; k < 4; ++k) in[static_cast<std::size_t>(k)] = rank * 4 + k;
      if (rank == 0) {
        try {
          fails_second_call b(comm, nullptr, thread_bootstrap{board});
          executor<fails_second_call> exec(b, p, s);
          exec.run(std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(out)));
        } catch (const error& e) {
          first[0] = e.what();
        }
        depth_after[0] = meshcast_nccl_emulation::group_depth;
        recorded_after[0] = static_cast<int>(meshcast_nccl_emulation::group_ops.size());
        failed.count_down();
      } else {
        failed.wait();  // rank 1 starts only now: a half-issued group of rank 0 would meet it
      }
      // A new executor on each rank, over the same communicator: every element must be the peer's.
      try {
        nccl_backend<thread_bootstrap> b(comm, nullptr, thread_bootstrap{board});
        executor<nccl_backend<thread_bootstrap>> exec(b, p, s);
        exec.run(std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(out)));
        for (int k = 0; k < 4; ++k)
          if (out[static_cast<std::size_t>(k)] != (1 - rank) * 4 + k) second[static_cast<std::size_t>(rank)] = "wrong element";
      } catch (const std::exception& e) {
        second[static_cast<std::size_t>(rank)] = e.what();
      }
    });
    CHECK(first[0] == "injected transport failure");
    CHECK(depth_after[0] == 0);     // no ncclGroupStart left open on the thread
    CHECK(recorded_after[0] == 0);  // and the accepted call never reached NCCL
    CHECK(second[0] == "");
    CHECK(second[1] == "");
  }
}

TEST_CASE("every wait on the stream has a deadline: a stuck stream or a failed communicator is an error, not a hang") {
  plan p = make_plan(dynamic_layout(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{8}),
                     dynamic_layout(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{8}),
                     {.devices = device_map::listed({1, 0})});
  network net = network::alpa_testbed(default_hosts(2, 2, 1));
  schedule s = solve(make_instance(p, net, send_recv{}, {}), naive{});
  auto board = std::make_shared<thread_bootstrap::board>();
  using clock = std::chrono::steady_clock;
  // stuck: the stream never finishes (a kernel waiting for a peer that never comes);
  // failed: the communicator reports an asynchronous error while the stream is stuck. No bound
  // (timeout 0) still polls the communicator: a failed one ends the wait at once, where
  // cudaStreamSynchronize waited for ever (the emulation gives up after 30 s) and asked NCCL nothing.
  struct stuck_case {
    bool failed;
    double timeout_s;
  };
  for (const stuck_case c : {stuck_case{false, 0.3}, stuck_case{true, 600}, stuck_case{true, 0}}) {
    CAPTURE(c.failed);
    CAPTURE(c.timeout_s);
    std::vector<std::string> what(2);
    std::vector<double> took(2, -1);
    std::vector<int> timed_out(2, 0);
    run_ranks(2, [&](int rank, ncclComm_t comm) {
      cudaStream_t stream;
      cudaStreamCreate(&stream);
      stream->stuck = true;
      std::vector<std::int32_t> in(4, rank), out(4, -1);
      const auto start = clock::now();
      try {
        nccl_backend<thread_bootstrap> b(comm, stream, thread_bootstrap{board}, nccl_group_transfers, c.timeout_s);
        executor<nccl_backend<thread_bootstrap>> exec(b, p, s);
        if (c.failed) comm->async_error = ncclRemoteError;  // during the run (a backend made over it says so at once)
        exec.run(std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(out)));
      } catch (const timeout_error& e) {
        what[static_cast<std::size_t>(rank)] = e.what();
        timed_out[static_cast<std::size_t>(rank)] = 1;
      } catch (const error& e) {
        what[static_cast<std::size_t>(rank)] = e.what();
      }
      took[static_cast<std::size_t>(rank)] = std::chrono::duration<double>(clock::now() - start).count();
      stream->stuck = false;
      cudaStreamDestroy(stream);
    }, false, c.failed);  // a world in error is left so
    for (std::size_t r = 0; r < 2; ++r) {
      CAPTURE(r);
      CAPTURE(what[r]);
      CHECK(took[r] < 20);  // 0.3 s, or at once on the asynchronous error; never the 600 s timeout
      if (c.failed) {
        CHECK(what[r].find("asynchronous error: remote process exited") != std::string::npos);
      } else {
        CHECK(timed_out[r] == 1);
        CHECK(took[r] >= 0.3);
        CHECK(what[r].find("made no progress for 0.3 s") != std::string::npos);
      }
      CHECK(what[r].find("ncclCommAbort") != std::string::npos);
    }
  }
  // The one call: the front end's own waits (the ranks' agreement) have the deadline too, and
  // nothing of the stuck stream is freed while it is stuck (cudaFree would wait for that work).
  const int frees_before = meshcast_frees_while_stuck, copies_before = meshcast_host_copies_while_busy;
  std::vector<int> timed_out(2, 0);
  run_ranks(2, [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    stream->stuck = true;
    std::vector<std::int32_t> in(4, rank), out(4, -1);
    try {
      reshard(comm, stream, dynamic_layout(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{8}),
              dynamic_layout(dynamic_mesh{2}, dynamic_spec("R"), dynamic_shape{8}), std::span<const std::int32_t>(in),
              std::span<std::int32_t>(out), reshard_options{.devices = device_map::same(), .timeout_s = 0.3});
    } catch (const timeout_error&) {
      timed_out[static_cast<std::size_t>(rank)] = 1;
    } catch (const std::exception&) {
    }
    stream->stuck = false;
    cudaStreamDestroy(stream);
  });
  CHECK(timed_out[0] == 1);
  CHECK(timed_out[1] == 1);
  CHECK(meshcast_frees_while_stuck == frees_before);
  CHECK(meshcast_host_copies_while_busy == copies_before);  // none waits on the stuck work
  // A timeout that is not a number of seconds is named.
  run_ranks(1, [&](int, ncclComm_t comm) {
    CHECK_THROWS_WITH_AS(nccl_backend<thread_bootstrap>(comm, nullptr, thread_bootstrap{board}, nccl_group_transfers, -1),
                         doctest::Contains("nccl_backend's timeout_s"), error);
    // The waits' own: a negative one, in a public field (cuda_memory, nccl_comm_bootstrap), was no
    // bound at all.
    CHECK_THROWS_WITH_AS(cuda_memory({nullptr, -1}).synchronize(), doctest::Contains("the CUDA stream's timeout (-1 s)"), error);
    CHECK_THROWS_WITH_AS(detail::nccl_settle(ncclInProgress, comm, "ncclGroupEnd", -1),
                         doctest::Contains("the NCCL timeout (-1 s)"), error);
  });
}

TEST_CASE("the deadline is on progress: a slow run whose rounds keep finishing is not cut; a stuck one aborts its groups") {
  using clock = std::chrono::steady_clock;
  // Four devices gather a tensor: every device sends its tile to three and receives three, each
  // transfer its own group (group_transfers 1), so a run has six rounds on every device.
  plan p = make_plan(dynamic_layout(dynamic_mesh{4}, dynamic_spec("S0"), dynamic_shape{8}),
                     dynamic_layout(dynamic_mesh{4}, dynamic_spec("R"), dynamic_shape{8}), {.devices = device_map::same()});
  network net = network::alpa_testbed(default_hosts(4, 4, 1));
  schedule s = solve(make_instance(p, net, send_recv{}, {.mode = execution::concurrent}), naive{});
  auto board = std::make_shared<thread_bootstrap::board>();
  std::vector<std::string> problems(4);
  std::vector<double> took(4, 0);
  run_ranks(4, [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    stream->event_cost = std::chrono::milliseconds(150);  // each round 0.15 s: 0.9 s in all, against 0.4 s
    std::vector<std::int32_t> in(2), out(8, -1);
    for (int k = 0; k < 2; ++k) in[static_cast<std::size_t>(k)] = rank * 2 + k;
    const auto start = clock::now();
    try {
      nccl_backend<thread_bootstrap> b(comm, stream, thread_bootstrap{board}, 1, 0.4);
      executor<nccl_backend<thread_bootstrap>> exec(b, p, s);
      exec.run(std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(out)));
      for (int k = 0; k < 8; ++k)
        if (out[static_cast<std::size_t>(k)] != k) problems[static_cast<std::size_t>(rank)] = "wrong element";
    } catch (const std::exception& e) {
      problems[static_cast<std::size_t>(rank)] = e.what();
    }
    took[static_cast<std::size_t>(rank)] = std::chrono::duration<double>(clock::now() - start).count();
    cudaStreamDestroy(stream);
  });
  for (std::size_t r = 0; r < 4; ++r) {
    CAPTURE(r);
    CHECK(problems[r] == "");
    CHECK(took[r] > 0.4);  // longer than the timeout in all: only the lack of progress counts
  }
  // Broadcast groups over a stream that never finishes: the run times out, and the groups'
  // communicators are aborted, not destroyed (ncclCommDestroy would wait for their stuck work).
  plan q = make_plan(dynamic_layout(dynamic_mesh{3}, dynamic_spec("S0"), dynamic_shape{6}),
                     dynamic_layout(dynamic_mesh{3}, dynamic_spec("R"), dynamic_shape{6}), {.devices = device_map::same()});
  schedule g = solve(make_instance(q, network::alpa_testbed(default_hosts(3, 3, 1)), broadcast{.how = transfer_kind::group_broadcast},
                                   {.mode = execution::concurrent}),
                     naive{});
  const int aborted_before = meshcast_nccl_emulation::aborted_comms;
  std::vector<int> timed_out(3, 0), had_groups(3, 0);
  run_ranks(3, [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    stream->stuck = true;
    std::vector<std::int32_t> in(2, rank), out(6, -1);
    try {
      nccl_backend<thread_bootstrap> b(comm, stream, thread_bootstrap{board}, nccl_group_transfers, 0.3);
      executor<nccl_backend<thread_bootstrap>> exec(b, q, g);
      had_groups[static_cast<std::size_t>(rank)] = 1;
      exec.run(std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(out)));
    } catch (const timeout_error&) {
      timed_out[static_cast<std::size_t>(rank)] = 1;
    } catch (const std::exception&) {
    }
    stream->stuck = false;
    cudaStreamDestroy(stream);
  });
  for (std::size_t r = 0; r < 3; ++r) {
    CAPTURE(r);
    CHECK(had_groups[r] == 1);
    CHECK(timed_out[r] == 1);
  }
  // Every group member aborts its communicators, each on a thread of its own (NCCL's abort waits
  // for the whole stream): wait for those threads, within a bound.
  for (int k = 0; k < 1000 && meshcast_nccl_emulation::aborted_comms - aborted_before < 3; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(meshcast_nccl_emulation::aborted_comms - aborted_before >= 3);
}

// Greedy after 4 s of "search": within an 8 s time limit, longer than a 3 s timeout (which every
// other wait of the call, all of which must succeed, has: wide enough under sanitizers and load).
struct slow_greedy {
  static constexpr std::string_view name = "slow_greedy";
  const char* supports(const instance& in) const { return greedy{}.supports(in); }
  solver_result solve(const instance& in, const solver_options& o) const {
    std::this_thread::sleep_for(std::chrono::milliseconds(4000));
    return greedy{}.solve(in, o);
  }
};

TEST_CASE("the NCCL front end waits for rank 0's solve up to the solver's time limit, as MPI's does") {
  // The others wait in the agreement after the solve; under the timeout alone they failed with a
  // timeout_error though no rank had stopped. A nonblocking world: the emulation's blocking calls
  // wait without a deadline of their own, where NCCL's return and leave the wait to meshcast.
  const int n = 3;
  dynamic_layout src(dynamic_mesh{n}, dynamic_spec("S0"), dynamic_shape{9}), dst(dynamic_mesh{n}, dynamic_spec("R"), dynamic_shape{9});
  std::vector<std::string> problems(n, "not run");
  run_ranks(n, [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    std::vector<std::int32_t> in(3), out(9, -1);
    for (int k = 0; k < 3; ++k) in[static_cast<std::size_t>(k)] = 3 * rank + k;
    try {
      reshard<slow_greedy, send_recv>(
          comm, stream, src, dst, in, out,
          reshard_options{.devices = device_map::same(), .time_limit_s = 8, .timeout_s = 3, .nccl_nonblocking = true});
      problems[static_cast<std::size_t>(rank)] = "";
      for (int k = 0; k < 9; ++k)
        if (out[static_cast<std::size_t>(k)] != k) problems[static_cast<std::size_t>(rank)] = "wrong element";
    } catch (const std::exception& e) {
      problems[static_cast<std::size_t>(rank)] = e.what();
    }
    cudaStreamDestroy(stream);
  }, true);
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    CHECK(problems[static_cast<std::size_t>(r)] == "");
  }
}

// A failed rank reports its own error when its stream still holds the failed work and the agreement
// times out behind it (that timeout named nothing else; found by review); a thread not on its
// communicator's device is refused.
TEST_CASE("NCCL: a failed rank's message survives a stuck stream; a thread on the wrong device is refused") {
  // No copy with host memory is issued on a busy stream (on a GPU it may wait with no deadline).
  const int copies_before = meshcast_host_copies_while_busy;
  std::vector<std::string> what(2);
  std::vector<double> took(2, -1);
  run_ranks(2, [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;  // outlives the channel, whose buffer asks it whether it is busy
    cudaStreamCreate(&stream);
    auto ch = std::make_unique<detail::nccl_channel>(comm, stream, nccl_group_transfers, 0.5);
    stream->stuck = true;
    const auto start = std::chrono::steady_clock::now();
    try {
      ch->agree_or_throw(rank == 1 ? "rank 1's own failure" : "");
    } catch (const std::exception& e) {
      what[static_cast<std::size_t>(rank)] = e.what();
    }
    took[static_cast<std::size_t>(rank)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stream->stuck = false;
    ch.reset();
    cudaStreamDestroy(stream);
  });
  CAPTURE(what[1]);
  CHECK(what[1].find("rank 1's own failure; then, telling the other ranks: the work on the CUDA stream made no progress") == 0);
  CHECK((took[1] < 20 && !what[0].empty()));  // its 0.5 s timeout, never a hang; the other rank fails too
  // A busy stream that drains (the caller's kernels): every rank learns the message (found by review).
  run_ranks(2, [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;  // outlives the channel, whose buffer asks it whether it is busy
    cudaStreamCreate(&stream);
    auto ch = std::make_unique<detail::nccl_channel>(comm, stream, nccl_group_transfers, 3);
    stream->busy_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    try {
      ch->agree_or_throw(rank == 1 ? "rank 1's own failure" : "");
      what[static_cast<std::size_t>(rank)] = "no error";
    } catch (const std::exception& e) {
      what[static_cast<std::size_t>(rank)] = e.what();
    }
    ch.reset();
    cudaStreamDestroy(stream);
  });
  CHECK(what[0] == "rank 1 reports: rank 1's own failure");
  CHECK(what[1] == "rank 1's own failure");
  CHECK(meshcast_host_copies_while_busy == copies_before);

  run_ranks(1, [&](int, ncclComm_t comm) {
    cudaSetDevice(1);  // the communicator was made on device 0
    auto board = std::make_shared<thread_bootstrap::board>();
    const char* says = "the NCCL communicator is on CUDA device 0 but this thread's current device is 1: call cudaSetDevice(0)";
    CHECK_THROWS_WITH_AS(nccl_backend<thread_bootstrap>(comm, nullptr, thread_bootstrap{board}), doctest::Contains(says), error);
    CHECK_THROWS_WITH_AS(detail::nccl_channel(comm, nullptr), doctest::Contains(says), error);
    cudaSetDevice(0);
    CHECK_NOTHROW(detail::nccl_channel(comm, nullptr));
  });
}

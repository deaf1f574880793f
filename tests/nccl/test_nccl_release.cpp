// Device memory refused to one rank over the emulated NCCL (threads and host memory; the
// emulation's cudaMalloc refuses a size on the rank that asks, meshcast_refused_malloc_bytes):
// release_staging frees a resharder's message buffers between runs and the next run makes them
// again; a rank without room for them, for a benchmark job's device shards, or for the schedule
// rank 0 shares at construction, fails every rank at once (an agreement) rather than leaving the
// others in NCCL until their timeout, and the resharder runs again once the room is back; so does
// a run from a thread on another CUDA device (collective_channel::problem_here). The broadcast
// groups' ids travel through the channel's buffer, so a rank without room for one more still runs.
// After its first run, a resharder's runs allocate nothing from the C++ heap (count_new.cpp).
#include <doctest/doctest.h>

#include <nccl.h>  // the emulation: this target puts tests/nccl/emulation first on the include path

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <meshcast/api/benchmark_nccl.hpp>
#include <meshcast/meshcast.hpp>
#include <meshcast/nccl.hpp>

#include "cli/fill.hpp"
#include "thread_bootstrap.hpp"
#ifdef MESHCAST_TEST_COUNTS_NEW
#include "count_new.hpp"
#endif

using namespace meshcast;

namespace {

constexpr int ranks = 4;
constexpr double timeout_s = 60;  // a failure that waited for it instead of the agreement shows

// Rows to columns on four devices, two per host: every rank packs and receives through buffers.
std::vector<tensor_layouts> rows_to_columns() {
  const dynamic_shape shape{12, 10};
  return {tensor_layouts{dynamic_layout(dynamic_mesh{ranks}, dynamic_spec("S0,R"), shape).value(),
                         dynamic_layout(dynamic_mesh{ranks}, dynamic_spec("R,S0"), shape).value(), 4}};
}

reshard_options options() {
  return {.devices = device_map::same(), .devices_per_host = 2, .timeout_s = timeout_s};
}

// One run on this rank's shards; "" when every element arrived, else what went wrong.
template <class Resharder>
std::string run_and_check(Resharder& r, int rank) {
  const plan& p = r.plans()[0];
  const auto eb = static_cast<std::size_t>(p.element_bytes);
  std::vector<std::byte> in(r.source_elements() * eb), out(r.destination_elements() * eb, std::byte{0x55});
  cli::fill(p.source_tile(rank), p.src.shape, eb, in);
  const std::span<const std::byte> from(in);
  const std::span<std::byte> to(out);
  r(std::span<const std::span<const std::byte>>(&from, 1), std::span<const std::span<std::byte>>(&to, 1));
  return cli::count_wrong(p.destination_tile(rank), p.src.shape, eb, out) ? "wrong elements" : "";
}

// What one rank saw of a step that one rank could not do: the error the step threw (what it did
// when it threw none), how long it took, and what went wrong after the fault was lifted ("").
struct outcome {
  std::string failed = "not reached", again;
  double took = 0;
};

// Runs `body(rank, comm, stream, its outcome)` on every rank, each with a stream of its own; an
// exception that escapes the body is that rank's `again`. The fault is lifted after each body.
template <class Body>
std::vector<outcome> on_every_rank(Body body) {
  std::vector<outcome> seen(ranks);
  run_ranks(ranks, [&](int rank, ncclComm_t comm) {
    outcome& o = seen[static_cast<std::size_t>(rank)];
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    try {
      body(rank, comm, stream, o);
    } catch (const std::exception& e) {
      o.again = e.what();
    }
    meshcast_refused_malloc_bytes = 0;
    cudaSetDevice(0);
    cudaStreamDestroy(stream);
  });
  return seen;
}

// `step()`'s meshcast::error into `o.failed` (else `ran`, what it did), its seconds into `o.took`.
template <class Step>
void attempt(outcome& o, Step step, std::string ran) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    step();
    o.failed = std::move(ran);
  } catch (const error& e) {
    o.failed = e.what();
  }
  o.took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Every rank failed saying `says` (the agreement named the rank at fault), long before the
// timeout, and what followed the lifted fault went right.
void check_every_rank_failed(const std::vector<outcome>& seen, const std::string& says) {
  for (std::size_t r = 0; r < ranks; ++r) {
    CAPTURE(r);
    CAPTURE(seen[r].failed);
    CHECK(seen[r].failed.find(says) != std::string::npos);
    CHECK(seen[r].took < timeout_s / 2);
    CHECK(seen[r].again == "");
  }
}

}  // namespace

TEST_CASE("release_staging over NCCL: the buffers are freed between runs and made again, ranks releasing at different times") {
  std::vector<std::string> problems(ranks);
  std::vector<std::size_t> staging(ranks), released(ranks, 1), after(ranks);
  run_ranks(ranks, [&](int rank, ncclComm_t comm) {
    const auto me = static_cast<std::size_t>(rank);
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    try {
      nccl_batch_resharder<> r(comm, stream, rows_to_columns(), options());
      staging[me] = r.staging_bytes();
      for (int round = 0; round < 4 && problems[me].empty(); ++round) {
        if (round % 2 == 0 || rank % 2 == 0) r.release_staging();  // rounds 1 and 3: the even ranks only
        if (round == 0) released[me] = r.staging_bytes();
        problems[me] = run_and_check(r, rank);
        if (r.staging_bytes() != staging[me]) problems[me] = "round " + std::to_string(round) + ": the buffers were not made again";
      }
      after[me] = r.staging_bytes();
    } catch (const std::exception& e) {
      problems[me] = e.what();
    }
    cudaStreamDestroy(stream);
  });
  for (std::size_t r = 0; r < ranks; ++r) {
    CAPTURE(r);
    CHECK(problems[r] == "");
    CHECK(staging[r] > 0);
    CHECK(released[r] == 0);
    CHECK(after[r] == staging[r]);
  }
}

TEST_CASE("one rank without room for its message buffers again fails every rank's run at once, and the next run works") {
  const auto seen = on_every_rank([](int rank, ncclComm_t comm, cudaStream_t stream, outcome& o) {
    nccl_batch_resharder<> r(comm, stream, rows_to_columns(), options());
    const std::size_t staging = r.staging_bytes();
    r.release_staging();
    if (rank == 1) meshcast_refused_malloc_bytes = staging;
    attempt(o, [&] { (void)run_and_check(r, rank); }, "ran");
    meshcast_refused_malloc_bytes = 0;
    o.again = run_and_check(r, rank);
  });
  check_every_rank_failed(seen, "device 1: cudaMalloc failed: out of memory");
}

TEST_CASE("a benchmark job over NCCL: a rank without room for its device shards fails every rank's run at once") {
  const dynamic_shape shape{64, 32};
  const dynamic_layout src(dynamic_mesh{ranks}, dynamic_spec("S0,R"), shape), dst(dynamic_mesh{2, 2}, dynamic_spec("S1,S0"), shape);
  const auto seen = on_every_rank([&](int rank, ncclComm_t comm, cudaStream_t stream, outcome& o) {
    timed_job job = nccl_reshard_job(comm, stream, src, dst, sizeof(float), options());
    if (rank == 2) meshcast_refused_malloc_bytes = 16 * 32 * sizeof(float);  // its source shard
    attempt(o, [&] {
      job.acquire();  // as a session does: acquire and clear leave the failure to the run
      job.clear();
      job.run();
    }, "ran");
    meshcast_refused_malloc_bytes = 0;
    job.clear();
    job.run();
    if (job.wrong() != 0) o.again = "wrong elements";
    job.release();
  });
  check_every_rank_failed(seen, "device 2: cudaMalloc failed: out of memory");
}

TEST_CASE("one rank without room for the schedule rank 0 shares fails every rank's construction at once") {
  std::vector<tensor_layouts> many;  // a schedule too long for the channel's scratch buffer
  for (int k = 0; k < 40; ++k) {
    const dynamic_shape shape{12 + k, 10};
    many.push_back({dynamic_layout(dynamic_mesh{ranks}, dynamic_spec("S0,R"), shape).value(),
                    dynamic_layout(dynamic_mesh{ranks}, dynamic_spec("R,S0"), shape).value(), 4});
  }
  std::vector<std::size_t> wire_bytes(ranks);
  const auto seen = on_every_rank([&](int rank, ncclComm_t comm, cudaStream_t stream, outcome& o) {
    const auto me = static_cast<std::size_t>(rank);
    wire_bytes[me] = to_wire(nccl_batch_resharder<>(comm, stream, many, options()).schedule()).size() * sizeof(std::int64_t);
    if (rank == 2) meshcast_refused_malloc_bytes = wire_bytes[me];
    attempt(o, [&] { nccl_batch_resharder<> r(comm, stream, many, options()); }, "built");
  });
  for (std::size_t b : wire_bytes) CHECK(b > 4096);  // the words need a buffer of their own, made before the broadcast
  check_every_rank_failed(seen, "device 2: cudaMalloc failed: out of memory");
}

TEST_CASE("a run from a thread on another CUDA device fails every rank before it makes anything there") {
  const auto seen = on_every_rank([](int rank, ncclComm_t comm, cudaStream_t stream, outcome& o) {
    nccl_batch_resharder<> r(comm, stream, rows_to_columns(), options());
    r.release_staging();  // the next run would make its buffers on this thread's current device
    if (rank == 3) cudaSetDevice(1);  // the communicator was made on device 0
    attempt(o, [&] { (void)run_and_check(r, rank); }, "ran");
    if (rank == 3 && r.staging_bytes() != 0) o.failed += " (and it made its buffers on device 1)";
    cudaSetDevice(0);
    o.again = run_and_check(r, rank);
  });
  check_every_rank_failed(seen, "device 3: the NCCL communicator is on CUDA device 0 but this thread's current device is 1");
  for (const outcome& o : seen) CHECK(o.failed.find("made its buffers") == std::string::npos);
}

TEST_CASE("the broadcast groups' ids travel through room made before the executor's setup agreement, not through a new buffer") {
  // Rows to every device: a replication across both hosts, sent as NCCL group broadcasts, whose
  // ids the groups' roots send over the world communicator while the executor connects them.
  const dynamic_shape shape{12, 10};
  const std::vector<tensor_layouts> replicate{{dynamic_layout(dynamic_mesh{ranks}, dynamic_spec("S0,R"), shape).value(),
                                               dynamic_layout(dynamic_mesh{ranks}, dynamic_spec("R,R"), shape).value(), 4}};
  std::vector<std::size_t> groups(ranks);
  const auto seen = on_every_rank([&](int rank, ncclComm_t comm, cudaStream_t stream, outcome& o) {
    if (rank == 1) meshcast_refused_malloc_bytes = sizeof(ncclUniqueId);  // no room for an id of its own
    attempt(o, [&] {
      nccl_batch_resharder<greedy, broadcast> r(comm, stream, replicate, options(), greedy{},
                                                broadcast{.how = transfer_kind::group_broadcast});
      for (const transfer& t : r.schedule().transfers) groups[static_cast<std::size_t>(rank)] += t.kind == transfer_kind::group_broadcast;
      if (const std::string wrong = run_and_check(r, rank); !wrong.empty()) throw error(wrong);
    }, "ran");
  });
  for (std::size_t r = 0; r < ranks; ++r) {
    CAPTURE(r);
    CHECK(groups[r] > 0);
    CHECK(seen[r].failed == "ran");
    CHECK(seen[r].took < timeout_s / 2);
  }
}

#ifdef MESHCAST_TEST_COUNTS_NEW
TEST_CASE("after its first run, a resharder's runs over NCCL allocate nothing from the C++ heap") {
  // Each agreement's all-gather had made a vector for its answers, each wait on the stream a
  // string naming its timeout (at every sign of progress too), and ordered mode the order of its
  // rounds: a rank without room for one failed alone in the middle of a run, the others waiting
  // in NCCL until their timeout. The emulated NCCL's own allocations are left out.
  const dynamic_shape shape{12, 10};
  const std::vector<tensor_layouts> replicate{{dynamic_layout(dynamic_mesh{ranks}, dynamic_spec("S0,R"), shape).value(),
                                               dynamic_layout(dynamic_mesh{ranks}, dynamic_spec("R,R"), shape).value(), 4}};
  for (const execution mode : {execution::ordered, execution::concurrent})
    for (const bool groups : {false, true}) {
      CAPTURE(mode == execution::ordered);
      CAPTURE(groups);
      std::vector<std::string> problems(ranks);
      std::vector<std::size_t> counted(ranks, 1);
      run_ranks(ranks, [&](int rank, ncclComm_t comm) {
        const auto me = static_cast<std::size_t>(rank);
        cudaStream_t stream;
        cudaStreamCreate(&stream);
        try {
          reshard_options o = options();
          o.mode = mode;
          nccl_batch_resharder<greedy, broadcast> r(comm, stream, groups ? replicate : rows_to_columns(), o, greedy{},
                                                    broadcast{.how = transfer_kind::group_broadcast});
          problems[me] = run_and_check(r, rank);  // the first run
          const plan& p = r.plans()[0];
          const auto eb = static_cast<std::size_t>(p.element_bytes);
          std::vector<std::byte> in(r.source_elements() * eb), out(r.destination_elements() * eb, std::byte{0x55});
          cli::fill(p.source_tile(rank), p.src.shape, eb, in);
          const std::span<const std::byte> from(in);
          const std::span<std::byte> to(out);
          const std::span<const std::span<const std::byte>> ins(&from, 1);
          const std::span<const std::span<std::byte>> outs(&to, 1);
          meshcast_test::counted_new = 0;
          meshcast_test::counting_new = true;
          for (int run = 0; run < 3; ++run) r(ins, outs);
          meshcast_test::counting_new = false;
          counted[me] = meshcast_test::counted_new;
          if (problems[me].empty() && cli::count_wrong(p.destination_tile(rank), p.src.shape, eb, out)) problems[me] = "wrong elements";
        } catch (const std::exception& e) {
          meshcast_test::counting_new = false;
          problems[me] = e.what();
        }
        cudaStreamDestroy(stream);
      });
      for (std::size_t r = 0; r < ranks; ++r) {
        CAPTURE(r);
        CHECK(problems[r] == "");
        CHECK(counted[r] == 0);
      }
    }
}
#endif

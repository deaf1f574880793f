// The NCCL backend's call sequence, run over the emulated NCCL (threads and host memory) with
// NCCL's blocking semantics: random reshards for every strategy, and deadlock detection.
#include <doctest/doctest.h>

#include <nccl.h>  // the emulation: this target puts tests/nccl/emulation first on the include path

#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <meshcast/exec/backend/nccl.hpp>
#include <meshcast/api/benchmark_nccl.hpp>
#include <meshcast/api/manifest.hpp>
#include <meshcast/meshcast.hpp>
#include <meshcast/nccl.hpp>

#include "cli/fill.hpp"
#include "row_major_values.hpp"
#include "thread_bootstrap.hpp"

using namespace meshcast;

namespace {

static_assert(nccl_bootstrap<thread_bootstrap>);
static_assert(backend<nccl_backend<thread_bootstrap>>);

std::size_t tensor_bytes_of(const plan& p) { return static_cast<std::size_t>(p.element_bytes); }

template <class Strategy, class Solver>
void reshard_case(const plan& p, bool split, Strategy st, Solver solver, execution mode) {
  network net = network::alpa_testbed(default_hosts(p.device_count, static_cast<index_t>(p.src_devices.size()), 2));
  instance in = make_instance(p, net, st, {.split_replicas = split, .mode = mode});
  schedule s = solve(in, solver);
  auto board = std::make_shared<thread_bootstrap::board>();
  std::mutex results;
  std::vector<std::string> problems;
  run_ranks(static_cast<int>(p.device_count), [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    std::string problem;
    try {
      nccl_backend<thread_bootstrap> b(comm, stream, thread_bootstrap{board});
      executor<nccl_backend<thread_bootstrap>> exec(b, p, s);
      const auto eb = static_cast<std::size_t>(p.element_bytes);
      std::vector<std::byte> source(exec.source_bytes()), destination(exec.destination_bytes(), std::byte{0x77});
      const box src_tile = p.source_tile(rank), dst_tile = p.destination_tile(rank);
      if (!source.empty()) cli::fill(src_tile, p.src.shape, eb, source);
      auto pristine = source;
      exec.run(source, destination);
      if (source != pristine) problem = "source written";
      else if (!destination.empty() && cli::count_wrong(dst_tile, p.src.shape, eb, destination)) problem = "wrong elements";
    } catch (const std::exception& e) {
      problem = e.what();
    }
    cudaStreamDestroy(stream);
    std::lock_guard<std::mutex> l(results);
    if (!problem.empty()) problems.push_back("rank " + std::to_string(rank) + ": " + problem);
  });
  INFO(Strategy::name, " ", to_string(mode), " ", p.src.to_string(), " -> ", p.dst.to_string());
  CHECK(problems.empty());
  for (const auto& x : problems) MESSAGE(x);
}

}  // namespace

TEST_CASE("NCCL backend reshards correctly over emulated NCCL (random layouts, every strategy)") {
  std::mt19937_64 rng(42);
  const char* specs2[] = {"S0,R", "R,S0", "S1,S0", "S0,S1", "R,R", "S01,R", "R,S10"};
  for (int c = 0; c < 12; ++c) {
    dynamic_shape sh{1 + static_cast<index_t>(rng() % 9), 1 + static_cast<index_t>(rng() % 9)};
    dynamic_mesh sm{1 + static_cast<index_t>(rng() % 2), 1 + static_cast<index_t>(rng() % 3)};
    dynamic_mesh dm{1 + static_cast<index_t>(rng() % 2), 1 + static_cast<index_t>(rng() % 3)};
    plan_options o;
    if (c % 3 == 1 && sm.size() == dm.size()) o.devices = device_map::same();
    plan p = make_plan(dynamic_layout(sm, dynamic_spec(specs2[rng() % 7]), sh),
                       dynamic_layout(dm, dynamic_spec(specs2[rng() % 7]), sh), o);
    const bool split = rng() % 2;
    for (execution mode : {execution::ordered, execution::concurrent}) {
      reshard_case(p, split, send_recv{}, greedy{}, mode);
      reshard_case(p, split, send_recv_allgather{}, open_shop{}, mode);
      reshard_case(p, split, broadcast{}, greedy{}, mode);
      reshard_case(p, split, broadcast{.how = transfer_kind::group_broadcast}, naive{}, mode);
    }
  }
}

TEST_CASE("emulated NCCL: sends outside a group deadlock, as on GPUs, and the deadlock is reported") {
  std::vector<ncclResult_t> outside(2), inside(2);
  run_ranks(2, [&](int rank, ncclComm_t comm) {
    std::byte out[8]{};
    // Both ranks send first: each ncclSend waits for a receive that is never posted.
    outside[rank] = ncclSend(out, 8, ncclUint8, 1 - rank, comm, nullptr);
  });
  CHECK(outside[0] == ncclInternalError);
  CHECK(outside[1] == ncclInternalError);
  CHECK(std::string(ncclGetErrorString(ncclInternalError)).find("deadlock") != std::string::npos);
  run_ranks(2, [&](int rank, ncclComm_t comm) {
    std::byte out[8]{}, in[8]{};
    out[0] = static_cast<std::byte>(rank + 1);
    ncclGroupStart();
    ncclSend(out, 8, ncclUint8, 1 - rank, comm, nullptr);
    ncclRecv(in, 8, ncclUint8, 1 - rank, comm, nullptr);
    inside[rank] = ncclGroupEnd();
    CHECK(in[0] == static_cast<std::byte>(2 - rank));
  });
  CHECK(inside[0] == ncclSuccess);
  CHECK(inside[1] == ncclSuccess);
}

TEST_CASE("a batch in one call over NCCL, as over MPI: two tensors, int32 and double, every element right") {
  const int n = 4;
  dynamic_layout a_src(dynamic_mesh{n}, dynamic_spec("S0,R"), dynamic_shape{10, 6}), a_dst(dynamic_mesh{n}, dynamic_spec("R,S0"), dynamic_shape{10, 6});
  dynamic_layout b_src(dynamic_mesh{2, 2}, dynamic_spec("S0,S1"), dynamic_shape{4, 8}), b_dst(dynamic_mesh{2, 2}, dynamic_spec("R,S01"), dynamic_shape{4, 8});
  std::vector<std::string> problems(n);
  run_ranks(n, [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    // Element (i, j) of a tensor with `cols` columns holds i * cols + j (plus 0.5 for the doubles).
    auto fill = [&](const dynamic_layout& l, auto& v, index_t cols, double offset) {
      const box t = l.tile(rank);
      v.assign(static_cast<std::size_t>(t.volume()), 0);
      std::size_t k = 0;
      for (index_t i = t[0].lo; i < t[0].hi; ++i)
        for (index_t j = t[1].lo; j < t[1].hi; ++j) v[k++] = static_cast<std::remove_reference_t<decltype(v[0])>>(i * cols + j + offset);
    };
    std::vector<std::int32_t> a_in, a_out, a_want;
    std::vector<double> b_in, b_out, b_want;
    fill(a_src, a_in, 6, 0), fill(a_dst, a_want, 6, 0), fill(b_src, b_in, 8, 0.5), fill(b_dst, b_want, 8, 0.5);
    a_out.assign(a_want.size(), -1), b_out.assign(b_want.size(), -1);
    try {
      batch tensors;
      tensors.add(a_src, a_dst, std::span<const std::int32_t>(a_in), std::span<std::int32_t>(a_out));
      tensors.add(b_src, b_dst, std::span<const double>(b_in), std::span<double>(b_out));
      reshard(comm, stream, tensors, reshard_options{.devices = device_map::same()});
      if (a_out != a_want || b_out != b_want) problems[static_cast<std::size_t>(rank)] = "wrong element";
    } catch (const std::exception& e) {
      problems[static_cast<std::size_t>(rank)] = e.what();
    }
    cudaStreamDestroy(stream);
  });
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    CHECK(problems[static_cast<std::size_t>(r)] == "");
  }
}

TEST_CASE("one call over NCCL: meshcast::reshard(comm, stream, ...) and its misuse, on every rank") {
  const int n = 4;
  dynamic_layout src(dynamic_mesh{n}, dynamic_spec("S0,R"), dynamic_shape{10, 6}), dst(dynamic_mesh{n}, dynamic_spec("R,S0"), dynamic_shape{10, 6});
  std::vector<std::string> problems(n), misuse(n);
  run_ranks(n, [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    const box a = src.tile(rank), b = dst.tile(rank);
    std::vector<std::int32_t> in = meshcast_test::row_major_shard(a, 6), out(static_cast<std::size_t>(b.volume()), -1);
    try {
      for (execution mode : {execution::ordered, execution::concurrent}) {
        reshard(comm, stream, src, dst, std::span<const std::int32_t>(in), std::span<std::int32_t>(out),
                reshard_options{.devices = device_map::same(), .mode = mode});
        if (!meshcast_test::holds_row_major(b, 6, out)) problems[static_cast<std::size_t>(rank)] = "wrong element";
      }
    } catch (const std::exception& e) {
      problems[static_cast<std::size_t>(rank)] = e.what();
    }
    try {  // rank 2's destination shard is too short: every rank fails
      std::vector<std::int32_t> short_out(rank == 2 ? 1 : out.size());
      reshard(comm, stream, src, dst, in, short_out, reshard_options{.devices = device_map::same()});
    } catch (const error& e) {
      misuse[static_cast<std::size_t>(rank)] = e.what();
    }
    cudaStreamDestroy(stream);
  });
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    CHECK(problems[static_cast<std::size_t>(r)] == "");
    CHECK(misuse[static_cast<std::size_t>(r)].find("elements") != std::string::npos);
  }
}

TEST_CASE("the NCCL front end is MPI's: ranks given different options, or a bad timeout, fail alike on every rank") {
  const int n = 3;
  dynamic_layout src(dynamic_mesh{n}, dynamic_spec("S0"), dynamic_shape{9}), dst(dynamic_mesh{n}, dynamic_spec("R"), dynamic_shape{9});
  std::vector<std::string> differ(n), bad_timeout(n);
  run_ranks(n, [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    std::vector<std::int32_t> in(3), out(9);
    try {  // rank 1 asks for the other execution mode
      reshard(comm, stream, src, dst, in, out,
              reshard_options{.devices = device_map::same(), .mode = rank == 1 ? execution::concurrent : execution::ordered});
    } catch (const error& e) {
      differ[static_cast<std::size_t>(rank)] = e.what();
    }
    try {  // rank 0 alone passes a negative timeout: planning fails there, every rank learns it
      reshard(comm, stream, src, dst, in, out,
              reshard_options{.devices = device_map::same(), .timeout_s = rank == 0 ? -1.0 : 60.0});
    } catch (const error& e) {
      bad_timeout[static_cast<std::size_t>(rank)] = e.what();
    }
    cudaStreamDestroy(stream);
  });
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    CHECK(differ[static_cast<std::size_t>(r)].find("different layouts, element sizes or options") != std::string::npos);
    CHECK(bad_timeout[static_cast<std::size_t>(r)].find("timeout_s") != std::string::npos);
    if (r != 0) CHECK(bad_timeout[static_cast<std::size_t>(r)].find("rank 0 reports") != std::string::npos);
  }
}

TEST_CASE("a model's batch over NCCL: bounded groups, every element right, in both modes, under a staging cap") {
  // 24 tensors moved from a 2-device mesh to a 2-device mesh beside it (4 ranks, 2 per host), one
  // in place: many transfers, so that a group limit of 4 transfers matters.
  std::string text = R"({"devices_per_host": 2, "src": {"mesh": "2"}, "dst": {"mesh": "2"}, "tensors": [)";
  for (int k = 0; k < 24; ++k)
    text += std::string(k ? "," : "") + R"({"name": "w)" + std::to_string(k) + R"(", "shape": [)" + std::to_string(5 + k) +
            R"(, 6], "dtype_bytes": )" + std::to_string(k % 2 ? 2 : 4) + R"(, "src_spec": ")" + (k % 3 ? "S0,R" : "R,S0") +
            R"(", "dst_spec": ")" + (k % 4 ? "R,S0" : "S0,R") + R"("})";
  text += R"(, {"name": "in_place", "shape": [9], "dtype_bytes": 8, "src_spec": "S0", "dst_spec": "R", "dst": {"mesh": "2", "devices": [0, 1]}}]})";
  const manifest m = parse_manifest(std::string_view(text));
  REQUIRE(m.device_count == 4);
  for (bool buckets : {false, true})  // buckets bundle the transfers: the group limits are checked without
  for (std::size_t cap : {std::size_t{0}, std::size_t{48}})  // none, and 24-byte pieces
  for (std::size_t limit : {std::size_t{4}, std::size_t{1} << 20})
    for (execution mode : {execution::ordered, execution::concurrent}) {
      meshcast_nccl_emulation::largest_group = 0;
      std::vector<std::string> problems(4);
      std::vector<std::size_t> staging(4, 0);
      std::size_t transfers = 0;
      run_ranks(4, [&](int rank, ncclComm_t comm) {
        cudaStream_t stream;
        cudaStreamCreate(&stream);
        try {
          nccl_batch_resharder<> r(comm, stream, m.tensors,
                                   {.host_of = hosts_in_order(m.device_count, m.devices_per_host_or(0)), .mode = mode, .max_staging_bytes = cap,
                                    .buckets = buckets},
                                   {}, {}, limit);
          if (rank == 0) transfers = r.schedule().transfers.size();
          staging[static_cast<std::size_t>(rank)] = r.staging_bytes();
          std::vector<std::vector<std::byte>> in, out;
          for (std::size_t k = 0; k < r.plans().size(); ++k) {
            const plan& p = r.plans()[k];
            in.emplace_back(r.source_elements(k) * tensor_bytes_of(p));
            out.emplace_back(r.destination_elements(k) * tensor_bytes_of(p), std::byte{0x55});
            if (!in.back().empty()) cli::fill(p.source_tile(rank), p.src.shape, static_cast<std::size_t>(p.element_bytes), in.back());
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
      CAPTURE(buckets);
      CAPTURE(cap);
      CAPTURE(limit);
      CAPTURE(to_string(mode));
      for (const auto& p : problems) CHECK(p == "");
      if (cap > 0)
        for (std::size_t b : staging) CHECK(b <= cap);
      if (buckets) continue;
      CHECK(transfers > 3 * 4);
      if (limit == 4) CHECK(meshcast_nccl_emulation::largest_group.load() <= 4);
      else if (mode == execution::concurrent)  // unbounded, concurrent mode issues everything in one group
        CHECK(meshcast_nccl_emulation::largest_group.load() > 4);
    }
}

TEST_CASE("benchmark jobs over NCCL: CUDA-event timing, the checked run and the counters (benchmark_nccl.hpp)") {
  const int n = 4;
  const dynamic_shape shape{64, 32};
  dynamic_layout src(dynamic_mesh{n}, dynamic_spec("S0,R"), shape), dst(dynamic_mesh{2, 2}, dynamic_spec("S1,S0"), shape);
  std::vector<std::string> problems(n);
  std::vector<timed_job> seen(n);
  run_ranks(n, [&](int rank, ncclComm_t comm) {
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    try {
      timed_job job = nccl_reshard_job(comm, stream, src, dst, sizeof(float),
                                       reshard_options{.devices = device_map::same(), .devices_per_host = 2});
      job.clear();
      if (job.wrong() == 0 && !dst.tile(rank).empty()) problems[static_cast<std::size_t>(rank)] = "clear left the destination right";
      const double seconds = job.run_timed();
      if (!(seconds > 0 && seconds < 60)) problems[static_cast<std::size_t>(rank)] = "event time " + std::to_string(seconds);
      if (job.wrong() != 0) problems[static_cast<std::size_t>(rank)] = "wrong elements after the timed run";
      job.clear();
      job.run();
      if (job.wrong() != 0) problems[static_cast<std::size_t>(rank)] = "wrong elements after run";
      job.release();  // the shards are freed, and made again at the next use
      bool refused = false;
      try {
        (void)job.wrong();
      } catch (const meshcast::error&) {
        refused = true;  // no shards after release: nothing to check
      }
      if (!refused) problems[static_cast<std::size_t>(rank)] = "wrong() after release did not throw";
      job.clear();
      if (job.wrong() == 0 && !dst.tile(rank).empty()) problems[static_cast<std::size_t>(rank)] = "clear after release left it right";
      job.run();
      if (job.wrong() != 0) problems[static_cast<std::size_t>(rank)] = "wrong elements after a run after release";
      seen[static_cast<std::size_t>(rank)] = job;
    } catch (const std::exception& e) {
      problems[static_cast<std::size_t>(rank)] = e.what();
    }
    cudaStreamDestroy(stream);
  });
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    CHECK(problems[static_cast<std::size_t>(r)] == "");
    CHECK(seen[static_cast<std::size_t>(r)].bytes == 64 * 32 * 4);
    CHECK(seen[static_cast<std::size_t>(r)].bound_s > 0);  // two hosts: bytes cross a NIC
    CHECK(seen[static_cast<std::size_t>(r)].predicted_s >= seen[static_cast<std::size_t>(r)].bound_s);
    CHECK(seen[static_cast<std::size_t>(r)].busiest_bytes > 0);
  }
}

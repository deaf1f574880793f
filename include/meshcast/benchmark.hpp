// Reshards as Google Benchmark benchmarks, run under MPI: a user times their own layouts on their
// own cluster in five lines.
//
//   meshcast::benchmark_session session(argc, argv);   // MPI_Init if not done, benchmark::Initialize
//   session.add_reshard("rows_to_blocks", src, dst, sizeof(float), meshcast::reshard_options{...});
//   return session.run();                               // 0 when every run's data was right
//
// Each benchmark plans and solves once and checks the delivered data once (outside the timing),
// then times resharder runs: a barrier before each, an iteration's time the maximum over ranks
// (manual time), so every rank sees the same times and runs the same number of iterations. Only
// rank 0 reports (console, --benchmark_format=json, --benchmark_out=FILE). Counters: bytes (tensor
// bytes), algbw (bytes / s), busbw (bytes the busiest rank receives / s), predicted_s, bound_s
// (the physical bound), vs_bound (seconds / bound), wrong (wrong elements of the checked run).
// Needs MPI and Google Benchmark (CMake: meshcast::benchmark).
#pragma once

#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mpi.hpp"

namespace meshcast {

namespace detail {
// The element's global row-major index, little-endian in `eb` bytes, for every element of `tile`.
inline void fill_with_index(const box& tile, const extents_value& shape, std::size_t eb, std::byte* out) {
  if (tile.empty()) return;
  index_t idx[max_rank];
  for (int d = 0; d < tile.rank; ++d) idx[d] = tile[d].lo;
  for (std::size_t at = 0;; at += eb) {
    std::uint64_t linear = 0;
    for (int d = 0; d < tile.rank; ++d) linear = linear * static_cast<std::uint64_t>(shape[d]) + static_cast<std::uint64_t>(idx[d]);
    for (std::size_t b = 0; b < eb; ++b) out[at + b] = static_cast<std::byte>(b < 8 ? (linear >> (8 * b)) & 0xff : 0);
    int d = tile.rank - 1;
    while (d >= 0 && ++idx[d] == tile[d].hi) idx[d] = tile[d].lo, --d;
    if (d < 0) return;
  }
}

// The most of `value` over the ranks, bounded in time.
inline double bounded_max(MPI_Comm comm, double value, double timeout_s) {
  double out = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  mpi_check(MPI_Iallreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, comm, &r), "MPI_Iallreduce");
  if (!wait_until(r, deadline(timeout_s, "the timeout"))) throw timeout_error("no answer while taking the slowest rank's time", {});
  return out;
}

// A reporter that reports nothing: the other ranks' output.
class silent_reporter : public ::benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};
}  // namespace detail

class benchmark_session {
 public:
  /// Initialises MPI (unless the program did) and Google Benchmark (its flags are taken from
  /// argv; on ranks other than 0, --benchmark_out is dropped so that one file is written).
  benchmark_session(int& argc, char**& argv, MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      MPI_Init(&argc, &argv);
      owns_mpi_ = true;
    }
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (rank_ != 0 && (a.rfind("--benchmark_out=", 0) == 0 || a.rfind("--benchmark_out_format=", 0) == 0)) continue;
      argv[kept++] = argv[i];
    }
    argc = kept;
    ::benchmark::Initialize(&argc, argv);
  }
  benchmark_session(const benchmark_session&) = delete;
  benchmark_session& operator=(const benchmark_session&) = delete;
  ~benchmark_session() {
    cases_.clear();  // resharders free their communicators before MPI ends
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && !finalized) MPI_Finalize();
  }

  /// Registers a reshard of `src` into `dst` (static or dynamic layouts), `element_bytes` per
  /// element, with the one call's options, `Solver` and `Strategy`. Collective: plans and solves
  /// now. A misuse (a rank count that does not fit the layouts, ...) is reported by every rank and
  /// makes `run` return non-zero.
  template <solver Solver = greedy, strategy Strategy = send_recv_allgather, layout_like Src, layout_like Dst>
  void add_reshard(const std::string& name, const Src& src, const Dst& dst, std::size_t element_bytes, reshard_options options = {}) {
    try {
      auto c = std::make_unique<reshard_case>();
      c->name = name;
      c->timeout_s = options.timeout_s;
      c->r = std::make_shared<batch_resharder<Solver, Strategy>>(
          comm_, std::vector<tensor_layouts>{tensor_layouts{src.value(), dst.value(), element_bytes}}, options);
      auto* r = static_cast<batch_resharder<Solver, Strategy>*>(c->r.get());
      const plan& p = r->plans()[0];
      c->in.resize(r->source_elements() * element_bytes);
      c->out.resize(r->destination_elements() * element_bytes);
      c->expected.resize(c->out.size());
      detail::fill_with_index(p.source_tile(rank_), p.src.shape, element_bytes, c->in.data());
      detail::fill_with_index(p.destination_tile(rank_), p.src.shape, element_bytes, c->expected.data());
      c->run = [r](std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out) { (*r)(in, out); };
      c->bytes = static_cast<double>(p.tensor_bytes());
      c->predicted_s = r->schedule().makespan_s;
      c->bound_s = r->schedule().physical_bound_s;
      double busiest = 0;  // bytes the busiest device takes in from other devices
      std::vector<double> in_bytes(static_cast<std::size_t>(p.device_count), 0.0);
      for (const transfer& t : r->schedule().transfers)
        for (index_t d : t.receivers)
          if (d != t.sender) busiest = std::max(busiest, in_bytes[static_cast<std::size_t>(d)] += static_cast<double>(t.bytes));
      c->busiest_bytes = busiest;
      c->element_bytes = element_bytes;
      reshard_case* raw = c.get();
      cases_.push_back(std::move(c));
      ::benchmark::RegisterBenchmark(name.c_str(), [this, raw](::benchmark::State& s) { time(*raw, s); })->UseManualTime();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "meshcast benchmark (rank %d): error: %s: %s\n", rank_, name.c_str(), e.what());
      std::fflush(stderr);
      failed_ = true;
    }
  }

  /// Runs every registered benchmark (Google Benchmark's filter applies) and reports on rank 0.
  /// Returns 0 when every checked run delivered every element right and nothing failed.
  int run() {
    if (failed_) return 2;
    detail::silent_reporter silent;
    try {
      if (rank_ == 0) ::benchmark::RunSpecifiedBenchmarks();
      else ::benchmark::RunSpecifiedBenchmarks(&silent);  // --benchmark_out was dropped here
    } catch (const std::exception& e) {
      std::fprintf(stderr, "meshcast benchmark (rank %d): error: %s\n", rank_, e.what());
      return 2;
    }
    ::benchmark::Shutdown();
    return failed_ || wrong_ ? 1 : 0;
  }

 private:
  struct reshard_case {
    std::string name;
    std::shared_ptr<void> r;  // the batch_resharder of its solver and strategy
    std::function<void(std::span<const std::span<const std::byte>>, std::span<const std::span<std::byte>>)> run;
    std::vector<std::byte> in, out, expected;
    std::size_t element_bytes = 1;
    double bytes = 0, busiest_bytes = 0, predicted_s = 0, bound_s = 0, timeout_s = 60;
    double wrong = -1;  // of the checked run, summed over ranks; -1: not checked yet
  };

  // One benchmark: the checked run once, then timed runs, each barrier to slowest rank.
  void time(reshard_case& c, ::benchmark::State& s) {
    const std::span<const std::byte> in(c.in);
    const std::span<std::byte> out(c.out);
    const auto ins = std::span<const std::span<const std::byte>>(&in, 1);
    const auto outs = std::span<const std::span<std::byte>>(&out, 1);
    if (c.wrong < 0) {
      std::fill(c.out.begin(), c.out.end(), std::byte{0xa5});
      c.run(ins, outs);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < c.out.size(); i += c.element_bytes)
        if (!std::equal(c.out.begin() + static_cast<std::ptrdiff_t>(i), c.out.begin() + static_cast<std::ptrdiff_t>(i + c.element_bytes),
                        c.expected.begin() + static_cast<std::ptrdiff_t>(i)))
          ++wrong;
      c.wrong = static_cast<double>(bounded_allreduce(comm_, wrong, MPI_SUM, c.timeout_s, "counting wrong elements"));
      if (c.wrong > 0) wrong_ = true;
    }
    double total = 0;
    for (auto _ : s) {
      bounded_barrier(comm_, c.timeout_s);
      const auto t0 = std::chrono::steady_clock::now();
      c.run(ins, outs);
      const double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double slowest = detail::bounded_max(comm_, mine, c.timeout_s);
      s.SetIterationTime(slowest);
      total += slowest;
    }
    const double seconds = total / static_cast<double>(std::max<::benchmark::IterationCount>(s.iterations(), 1));
    s.counters["bytes"] = c.bytes;
    s.counters["algbw"] = seconds > 0 ? c.bytes / seconds : 0;
    s.counters["busbw"] = seconds > 0 ? c.busiest_bytes / seconds : 0;
    s.counters["predicted_s"] = c.predicted_s;
    s.counters["bound_s"] = c.bound_s;
    s.counters["vs_bound"] = c.bound_s > 0 ? seconds / c.bound_s : 0;
    s.counters["wrong"] = c.wrong;
  }

  MPI_Comm comm_;
  int rank_ = 0;
  bool owns_mpi_ = false, failed_ = false, wrong_ = false;
  std::vector<std::unique_ptr<reshard_case>> cases_;
};

}  // namespace meshcast

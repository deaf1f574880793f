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
#include <cstring>
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

/// What a benchmark times: `run` does the job once on every rank (collective); `clear` poisons
/// the outputs before the checked run; `wrong` counts this rank's wrong elements after it.
/// `bytes` is the tensor's size, `busiest_bytes` what the busiest rank receives from others,
/// `bound_s` the physical bound and `predicted_s` the model's prediction (0: none).
struct timed_job {
  std::function<void()> run, clear;
  std::function<std::size_t()> wrong;
  double bytes = 0, busiest_bytes = 0, predicted_s = 0, bound_s = 0, timeout_s = 60;
};

namespace detail {
// A rank's source and destination bytes for one tensor, the sources holding each element's index
// and the expected destination alongside, for benchmarks that check what they deliver.
struct checked_buffers {
  std::vector<std::byte> in, out, expected;
  std::size_t element_bytes;
  checked_buffers(const plan& p, int rank, std::size_t source_elements, std::size_t destination_elements)
      : in(source_elements * static_cast<std::size_t>(p.element_bytes)),
        out(destination_elements * static_cast<std::size_t>(p.element_bytes)),
        expected(out.size()),
        element_bytes(static_cast<std::size_t>(p.element_bytes)) {
    fill_with_index(p.source_tile(rank), p.src.shape, element_bytes, in.data());
    fill_with_index(p.destination_tile(rank), p.src.shape, element_bytes, expected.data());
  }
  void clear() { std::fill(out.begin(), out.end(), std::byte{0xa5}); }
  std::size_t wrong() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < out.size(); i += element_bytes)
      n += std::memcmp(out.data() + i, expected.data() + i, element_bytes) != 0;
    return n;
  }
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
  /// makes `run` return non-zero. Returns the registered job (its bound, prediction, ...), or
  /// nullptr after such a failure.
  template <solver Solver = greedy, strategy Strategy = send_recv_allgather, layout_like Src, layout_like Dst>
  const timed_job* add_reshard(const std::string& name, const Src& src, const Dst& dst, std::size_t element_bytes, reshard_options options = {}) {
    try {
      auto r = std::make_shared<batch_resharder<Solver, Strategy>>(
          comm_, std::vector<tensor_layouts>{tensor_layouts{src.value(), dst.value(), element_bytes}}, options);
      const plan& p = r->plans()[0];
      auto data = std::make_shared<detail::checked_buffers>(p, rank_, r->source_elements(), r->destination_elements());
      timed_job job;
      job.run = [r, data] {
        const std::span<const std::byte> in(data->in);
        const std::span<std::byte> out(data->out);
        (*r)(std::span<const std::span<const std::byte>>(&in, 1), std::span<const std::span<std::byte>>(&out, 1));
      };
      job.clear = [data] { data->clear(); };
      job.wrong = [data] { return data->wrong(); };
      job.bytes = static_cast<double>(p.tensor_bytes());
      job.predicted_s = r->schedule().makespan_s;
      job.bound_s = r->schedule().physical_bound_s;
      std::vector<double> in_bytes(static_cast<std::size_t>(p.device_count), 0.0);
      for (const transfer& t : r->schedule().transfers)  // bytes the busiest device takes in from others
        for (index_t d : t.receivers)
          if (d != t.sender) job.busiest_bytes = std::max(job.busiest_bytes, in_bytes[static_cast<std::size_t>(d)] += static_cast<double>(t.bytes));
      job.timeout_s = options.timeout_s;
      return add(name, std::move(job));
    } catch (const std::exception& e) {
      report_failure(name, e);
      return nullptr;
    }
  }

  /// Registers any job (a hand-written MPI collective beside meshcast's reshard, say) under the
  /// same timing and counters. `run` is collective: every rank calls it.
  const timed_job* add(const std::string& name, timed_job job) {
    if (!job.run || !job.wrong) throw error("benchmark '" + name + "': a timed_job needs run and wrong");
    auto c = std::make_unique<job_case>(job_case{std::move(job), -1});
    job_case* raw = c.get();
    cases_.push_back(std::move(c));
    ::benchmark::RegisterBenchmark(name.c_str(), [this, raw](::benchmark::State& s) { time(*raw, s); })->UseManualTime();
    return &raw->job;
  }

  /// Reports an error met while setting a benchmark up (every rank does) and makes `run` fail.
  void report_failure(const std::string& name, const std::exception& e) {
    std::fprintf(stderr, "meshcast benchmark (rank %d): error: %s: %s\n", rank_, name.c_str(), e.what());
    std::fflush(stderr);
    failed_ = true;
  }

  int rank() const noexcept { return rank_; }
  MPI_Comm communicator() const noexcept { return comm_; }

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
  struct job_case {
    timed_job job;
    double wrong = -1;  // of the checked run, summed over ranks; -1: not checked yet
  };

  // One benchmark: the checked run once, then timed runs, each barrier to slowest rank.
  void time(job_case& c, ::benchmark::State& s) {
    const timed_job& j = c.job;
    if (c.wrong < 0) {
      if (j.clear) j.clear();
      j.run();
      c.wrong = static_cast<double>(bounded_allreduce(comm_, j.wrong(), MPI_SUM, j.timeout_s, "counting wrong elements"));
      if (c.wrong > 0) wrong_ = true;
    }
    double total = 0;
    for (auto _ : s) {
      bounded_barrier(comm_, j.timeout_s);
      const auto t0 = std::chrono::steady_clock::now();
      j.run();
      const double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double slowest = detail::bounded_max(comm_, mine, j.timeout_s);
      s.SetIterationTime(slowest);
      total += slowest;
    }
    const double seconds = total / static_cast<double>(std::max<::benchmark::IterationCount>(s.iterations(), 1));
    s.counters["bytes"] = j.bytes;
    s.counters["algbw"] = seconds > 0 ? j.bytes / seconds : 0;
    s.counters["busbw"] = seconds > 0 ? j.busiest_bytes / seconds : 0;
    s.counters["predicted_s"] = j.predicted_s;
    s.counters["bound_s"] = j.bound_s;
    s.counters["vs_bound"] = j.bound_s > 0 ? seconds / j.bound_s : 0;
    s.counters["wrong"] = c.wrong;
  }

  MPI_Comm comm_;
  int rank_ = 0;
  bool owns_mpi_ = false, failed_ = false, wrong_ = false;
  std::vector<std::unique_ptr<job_case>> cases_;
};

}  // namespace meshcast

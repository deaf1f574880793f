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
// Needs MPI and Google Benchmark (CMake: meshcast::benchmark). Over NCCL, the same session times
// jobs from <meshcast/benchmark_nccl.hpp> with CUDA events on their stream.
#pragma once

#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../core/detail/failure_of.hpp"
#include "benchmark_checks.hpp"
#include "benchmark_job.hpp"
#include "mpi.hpp"

namespace meshcast {

namespace detail {
// The most of `value` over the ranks, bounded in time.
inline double bounded_max(MPI_Comm comm, double value, double timeout_s) {
  struct operation {
    double mine = 0, out = 0;
    MPI_Request r = MPI_REQUEST_NULL;
  };
  auto o = std::make_unique<operation>();
  o->mine = value;
  mpi_check(MPI_Iallreduce(&o->mine, &o->out, 1, MPI_DOUBLE, MPI_MAX, comm, &o->r), "MPI_Iallreduce");
  if (!completed_or_kept(o, o->r, collective_deadline(timeout_s)))  // 0: no bound, as the other collectives
    throw timeout_error("no answer while taking the slowest rank's time", {});
  return o->out;
}

// Makes `held` with `make()` unless it is held already, every rank agreeing that each one did: a
// rank that failed alone (out of memory, say) left its peers in the next collective for ever.
// `held` is set only once all agreed; what `make` throws is told to every rank as this rank's.
template <class T, class Make>
void acquire_on_every_rank(MPI_Comm comm, std::shared_ptr<T>& held, double timeout_s, Make make) {
  if (held) return;
  std::shared_ptr<T> made;
  const std::string problem = failure_of([&] { made = make(); }, "making the benchmark's buffers");
  if (!all_ok(comm, problem.empty(), timeout_s, "agreeing that every rank holds its buffers"))
    throw error(problem.empty() ? "another rank could not make its buffers" : problem);
  held = std::move(made);
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
    if (comm_ != MPI_COMM_NULL) {
      MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
      MPI_Comm_rank(comm_, &rank_);
    }
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (rank_ != 0 && (a.rfind("--benchmark_out=", 0) == 0 || a.rfind("--benchmark_out_format=", 0) == 0)) continue;
      argv[kept++] = argv[i];
    }
    argc = kept;
    try {  // before Initialize, which exits with status 0 on a bad word and loops on min_time=nan
      if (comm_ == MPI_COMM_NULL) throw error("benchmark_session: the communicator is MPI_COMM_NULL");
      detail::check_benchmark_flags(argc, argv);
      for (int i = 1; i < argc; ++i) {  // the last one counts, as in Google Benchmark
        std::string_view v;
        if (detail::benchmark_flag::value_of(argv[i], "list_tests", v)) list_only_ = detail::benchmark_flag::truthy(v);
      }
    } catch (const error& e) {
      report_failure("the session", e);
      // Google Benchmark sees none of its flags; the program's own stay. run() returns 2 at once.
      argc = static_cast<int>(std::remove_if(argv + 1, argv + argc, [](const char* a) {
                                return std::string_view(a).rfind("--benchmark_", 0) == 0;
                              }) - argv);
      if (comm_ == MPI_COMM_NULL) comm_ = MPI_COMM_SELF;
    }
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
  template <solver Solver = greedy, strategy Strategy = auto_strategy, layout_like Src, layout_like Dst>
  const timed_job* add_reshard(const std::string& name, const Src& src, const Dst& dst, std::size_t element_bytes, reshard_options options = {}) {
    try {
      return add(name, reshard_job<Solver, Strategy>(src, dst, element_bytes, std::move(options)));
    } catch (const std::exception& e) {
      report_failure(name, e);
      return nullptr;
    }
  }

  /// The job `add_reshard` registers, built (collectively) but not registered: to compare
  /// variants before choosing one, or to register it under another timing. Throws on misuse.
  /// Its checked buffers are made (every rank agreeing) at `acquire` or its first run, its
  /// resharder's message buffers at its first run, and both are freed by `release` (and the
  /// message buffers once built); the session frees a benchmark's when it moves on and after the
  /// last, so that a sweep holds one size's buffers at a time.
  template <solver Solver = greedy, strategy Strategy = auto_strategy, layout_like Src, layout_like Dst>
  timed_job reshard_job(const Src& src, const Dst& dst, std::size_t element_bytes, reshard_options options = {}) {
    auto r = std::make_shared<batch_resharder<Solver, Strategy>>(
        comm_, std::vector<tensor_layouts>{tensor_layouts{src.value(), dst.value(), element_bytes}}, options);
    r->release_staging();  // made again by its first run (every rank agreeing), freed by `release`
    const plan& p = r->plans()[0];
    // The checked buffers are made when the job first runs and freed by `release`: a sweep held
    // every size's buffers from registration on (meshcast-bench's 1K..64M sweep with --peer mpi
    // at 4 ranks: 212 MB a rank, 120 MB with this alone). `wrong` needs them: it throws before
    // the first run and after `release`.
    struct held {
      std::shared_ptr<detail::checked_buffers> data;
    };
    auto h = std::make_shared<held>();
    auto acquire = [h, r, comm = comm_, rank = rank_, timeout_s = options.timeout_s] {
      detail::acquire_on_every_rank(comm, h->data, timeout_s, [&] {
        auto d = std::make_shared<detail::checked_buffers>(r->plans()[0], rank, r->source_elements(), r->destination_elements());
        d->clear();  // poisoned, so that an element a run leaves unwritten counts as wrong
        return d;
      });
    };
    timed_job job;
    job.acquire = acquire;
    job.run = [h, r, acquire] {
      acquire();  // a job run outside a session makes its buffers on its first run
      const std::span<const std::byte> in(h->data->in);
      const std::span<std::byte> out(h->data->out);
      try {
        (*r)(std::span<const std::span<const std::byte>>(&in, 1), std::span<const std::span<std::byte>>(&out, 1));
      } catch (...) {  // a late peer may still write them (limits.md): `release` must not free them
        detail::keep_until_exit(h->data);
        throw;
      }
    };
    job.clear = [h] {
      if (h->data) h->data->clear();
    };
    job.wrong = [h]() -> std::size_t {
      if (!h->data) throw error("timed_job::wrong: the job has no buffers (it was released, or has not run)");
      return h->data->wrong();
    };
    job.release = [h, r] {
      h->data.reset();
      r->release_staging();
    };
    detail::set_reshard_counters(job, p, r->schedule());
    job.timeout_s = options.timeout_s;
    return job;
  }

  /// Registers any job (a hand-written MPI collective beside meshcast's reshard, say) under the
  /// same timing and counters. `run` is collective: every rank calls it.
  const timed_job* add(const std::string& name, timed_job job) {
    detail::check_job(name, job, std::any_of(cases_.begin(), cases_.end(), [&](const auto& c) { return c->name == name; }));
    auto c = std::make_unique<job_case>(job_case{std::move(job), -1, name});
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
  /// Whether a failure was reported (the session's flags, a job's setup): run() will return 2.
  bool failed() const noexcept { return failed_; }
  MPI_Comm communicator() const noexcept { return comm_; }

  /// Runs every registered benchmark (Google Benchmark's filter applies) and reports on rank 0.
  /// Returns 0 when every checked run delivered every element right and nothing failed.
  int run() {
    if (failed_) return 2;
    if (list_only_ && rank_ != 0) {  // rank 0 lists the names once; nothing runs, so no rank waits
      ::benchmark::Shutdown();
      return 0;
    }
    detail::silent_reporter silent;
    try {
      if (rank_ == 0) ::benchmark::RunSpecifiedBenchmarks();
      else ::benchmark::RunSpecifiedBenchmarks(&silent);  // --benchmark_out was dropped here
    } catch (const std::exception& e) {
      std::fprintf(stderr, "meshcast benchmark (rank %d): error: %s\n", rank_, e.what());
      return 2;
    }
    release_active();
    ::benchmark::Shutdown();
    return failed_ || wrong_ ? 1 : 0;
  }

 private:
  struct job_case {
    timed_job job;
    double wrong = -1;  // of the checked run, summed over ranks; -1: not checked yet
    std::string name;
  };

  // One benchmark: the checked run once, then timed runs, each barrier to slowest rank.
  void time(job_case& c, ::benchmark::State& s) {
    const timed_job& j = c.job;
    if (active_ != &c) {  // Google Benchmark runs a benchmark's runs one after another
      release_active();
      if (j.acquire) j.acquire();
      active_ = &c;
    }
    if (c.wrong < 0) {
      if (j.clear) j.clear();
      j.run();
      c.wrong = static_cast<double>(bounded_allreduce(comm_, j.wrong(), MPI_SUM, j.timeout_s, "counting wrong elements"));
      if (c.wrong > 0) wrong_ = true;
    }
    double total = 0;
    for (auto _ : s) {
      bounded_barrier(comm_, j.timeout_s);
      double mine = 0;
      if (j.run_timed) {
        mine = j.run_timed();
      } else {
        const auto t0 = std::chrono::steady_clock::now();
        j.run();
        mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      // A time that is not a positive number of seconds made Google Benchmark raise the iteration
      // count to 1e9 (0, negative, NaN) or report Infinity (found by review). A rank's bad time
      // is sent as infinity, so that the maximum tells every rank and all of them stop.
      const bool seconds = std::isfinite(mine) && mine > 0;
      const double slowest = detail::bounded_max(comm_, seconds ? mine : HUGE_VAL, j.timeout_s);
      if (!std::isfinite(slowest))
        throw error("benchmark '" + detail::printable(c.name) + "': " +
                    (seconds ? std::string("another rank's") : "this rank's") + " timed run took " +
                    (seconds ? std::string("a time") : detail::number(mine) + " s") +
                    ", which is not a positive, finite number of seconds");
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
    if (!j.label.empty()) s.SetLabel(j.label);
  }

  // Frees the buffers of the benchmark that ran last.
  void release_active() {
    if (active_ && active_->job.release) active_->job.release();
    active_ = nullptr;
  }

  MPI_Comm comm_;
  int rank_ = 0;
  job_case* active_ = nullptr;  // the benchmark whose buffers are held
  bool owns_mpi_ = false, failed_ = false, wrong_ = false;
  bool list_only_ = false;  // --benchmark_list_tests: list, run nothing
  std::vector<std::unique_ptr<job_case>> cases_;
};

}  // namespace meshcast

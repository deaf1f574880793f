// Reshards over NCCL as benchmark jobs: shards in device memory, each run timed with CUDA events
// on the stream, and checked once like the MPI ones. Register them with the same session:
//
//   meshcast::benchmark_session session(argc, argv);        // MPI ranks, one GPU each
//   ncclComm_t comm = meshcast::nccl_world(MPI_COMM_WORLD);  // <meshcast/backend/nccl_mpi_bootstrap.hpp>
//   session.add("rows_to_blocks", meshcast::nccl_reshard_job(comm, stream, src, dst, sizeof(float), options));
//   return session.run();
//
// The session takes the slowest rank's event time per iteration, as for MPI jobs. This header
// needs CUDA and NCCL only (not MPI or Google Benchmark), so the job can be built and run on its
// own, as the emulated-NCCL tests do.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../core/detail/failure_of.hpp"
#include "../core/error.hpp"
#include "../exec/backend/nccl_result.hpp"
#include "../exec/memory/cuda.hpp"
#include "benchmark_job.hpp"
#include "nccl.hpp"

namespace meshcast {

namespace detail {
class cuda_event {
 public:
  cuda_event() { cuda_check(cudaEventCreate(&e_), "cudaEventCreate"); }
  cuda_event(const cuda_event&) = delete;
  cuda_event& operator=(const cuda_event&) = delete;
  ~cuda_event() { cudaEventDestroy(e_); }
  cudaEvent_t get() const noexcept { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// One NCCL reshard's device shards beside the host copies that fill and check them.
struct nccl_job_state {
  checked_buffers host;
  cuda_memory::buffer in, out;
  cuda_event start, stop;
  cudaStream_t stream;
  double timeout_s;  // every wait for the stream gives up after it
  nccl_job_state(const plan& p, int rank, std::size_t source_elements, std::size_t destination_elements, cudaStream_t s,
                 double timeout)
      : host(p, rank, source_elements, destination_elements),
        in(host.in.size(), s),
        out(host.out.size(), s),
        stream(s),
        timeout_s(timeout) {
    copy(in.data(), host.in.data(), host.in.size(), cudaMemcpyHostToDevice);
    host.clear();  // poisoned from the start: shards made by a run, not by `clear`, check as well
    copy(out.data(), host.out.data(), host.out.size(), cudaMemcpyHostToDevice);
  }
  void copy(void* to, const void* from, std::size_t n, cudaMemcpyKind kind) {
    wait();  // a copy with host memory may wait for the stream without a deadline: it finds it idle
    if (n > 0) cuda_check(cudaMemcpyAsync(to, from, n, kind, stream), "cudaMemcpyAsync");
    wait();
  }
  void wait() { wait_stream(stream, timeout_s); }  // the shards outlive a wait that gave up (cuda.hpp)
};
}  // namespace detail

/// The timed_job of resharding `src` into `dst` over `comm` on `stream` (an nccl_batch_resharder
/// of one tensor, built collectively now): `run_timed` brackets each run with CUDA events
/// recorded on the stream and returns the time between them; `wrong` copies the destination back
/// and checks every element. The shards are made at the first use and freed by `release`, the
/// resharder's message buffers likewise; a rank that cannot make them fails every rank's run.
template <class Solver = greedy, class Strategy = auto_strategy, layout_like Src, layout_like Dst>
timed_job nccl_reshard_job(ncclComm_t comm, cudaStream_t stream, const Src& src, const Dst& dst, std::size_t element_bytes,
                           reshard_options options = {}) {
  auto r = std::make_shared<nccl_batch_resharder<Solver, Strategy>>(
      comm, stream, std::vector<tensor_layouts>{tensor_layouts{src.value(), dst.value(), element_bytes}}, options);
  int rank = 0;
  detail::nccl_check(ncclCommUserRank(comm, &rank), "ncclCommUserRank");
  r->release_staging();  // made again by its first run, freed by `release`
  const plan& p = r->plans()[0];
  // The shards are made at the first use and freed by `release` (a session holds one job's at a
  // time). A rank that cannot make them says so in the run's agreement, so that every rank fails
  // at once rather than its peers waiting in NCCL until the stream timeout; `acquire` and `clear`
  // leave it to the run. `wrong` needs them: it throws without them.
  struct held {
    std::shared_ptr<detail::nccl_job_state> st;
  };
  auto h = std::make_shared<held>();
  auto make = [h, r, rank, stream, timeout_s = detail::channel_timeout_s(options.timeout_s)] {
    return detail::failure_of([&] {
      if (!h->st)
        h->st = std::make_shared<detail::nccl_job_state>(r->plans()[0], rank, r->source_elements(), r->destination_elements(),
                                                         stream, timeout_s);
    }, "making the NCCL job's device shards");
  };
  auto once = [r, h](std::string problem) {
    std::span<const std::byte> in;
    std::span<std::byte> out;
    if (problem.empty()) in = {h->st->in.data(), h->st->host.in.size()}, out = {h->st->out.data(), h->st->host.out.size()};
    r->run(std::span<const std::span<const std::byte>>(&in, 1), std::span<const std::span<std::byte>>(&out, 1), problem);
    if (!problem.empty()) throw error(problem);  // the agreement above has thrown it on every rank already
  };
  timed_job job;
  job.acquire = [make] { (void)make(); };
  job.release = [h, r] {
    h->st.reset();
    r->release_staging();
  };
  job.run = [make, once] { once(make()); };
  job.run_timed = [h, make, once] {
    std::string problem = make();
    if (!problem.empty()) once(std::move(problem));  // throws, on every rank
    const auto st = h->st;
    detail::cuda_check(cudaEventRecord(st->start.get(), st->stream), "cudaEventRecord");
    once({});
    detail::cuda_check(cudaEventRecord(st->stop.get(), st->stream), "cudaEventRecord");
    st->wait();  // the stop event is the stream's last work
    float ms = 0;
    detail::cuda_check(cudaEventElapsedTime(&ms, st->start.get(), st->stop.get()), "cudaEventElapsedTime");
    return static_cast<double>(ms) / 1e3;
  };
  job.clear = [h, make] {
    if (!make().empty()) return;  // the run reports it
    const auto& st = h->st;
    st->host.clear();
    st->copy(st->out.data(), st->host.out.data(), st->host.out.size(), cudaMemcpyHostToDevice);
  };
  job.wrong = [h]() -> std::size_t {
    if (!h->st) throw error("timed_job::wrong: the NCCL job has no shards (it was released, or has not run)");
    const auto& st = h->st;
    st->copy(st->host.out.data(), st->out.data(), st->host.out.size(), cudaMemcpyDeviceToHost);
    return st->host.wrong();
  };
  detail::set_reshard_counters(job, p, r->schedule());
  job.timeout_s = options.timeout_s;
  return job;
}

}  // namespace meshcast

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
#include <vector>

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
/// and checks every element. The shards are made at the first use (each rank its own) and freed
/// by `release`.
template <class Solver = greedy, class Strategy = auto_strategy, layout_like Src, layout_like Dst>
timed_job nccl_reshard_job(ncclComm_t comm, cudaStream_t stream, const Src& src, const Dst& dst, std::size_t element_bytes,
                           reshard_options options = {}) {
  auto r = std::make_shared<nccl_batch_resharder<Solver, Strategy>>(
      comm, stream, std::vector<tensor_layouts>{tensor_layouts{src.value(), dst.value(), element_bytes}}, options);
  int rank = 0;
  detail::nccl_check(ncclCommUserRank(comm, &rank), "ncclCommUserRank");
  const plan& p = r->plans()[0];
  // The shards are made at the first use and freed by `release` (a session holds one job's at a
  // time). Each rank makes its own, with no agreement: a rank that cannot fails alone, and its
  // peers' NCCL waits end at the stream timeout. `wrong` needs them: it throws without them.
  struct held {
    std::shared_ptr<detail::nccl_job_state> st;
  };
  auto h = std::make_shared<held>();
  auto state = [h, r, rank, stream, timeout_s = detail::channel_timeout_s(options.timeout_s)] {
    if (!h->st)
      h->st = std::make_shared<detail::nccl_job_state>(r->plans()[0], rank, r->source_elements(), r->destination_elements(), stream,
                                                       timeout_s);
    return h->st;
  };
  auto once = [r, state] {
    const auto st = state();
    const std::span<const std::byte> in(st->in.data(), st->host.in.size());
    const std::span<std::byte> out(st->out.data(), st->host.out.size());
    (*r)(std::span<const std::span<const std::byte>>(&in, 1), std::span<const std::span<std::byte>>(&out, 1));
  };
  timed_job job;
  job.acquire = [state] { (void)state(); };
  job.release = [h] { h->st.reset(); };
  job.run = once;
  job.run_timed = [state, once] {
    const auto st = state();
    detail::cuda_check(cudaEventRecord(st->start.get(), st->stream), "cudaEventRecord");
    once();
    detail::cuda_check(cudaEventRecord(st->stop.get(), st->stream), "cudaEventRecord");
    st->wait();  // the stop event is the stream's last work
    float ms = 0;
    detail::cuda_check(cudaEventElapsedTime(&ms, st->start.get(), st->stop.get()), "cudaEventElapsedTime");
    return static_cast<double>(ms) / 1e3;
  };
  job.clear = [state] {
    const auto st = state();
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

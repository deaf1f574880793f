// What release_staging costs a step: one resharder run with its message buffers held, beside the
// same run after release_staging (the buffers freed, made again before the run's agreement and
// first touched by the packing), in one session. The tensor goes from rows to columns over every
// rank (S0,R -> R,S0: every message is packed), 4-byte elements; each job is checked once.
//
//   mpiexec -n 4 build/test/bench/meshcast-bench-release-staging [--rows R] [--cols C] [--mode ordered|concurrent]
//       [Google Benchmark flags, e.g. --benchmark_repetitions=5]
#include <mpi.h>

#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <meshcast/benchmark.hpp>
#include <meshcast/mpi.hpp>

#include "flags.hpp"

using namespace meshcast;

namespace {

constexpr const char* usage =
    "usage: mpiexec -n N meshcast-bench-release-staging [--rows R] [--cols C] [--mode ordered|concurrent]\n"
    "         [Google Benchmark flags]\n";

// A reshard's job whose every run first releases the message buffers when `release` is set.
timed_job job_of(benchmark_session& session, const tensor_layouts& t, const reshard_options& o, bool release) {
  auto r = std::make_shared<batch_resharder<>>(session.communicator(), std::vector<tensor_layouts>{t}, o);
  std::shared_ptr<detail::checked_buffers> d;  // every rank agrees that it made its own
  detail::acquire_on_every_rank(session.communicator(), d, o.timeout_s, [&] {
    return std::make_shared<detail::checked_buffers>(r->plans()[0], session.rank(), r->source_elements(), r->destination_elements());
  });
  timed_job job;
  job.run = [r, d, release] {
    if (release) r->release_staging();
    const std::span<const std::byte> in(d->in);
    const std::span<std::byte> out(d->out);
    (*r)(std::span<const std::span<const std::byte>>(&in, 1), std::span<const std::span<std::byte>>(&out, 1));
  };
  job.clear = [d] { d->clear(); };
  job.wrong = [d] { return d->wrong(); };
  detail::set_reshard_counters(job, r->plans()[0], r->schedule());
  job.label = std::to_string(r->staging_bytes()) + " staging bytes on rank " + std::to_string(session.rank());
  job.timeout_s = o.timeout_s;
  return job;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)  // Google Benchmark answers --help with its own flags only
    if (std::string(argv[i]) == "--help") argv[i] = const_cast<char*>("-h");
  benchmark_session session(argc, argv);
  if (session.failed()) return 2;
  int size = 0;
  MPI_Comm_size(session.communicator(), &size);
  try {
    const meshcast_bench::flags f(argc, argv, {"--rows", "--cols", "--mode"});
    if (f.help()) {
      if (session.rank() == 0) std::fputs(usage, stdout);
      return 0;
    }
    const index_t rows = f.count("--rows", 4096, size, 1 << 20), cols = f.count("--cols", 4096, size, 1 << 20);
    const std::string mode = f.word("--mode", "ordered", {"ordered", "concurrent"});
    const dynamic_shape shape{rows, cols};
    const tensor_layouts t{dynamic_layout(dynamic_mesh{size}, dynamic_spec("S0,R"), shape).value(),
                           dynamic_layout(dynamic_mesh{size}, dynamic_spec("R,S0"), shape).value(), 4};
    reshard_options o{.devices = device_map::same(), .mode = mode == "ordered" ? execution::ordered : execution::concurrent};
    const std::string bytes = std::to_string(rows * cols * 4);
    session.add("release_staging/held/" + bytes, job_of(session, t, o, false));
    session.add("release_staging/released/" + bytes, job_of(session, t, o, true));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meshcast-bench-release-staging (rank %d): error: %s\n%s", session.rank(), e.what(),
                 session.rank() == 0 ? usage : "");
    return 2;
  }
  return session.run();
}

// <meshcast/benchmark.hpp> as a user writes it (README, "Benchmark your own layouts"): the
// contract's session over as many ranks as it is started on (2 or 4), a static-layout case at 4,
// and with --mismatch a layout that does not fit the rank count (every rank must fail with an
// error). tests/mpi/check_benchmark_session.py runs it and checks rank 0's JSON. With --zero-time, a
// job whose timed run reports 0 s (Google Benchmark then raised its iterations to 1e9); with
// --bad-jobs, jobs add() must refuse, each refusal printed by rank 0; with --one-at-a-time, jobs
// whose acquire and release count what is held: the session must hold one job's at a time, and a
// reshard job run outside the session makes its own buffers.
#include <meshcast/benchmark.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

// Three counted jobs and a reshard: each run must find its own job acquired and no other.
int one_job_at_a_time(meshcast::benchmark_session& session, int n) {
  struct counts {
    int held = 0, most_held = 0, acquired = 0, released = 0, runs_not_held = 0;
  };
  auto c = std::make_shared<counts>();
  for (const char* name : {"first", "second", "third"}) {
    auto mine = std::make_shared<bool>(false);
    meshcast::timed_job job;
    job.acquire = [c, mine] {
      *mine = true, ++c->acquired;
      c->most_held = std::max(c->most_held, ++c->held);
    };
    job.release = [c, mine] { *mine = false, --c->held, ++c->released; };
    job.run = [c, mine] { c->runs_not_held += !*mine; };
    job.run_timed = [c, mine] {  // 1 ms a run: a few iterations reach the minimum time
      c->runs_not_held += !*mine;
      return 1e-3;
    };
    job.wrong = []() -> std::size_t { return 0; };
    session.add(name, job);
  }
  meshcast::dynamic_layout src(meshcast::dynamic_mesh{n}, meshcast::dynamic_spec("S0,R"), meshcast::dynamic_shape{64, 8});
  meshcast::dynamic_layout dst(meshcast::dynamic_mesh{n}, meshcast::dynamic_spec("R,S0"), meshcast::dynamic_shape{64, 8});
  const meshcast::reshard_options same{.devices = meshcast::device_map::same(), .timeout_s = 60};
  meshcast::timed_job alone = session.reshard_job(src, dst, 4, same);  // run here, outside the session
  alone.run();
  const std::size_t alone_wrong = alone.wrong();
  alone.release();
  bool refused_released = false;
  try {
    (void)alone.wrong();
  } catch (const meshcast::error&) {
    refused_released = true;
  }
  session.add_reshard("reshard", src, dst, 4, same);
  const int status = session.run();
  const bool ok = status == 0 && c->acquired == 3 && c->released == 3 && c->most_held == 1 && c->held == 0 &&
                  c->runs_not_held == 0 && alone_wrong == 0 && refused_released;
  if (session.rank() == 0 || !ok)
    std::fprintf(stderr, "one at a time (rank %d): status %d, acquired %d, released %d, most held %d, runs not held %d, "
                 "alone wrong %zu, wrong() refused after release %d: %s\n", session.rank(), status, c->acquired, c->released,
                 c->most_held, c->runs_not_held, alone_wrong, refused_released ? 1 : 0, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  bool mismatch = false, zero_time = false, bad_jobs = false, one_at_a_time = false;
  for (int i = 1; i < argc; ++i) {
    mismatch = mismatch || std::strcmp(argv[i], "--mismatch") == 0;
    zero_time = zero_time || std::strcmp(argv[i], "--zero-time") == 0;
    bad_jobs = bad_jobs || std::strcmp(argv[i], "--bad-jobs") == 0;
    one_at_a_time = one_at_a_time || std::strcmp(argv[i], "--one-at-a-time") == 0;
  }
  meshcast::benchmark_session session(argc, argv);
  meshcast::timed_job noop;
  noop.run = [] {};
  noop.wrong = []() -> std::size_t { return 0; };
  if (zero_time) {
    noop.run_timed = [] { return 0.0; };
    session.add("zero_time", noop);
    return session.run();
  }
  if (bad_jobs) {
    int refused = 0;
    auto expect_refusal = [&](const std::string& name, const meshcast::timed_job& job) {
      try {
        session.add(name, job);
      } catch (const meshcast::error& e) {
        ++refused;
        if (session.rank() == 0) std::printf("refused: %s\n", e.what());
      }
    };
    session.add("first", noop);
    expect_refusal("first", noop);
    expect_refusal("", noop);
    expect_refusal("control\x01", noop);
    meshcast::timed_job bad = noop;
    bad.bytes = std::numeric_limits<double>::quiet_NaN();
    expect_refusal("nan_bytes", bad);
    bad = noop;
    bad.timeout_s = -1;
    expect_refusal("negative_timeout", bad);
    bad = noop;
    bad.label = "a\x01b";
    expect_refusal("control_label", bad);
    return refused == 6 ? 0 : 1;
  }
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (one_at_a_time) return one_job_at_a_time(session, n);
  if (mismatch) ++n;  // one device more than there are ranks
  meshcast::dynamic_layout src(meshcast::dynamic_mesh{n}, meshcast::dynamic_spec("S0,R"), meshcast::dynamic_shape{1024, 256});
  meshcast::dynamic_layout dst(n % 2 == 0 ? meshcast::dynamic_mesh{n / 2, 2} : meshcast::dynamic_mesh{n, 1},
                               meshcast::dynamic_spec("S1,S0"), meshcast::dynamic_shape{1024, 256});
  session.add_reshard("rows_to_blocks", src, dst, sizeof(float),
                      meshcast::reshard_options{.devices = meshcast::device_map::same(), .timeout_s = 60});
  // The same with one device per host of the model, so that its NIC bound is not 0.
  session.add_reshard("rows_to_blocks_one_per_host", src, dst, sizeof(float),
                      meshcast::reshard_options{.devices = meshcast::device_map::same(), .devices_per_host = 1, .timeout_s = 60});
  if (n == 4 && !mismatch) {
    using namespace meshcast;
    constexpr layout<mesh<4>, spec<S<0>, R>, shape<512, 64>> a;
    constexpr layout<mesh<2, 2>, spec<R, S<0, 1>>, shape<512, 64>> b;
    session.add_reshard<greedy, send_recv>("static_rows_to_columns", a, b, 8,
                                           reshard_options{.devices = device_map::same(), .mode = execution::concurrent});
  }
  if (!mismatch) {  // a job of the user's own whose timeout_s is 0, "no bound" (was: a timeout at once)
    auto sum = std::make_shared<int>(0);
    meshcast::timed_job own;
    own.run = [sum] {
      int one = 1;
      MPI_Allreduce(&one, sum.get(), 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    };
    own.wrong = [sum, n]() -> std::size_t { return *sum == n ? 0 : 1; };
    own.bytes = sizeof(int);
    own.timeout_s = 0;
    session.add("own_allreduce_no_timeout", own);
  }
  return session.run();
}

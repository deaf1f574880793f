// meshcast-pipeline-mpi: runs a pipeline's instruction lists for real, across MPI rank groups, and
// compares the measured makespan with the simulated one.
//
//   mpiexec -n 12 meshcast-pipeline-mpi unet6.json --ranks-per-stage 2 --time-unit-ms 20
//       --policy prior_first,rounds,list_scheduling,optimal --nic-gbps 0.2 --nic-efficiency 0.95
//
// Stage s is the mesh of ranks [s*K, (s+1)*K) (K = --ranks-per-stage). Rank 0 orders the transfers
// with each policy (the CLI's registry) and hands every rank its stage's list. Each rank walks it:
//   F / B      compute of the stated duration (x the time unit): --compute spin (busy wait on the
//              clock), sleep (the host waits while an accelerator computes) or matmul (64x64 float
//              matrix products, as many as the calibrated product time fits into the duration);
//   send/recv  one reshard with meshcast's executor (meshcast::resharder over a communicator of the
//              two stages' ranks, the sender's first): one resharder per edge and direction, built
//              once. An edge with a "time" carries an activation tensor S0,R on the sender's mesh
//              [K] -> R,S0 on the receiver's (gradients back R,S0 -> S0,R), sized so that the
//              reshard's predicted time under the network model is the edge's time; an edge with a
//              tensor reshards that tensor (its meshes must have K devices) and its time is the
//              reshard's predicted time under the same model.
// Shared streams: one thread per rank does everything in list order (blocking reshards). Separate
// streams: a compute thread and a communication thread per rank, each taking the rank's entries of
// its kind in list order; a send waits for the compute that produced its data, a compute for the
// receives of its inputs.
//
// Every rank timestamps every entry (its steady clock, put on rank 0's by an offset measured by
// ping-pong; counted from the first rank to leave a common barrier); rank 0 gathers them and
// prints, per policy, the measured makespan (best of --repeat runs, policies interleaved), the
// simulated one with the stated times, and the lists re-simulated with the measured durations of
// that run (compute: the slowest rank of the stage; transfer: from the last participant's arrival
// to the last one's end); then both rankings and whether they agree (pairs of policies whose
// simulated makespans differ by more than --tie must be in the same order). --json prints one
// object instead (see the usage).
//
// Exit status: 0 done, 2 bad input (rank 0 says why), 1 a failure during the run.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <meshcast/mpi.hpp>
#include <meshcast/pipeline.hpp>
#include <meshcast/meshcast.hpp>  // detail::failure_of

// The program's parts (examples/pipeline_mpi/): flags, clocks, collectives, compute, transfers,
// runners, one run of the lists, and rank 0's report.
#include "cli/end_job.hpp"
#include "cli/ignored_members.hpp"
#include "pipeline_mpi/clock.hpp"
#include "pipeline_mpi/collectives.hpp"
#include "pipeline_mpi/compute.hpp"
#include "pipeline_mpi/options.hpp"
#include "pipeline_mpi/print.hpp"
#include "pipeline_mpi/report.hpp"
#include "pipeline_mpi/run_lists.hpp"
#include "pipeline_mpi/runners.hpp"
#include "pipeline_mpi/transfers.hpp"

using namespace pipeline_mpi;

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double timeout_s = 60;
  std::string problem;
  // Input errors are the same on every rank (every rank reads the same flags and rank 0's file),
  // so the lowest rank with a problem reports it, and every rank ends with status 2. That is rank 0
  // but where another rank alone failed: out of memory, it had ended every rank without a word.
  auto input_check = [&](double wait_s = 0) {  // 0: timeout_s
    int first = INT_MAX;
    try {
      first = static_cast<int>(bounded_allreduce(MPI_COMM_WORLD,
                                                 problem.empty() ? std::uint64_t{INT_MAX} : static_cast<std::uint64_t>(rank),
                                                 MPI_MIN, wait_s > 0 ? wait_s : timeout_s, "checking the input"));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "meshcast-pipeline-mpi (rank %d): error: %s\n", rank, e.what());
      std::fflush(stderr);
      meshcast::cli::end_job(1);
    }
    if (first == INT_MAX) return true;
    if (rank == 0 && first == 0) std::fprintf(stderr, "meshcast-pipeline-mpi: error: %s\n", problem.c_str());
    if (rank != 0 && first == rank) std::fprintf(stderr, "meshcast-pipeline-mpi (rank %d): error: %s\n", rank, problem.c_str());
    std::fflush(stderr);
    return false;
  };
  flags f;
  pl::parsed_pipeline file;
  pl::network_model net;
  index_t k = 1;
  double unit = 1;
  problem = meshcast::detail::failure_of([&] {
    f = parse_flags(argc, argv);
    timeout_s = f.timeout_s;
  }, "reading the flags");
  if (!input_check()) return MPI_Finalize(), 2;
  if (f.help) {
    if (rank == 0) usage(stdout);
    MPI_Finalize();
    return 0;
  }
  // The file, as rank 0 reads it.
  std::vector<char> text;
  if (rank == 0)
    problem = meshcast::detail::failure_of([&] {
      const std::string t = pl::read_pipeline_text(f.file);
      text.assign(t.begin(), t.end());
    }, "reading the pipeline file");
  if (!input_check()) return MPI_Finalize(), 2;
  std::vector<transfer_spec> specs;
  problem = meshcast::detail::failure_of([&] {
    broadcast_vector(text, 0, timeout_s, "receiving the pipeline file");
    try {
      file = pl::parse_pipeline(json::parse(std::string_view(text.data(), text.size())));
    } catch (const error& e) {
      throw error(meshcast::detail::printable(f.file, f.file.size()) + ": " + e.what());
    }
    if (rank == 0) meshcast::cli::warn_ignored(stderr, "meshcast-pipeline-mpi", f.file, file.ignored, "a pipeline file has");
    pl::description& d = file.d;
    k = f.ranks_per_stage;
    if (static_cast<long long>(d.stage_count()) * k != size)
      throw error("the pipeline has " + std::to_string(d.stage_count()) + " stages of " + std::to_string(k) +
                  " ranks (--ranks-per-stage) but MPI has " + std::to_string(size) + " ranks");
    if (d.streams == pl::stream_mode::separate && provided < MPI_THREAD_SERIALIZED)
      throw error("separate streams need MPI_THREAD_SERIALIZED, which this MPI does not provide");
    unit = f.time_unit_s > 0 ? f.time_unit_s : d.time_unit_s;
    d.time_unit_s = unit;
    if (file.network) net = *file.network;
    if (f.nic_gbps) net.nic_gbps = *f.nic_gbps;
    if (f.nic_efficiency) net.nic_efficiency = *f.nic_efficiency;
    if (f.intra_gbps) net.intra_gbps = *f.intra_gbps;
    if (f.latency_us) net.latency_us = *f.latency_us;
    if (f.nics_per_host) net.nics_per_host = *f.nics_per_host;
    if (f.devices_per_host) net.devices_per_host = *f.devices_per_host;
    if (f.strategy) net.strategy = *f.strategy;
    if (f.split_replicas) net.split_replicas = *f.split_replicas;
    if (f.mode) net.mode = *f.mode;
    if (net.devices_per_host == 0) net.devices_per_host = k;
    // One transfer per edge and direction: its tensor, and the edge's time (the reshard's
    // predicted time for tensors given in the file).
    check_compute_times(d);  // names an entry that a huge unit makes too long
    // The file's unit gets --time-unit-ms's range: a subnormal one made measured durations of
    // 1e-4 s 1e307 units, and the re-simulated makespan inf, printed as a result.
    if (!(unit >= 1e-9 && unit <= 1e3))
      throw error("time_unit_s is " + meshcast::detail::number(unit) +
                  " s; this program runs units of 1e-09 to 1000 s (as --time-unit-ms 1e-6 to 1e6)");
    specs = transfer_specs(file, k, unit, net);
    pl::validate(d);
  }, "reading the pipeline and predicting its transfers");
  if (!input_check()) return MPI_Finalize(), 2;
  const pl::description& d = file.d;
  const pl::graph g(d);
  const index_t stage = rank / k;

  try {
    // 1. Rank 0 orders the transfers with every policy (searches are time-limited and may differ
    //    between ranks) and hands the lists out.
    std::vector<policy_report> reports(f.policies.size());
    std::vector<std::int64_t> wire;
    if (rank == 0) {
      problem = meshcast::detail::failure_of([&] {
        for (std::size_t i = 0; i < f.policies.size(); ++i) {
          reports[i].name = f.policies[i];
          reports[i].simulated = pl::visit_policy(f.policies[i], [&](auto p) {
            if constexpr (requires { p.search_limit_s; })
              if (f.search_limit_s >= 0) p.search_limit_s = f.search_limit_s;
            return pl::order(d, p, f.policy);
          });
          put_lists(wire, reports[i].simulated.stages);
        }
      }, "ordering the transfers");
      if (!problem.empty()) wire.clear();
    }
    // Rank 0 may search up to each policy's time limit (and optimal's search limit after its
    // seed) before it answers: the others wait that much longer (a 61 s limit ended healthy runs).
    const double ordering_s =
        std::min(max_time_limit_s, timeout_s + static_cast<double>(f.policies.size()) *
                                                   (f.policy.time_limit_s + std::max(f.search_limit_s, 0.0)));
    if (!input_check(ordering_s)) return MPI_Finalize(), 2;
    broadcast_vector(wire, 0, timeout_s, "receiving the lists");
    std::vector<pl::lists> all_lists;
    std::size_t at = 0;
    for (std::size_t i = 0; i < f.policies.size(); ++i) all_lists.push_back(get_lists(wire, at));
    std::vector<std::vector<std::vector<pl::graph::id>>> all_ids;
    for (const pl::lists& l : all_lists) all_ids.push_back(pl::identify(g, l));

    // 2. A communicator and a resharder per edge and direction (every rank goes through them in
    //    the same order; each construction involves only the two stages' ranks).
    std::vector<runner> runners(specs.size());
    // A peer may be computing, not stalled: a sender may run every entry of its list before it
    // sends, and a stage may finish a run long before the last. The waits inside the runs (and
    // while the edges are timed) allow every stated operation one after another plus timeout_s;
    // with timeout_s alone, an entry of 3 s under --timeout-s 1 failed a healthy run.
    double stated_s = 0;
    for (pl::graph::id o = 0; o < g.size(); ++o) stated_s += g.duration(o) * unit;
    const double in_run_s = std::min(max_time_limit_s, timeout_s + stated_s);
    const reshard_options ro = [&] {
      reshard_options o = pl::to_reshard_options(net, net.devices_per_host);
      o.timeout_s = in_run_s;
      return o;
    }();
    // MPI_Comm_split has no deadline of its own: every rank is known to have come this far first.
    sleepy_barrier(MPI_COMM_WORLD, timeout_s, "making the edges' communicators");
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const transfer_spec& t = specs[i];
      const bool member = stage == t.sender || stage == t.receiver;
      const int key = static_cast<int>(stage == t.sender ? rank - t.sender * k : k + rank - t.receiver * k);
      detail::mpi_check(MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, key, &runners[i].comm), "MPI_Comm_split");
    }
    // 3. Each resharder: built, warmed up (connections), timed alone (best of 3, slowest
    //    participant); with --size-by measured, an activation is resized by stated / measured and
    //    rebuilt until it takes the stated time within 3% (at most 3 times).
    std::vector<double> alone(specs.size(), 0);
    auto time_alone = [&](runner& r) {
      r.run();
      r.run();
      double best = 1e300;
      for (int q = 0; q < 3; ++q) {
        sleepy_barrier(r.comm, timeout_s, "timing a transfer alone");
        const auto t0 = clock_type::now();
        r.run();
        best = std::min(best, allreduce_max(r.comm, seconds_since(t0), in_run_s));
      }
      return best;
    };
    std::vector<double> cols(specs.size(), 0);
    for (std::size_t i = 0; i < specs.size(); ++i) {
      if (runners[i].comm == MPI_COMM_NULL) continue;
      transfer_spec& t = specs[i];
      runners[i].run = build_runner(runners[i].comm, t, ro, net.strategy, rank);
      alone[i] = time_alone(runners[i]);
      if (f.size_by_measured && !t.from_file && t.stated_s > 0)
        for (int q = 0; q < 3 && std::abs(alone[i] / t.stated_s - 1) > 0.03; ++q) {
          const double c = static_cast<double>(t.tensor.shape.extent(1)) * t.stated_s / alone[i];
          const index_t next = std::clamp<index_t>(static_cast<index_t>(std::llround(c)), k, (index_t{1} << 31) / (8 * k * 4));
          if (next == t.tensor.shape.extent(1)) break;
          t.tensor = activation(k, next);
          runners[i].run = nullptr;
          runners[i].run = build_runner(runners[i].comm, t, ro, net.strategy, rank);
          alone[i] = time_alone(runners[i]);
        }
      cols[i] = static_cast<double>(t.tensor.shape.extent(t.tensor.shape.rank() - 1));
    }
    {
      std::vector<double> got(2 * specs.size(), 0), mine(alone);
      mine.insert(mine.end(), cols.begin(), cols.end());
      MPI_Request r = MPI_REQUEST_NULL;
      detail::mpi_check(MPI_Iallreduce(mine.data(), got.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX,
                                       MPI_COMM_WORLD, &r),
                        "MPI_Iallreduce");
      bounded_wait(r, in_run_s, "gathering the transfer times", mine, got);
      for (std::size_t i = 0; i < specs.size(); ++i) {
        alone[i] = got[i];
        transfer_spec& t = specs[i];
        if (!t.from_file && static_cast<index_t>(got[specs.size() + i]) != t.tensor.shape.extent(1)) {
          t.tensor = activation(k, static_cast<index_t>(got[specs.size() + i]));
          t.predicted_s = pl::reshard_time_s(t.tensor, net, t.pass == pl::pass_kind::backward);
        }
        t.bytes = 0;
        for (const pl::tensor_edge* y : batch_of(t)) t.bytes += tensor_bytes(*y);
      }
    }

    // 4. Every rank's clock against rank 0's; compute calibration (matmul), one rank at a time so that ranks sharing cores do not skew it.
    const clock_estimate clock_est = clock_offset(timeout_s);
    const double offset = clock_est.offset;
    matmul_state mm;
    if (f.compute == compute_kind::matmul)
      for (int r = 0; r < size; ++r) {
        if (r == rank) mm.calibrate();
        sleepy_barrier(MPI_COMM_WORLD, timeout_s, "calibrating the compute");
      }

    // 5. The runs: every policy in turn, --repeat times.
    const bool separate = d.streams == pl::stream_mode::separate;
    for (int rep = 0; rep < f.repeat; ++rep)
      for (std::size_t i = 0; i < f.policies.size(); ++i) {
        rank_times t = run_lists(g, all_lists[i][static_cast<std::size_t>(stage)], all_ids[i][static_cast<std::size_t>(stage)],
                                 runners, f.compute, mm, unit, separate, timeout_s, offset);
        // Gather at rank 0.
        std::vector<double> mine{t.origin};
        mine.insert(mine.end(), t.start.begin(), t.start.end());
        mine.insert(mine.end(), t.end.begin(), t.end.end());
        std::vector<int> counts(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
        long long total = 0;  // MPI_Igatherv's offsets are ints: past them every rank refuses alike
        for (int r = 0; r < size; ++r) {
          counts[static_cast<std::size_t>(r)] = static_cast<int>(1 + 2 * all_lists[i][static_cast<std::size_t>(r / k)].size());
          if (total > std::numeric_limits<int>::max() - counts[static_cast<std::size_t>(r)])
            throw error("gathering the measured times: " + std::to_string(size) + " ranks' entries are more than one MPI "
                        "gather holds (2^31 - 1 values); fewer ranks per stage or a smaller pipeline");
          offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
          total += counts[static_cast<std::size_t>(r)];
        }
        std::vector<double> gathered(rank == 0 ? static_cast<std::size_t>(total) : 1);
        MPI_Request req = MPI_REQUEST_NULL;
        detail::mpi_check(MPI_Igatherv(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, gathered.data(), counts.data(),
                                       offsets.data(), MPI_DOUBLE, 0, MPI_COMM_WORLD, &req),
                          "MPI_Igatherv");
        bounded_wait(req, in_run_s, "gathering the measured times", mine, gathered, counts, offsets);
        if (rank != 0) continue;
        std::vector<rank_times> times(static_cast<std::size_t>(size));
        double origin = 1e300, makespan = 0;
        for (int r = 0; r < size; ++r) origin = std::min(origin, gathered[static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)])]);
        for (int r = 0; r < size; ++r) {
          const std::size_t n = static_cast<std::size_t>(counts[static_cast<std::size_t>(r)] / 2);
          const double* p = gathered.data() + offsets[static_cast<std::size_t>(r)] + 1;
          rank_times& q = times[static_cast<std::size_t>(r)];
          q.origin = p[-1] - origin;
          for (std::size_t j = 0; j < n; ++j) {
            q.start.push_back(p[j] - origin);
            q.end.push_back(p[n + j] - origin);
            makespan = std::max(makespan, q.end.back());
          }
        }
        policy_report& rep_i = reports[i];
        rep_i.runs.push_back(makespan);
        if (rep_i.runs.size() == 1 || makespan < rep_i.runs[rep_i.best]) {
          rep_i.best = rep_i.runs.size() - 1;
          rep_i.best_times = std::move(times);
        }
      }

    // 6. Rank 0: re-simulation with the measured durations, the report.
    if (rank == 0) {
      resimulate(reports, d, g, all_lists, all_ids, k, unit);
      print_report(f, d, k, unit, clock_est, mm, net, specs, alone, reports);
    }
    for (runner& r : runners) {
      r.run = nullptr;
      if (r.comm != MPI_COMM_NULL) MPI_Comm_free(&r.comm);
    }
    sleepy_barrier(MPI_COMM_WORLD, timeout_s, "finishing");
  } catch (const timeout_error& e) {
    std::fprintf(stderr, "meshcast-pipeline-mpi (rank %d): error: %s\n", rank, e.what());
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    meshcast::cli::end_job(1);
  } catch (const std::exception& e) {
    const bool no_room = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;  // said in words, not "std::bad_alloc"
    std::fprintf(stderr, "meshcast-pipeline-mpi (rank %d): error: %s\n", rank, no_room ? "out of memory" : e.what());
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    meshcast::cli::end_job(1);
  }
  MPI_Finalize();
  return 0;
}

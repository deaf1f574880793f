// meshcast-reshard's program (examples/meshcast_reshard.cpp is its `main`): reshards a tensor across MPI ranks (rank r is device r) and checks the result.
//
//   mpiexec -n 20 meshcast-reshard --shape 1024x1024x512 --src-mesh 2x4 --src-spec S0,R,R
//       --dst-mesh 3x4 --dst-spec R,S0,R --solver greedy
//
// Every source shard is filled with each element's global row-major index (little-endian, int32
// for --dtype-bytes 4, int64 for 8, wrapping); every destination element is checked; rank 0
// prints one summary line. Exit status 0 only when every element on every rank is right.
//
// Failures: every wait on other ranks has a deadline (--timeout-s). Input errors are the same on
// every rank and rank 0 reports them; a rank's own failure (a file it cannot write, memory it
// cannot get, a peer that does not answer) is reported by that rank. When the ranks can still
// agree, all of them end with exit status 2; when a peer is gone or stopped, the ranks that notice
// report it, wait a moment for the others to do the same, and end the job with MPI_Abort.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <meshcast/mpi.hpp>

#include "one_blas_thread.hpp"  // CBC and MPI in one executable
#include "fill.hpp"
#include "json_writer.hpp"
#include "plan_options.hpp"
#include "plan_report.hpp"
#include "reshard_failures.hpp"   // failure, describe, report, abort_job, timeout_failure
#include "reshard_trace.hpp"      // gather_trace (--exec-trace)
#include "reshard_transport.hpp"  // concurrent_runs_send_eagerly, tcp_payload_fraction, ucx_eager_bytes
#include "schedule_options.hpp"
#include "schedule_report.hpp"

namespace meshcast::cli::reshard_detail {
struct reshard_flags {
  std::string dump;
  std::string exec_trace;  // Chrome trace of what each rank did in the last run, beside the model
  double timeout_s = 120;
  int repeat = 1;
};

constexpr int max_repeat = 1'000'000;

}  // namespace meshcast::cli::reshard_detail

namespace meshcast::cli {

/// meshcast-reshard with --manifest (manifest_reshard.hpp).
template <class Solvers = default_solvers, class Strategies = builtin_strategies>
int reshard_manifest_main(int argc, char** argv);

/// meshcast-reshard's whole program, over the solvers and strategies of the lists: a program that
/// appends its own policies to them and calls this from `main` is meshcast-reshard accepting their
/// names (examples/custom_reshard.cpp).
template <class Solvers, class Strategies>
int reshard_whole_run(int argc, char** argv) {
  using namespace reshard_detail;
  concurrent_runs_send_eagerly(argc, argv);  // before MPI_Init: UCX reads its settings there
  MPI_Init(&argc, &argv);
  // MPI errors come back as codes (and become meshcast::error) instead of aborting inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_rank = rank;  // before --manifest's hand-off too: its errors named every rank "rank 0"
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--manifest") return reshard_manifest_main<Solvers, Strategies>(argc, argv);

  cli::plan_flags flags;
  cli::schedule_flags sched;
  reshard_flags extra;
  std::vector<index_t> host_of;
  failure failed;
  bool json = false;
  std::string efficiency_from = "the default";  // where the model's payload fraction comes from
  auto agree = [&](const char* what) {  // every rank learns whether all are fine; bounded in time
    try {
      return all_ok(MPI_COMM_WORLD, !failed, extra.timeout_s, what);
    } catch (const timeout_error& e) {
      abort_job(timeout_failure(e, host_of, failed));
    }
  };
  auto finish = [&](int status) {
    MPI_Finalize();
    return status;
  };

  // 1. Flags and plan: input errors, the same on every rank.
  plan p;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw error("flag " + detail::printable(arg) + " needs a value");
        return argv[++i];
      };
      if (cli::parse_plan_flag(flags, arg, next) || cli::parse_schedule_flag(sched, arg, next)) continue;
      // --json is a plan flag: here it asks for the result as one JSON object.
      if (arg == "--dump") extra.dump = cli::parse_name(arg, next());
      else if (arg == "--exec-trace") extra.exec_trace = cli::parse_name(arg, next());
      else if (arg == "--timeout-s") extra.timeout_s = cli::parse_real(arg, next(), 0.001, max_time_limit_s);
      else if (arg == "--repeat") {
        extra.repeat = static_cast<int>(cli::parse_count(arg, next(), 1, max_repeat));
      } else {
        throw error("unknown flag '" + detail::printable(arg) + "'");
      }
    }
    if (flags.help) {
      if (rank == 0)
        std::printf("usage: mpiexec -n <devices> meshcast-reshard <meshcast-plan flags> [--dump DIR] [--timeout-s S] "
                    "[--repeat N] [--exec-trace FILE] [--json]\n"
                    "       mpiexec -n <devices> meshcast-reshard --manifest FILE [--devices-per-host N] [--json] [schedule "
                    "options] [--dump DIR] [--timeout-s S] [--repeat N] [--exec-trace FILE]\n"
                    "  (--manifest FILE: every tensor of a model's manifest as one batch, each element checked; the\n"
                    "   format: include/meshcast/api/manifest.hpp; rank d is device d)\n%s%s"
                    "  --dump DIR              write each destination shard to DIR/rank<r>.bin (empty file for an empty shard)\n"
                    "  --timeout-s S           give up on a peer after S seconds without progress (default 120)\n"
                    "  --repeat N              reshard N times (1..%d), report the best time\n"
                    "  --exec-trace FILE       write a Chrome trace: each rank's steps in the last run beside the model\n"
                    "  (--json: one JSON object on rank 0's stdout: seconds, predicted_seconds, lower_bound_seconds,\n"
                    "   physical_bound_seconds, bytes_delivered, wrong_elements, strategy, solver, mode, ...)\n"
                    "  (without --nic-efficiency, where UCX_TLS names TCP and no network transport besides it, the\n"
                    "   model takes TCP over Ethernet's payload fraction at the MTU of UCX's NIC: 1448/1514 at 1500)\n",
                    cli::plan_flags_help(), cli::schedule_flags_help<Solvers, Strategies>().c_str(), max_repeat);
      return finish(0);
    }
    json = flags.json;
    if (!sched.nic_efficiency_given)
      if (auto f = tcp_payload_fraction()) sched.nic_efficiency = f->value, efficiency_from = f->from;
    // The transport's eager limit, which the backend and the model must both know: UCX's setting
    // unless --eager-bytes says otherwise (read before concurrent runs raise it, which only
    // concurrent mode, unacknowledged, sees).
    if (!sched.eager_bytes_given)
      if (auto e = ucx_eager_bytes()) sched.eager_bytes = *e;
    p = cli::plan_from_flags(flags);
    cut_for_staging(p, sched.max_staging_bytes);  // tasks of at most half the cap: the executor keeps it
    if (p.device_count != size)
      throw error("the layouts use " + std::to_string(p.device_count) + " devices but " + std::to_string(size) +
                  " ranks were started: run with mpiexec -n " + std::to_string(p.device_count));
    host_of = default_hosts(p.device_count, static_cast<index_t>(p.src_devices.size()), flags.devices_per_host);
  } catch (const std::exception& e) {
    failed = describe(e, false);
  }
  if (!agree("checking the input")) {
    report(failed);
    return finish(2);
  }

  // 2. Rank 0 schedules; every rank receives and checks the schedule.
  schedule s;
  network net;
  try {
    net = cli::network_from_flags(sched, host_of);
    if (rank == 0) s = cli::schedule_from_flags<Solvers, Strategies>(sched, p, net);
    if (rank == 0 && !sched.trace.empty())  // the model's schedule (--exec-trace: what ran)
      cli::write_trace(sched.trace, s, net, resource_space{net.port_count(), net.device_count()});
  } catch (const std::exception& e) {
    failed = describe(e, false);
  }
  // Rank 0's scheduling error reaches everyone through the agreement; the others stay silent.
  if (!agree("scheduling")) {
    report(failed);
    return finish(2);
  }
  double predicted = s.makespan_s;
  try {
    bounded_broadcast(MPI_COMM_WORLD, &predicted, sizeof predicted, 0, extra.timeout_s, "receiving the prediction");
    share_schedule(MPI_COMM_WORLD, p, s, 0, extra.timeout_s);
  } catch (const timeout_error& e) {
    abort_job(timeout_failure(e, host_of));
  } catch (const std::exception& e) {
    failed = describe(e, true);
  }
  if (!agree("sharing the schedule")) {
    report(failed);
    return finish(2);
  }

  // 3. Buffers and the executor: this rank's own resources.
  const std::size_t eb = static_cast<std::size_t>(p.element_bytes);
  const std::string strategy = sched.strategy.empty() ? "auto" : sched.strategy;
  mpi_backend backend(MPI_COMM_WORLD, extra.timeout_s, chain_chunk_bytes, static_cast<std::size_t>(sched.eager_bytes));
  std::size_t wrong = 0;
  double seconds = 0;
  const bool is_destination = std::find(p.dst_devices.begin(), p.dst_devices.end(), rank) != p.dst_devices.end();
  std::vector<std::byte> destination;
  [&] {
    std::optional<executor<mpi_backend>> exec;
    std::vector<std::byte> source, pristine;
    try {
      exec.emplace(backend, p, s, sched.max_staging_bytes, connect_later);  // its groups once every rank is ready
      exec->record_times(!extra.exec_trace.empty());
      source.resize(exec->source_bytes());
      destination.resize(exec->destination_bytes());
      if (!source.empty()) cli::fill(p.source_tile(rank), p.src.shape, eb, source);
      pristine = source;
    } catch (const timeout_error& e) {
      abort_job(timeout_failure(e, host_of));
    } catch (const std::exception& e) {
      failed = describe(e, true);
    }
    if (!agree("preparing buffers")) return;
    try {
      exec->connect();
    } catch (const timeout_error& e) {
      abort_job(timeout_failure(e, host_of));
    } catch (const std::exception& e) {
      failed = describe(e, true);
    }
    if (!agree("making the executor's groups")) return;

    // 4. The reshards. A failure here leaves peers waiting on this rank: the job ends.
    try {
      for (int r = 0; r < extra.repeat; ++r) {
        bounded_barrier(MPI_COMM_WORLD, extra.timeout_s);
        const auto t0 = std::chrono::steady_clock::now();
        exec->run(source, destination);
        bounded_barrier(MPI_COMM_WORLD, extra.timeout_s);
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        seconds = r == 0 ? t : std::min(seconds, t);
      }
    } catch (const timeout_error& e) {
      abort_job(timeout_failure(e, host_of));
    } catch (const std::exception& e) {
      abort_job(describe(e, true));
    }

    if (!extra.exec_trace.empty()) {
      try {
        gather_trace(*exec, s, extra.exec_trace, extra.timeout_s);
      } catch (const timeout_error& e) {
        abort_job(timeout_failure(e, host_of));
      } catch (const std::exception& e) {
        failed = describe(e, true);
      }
    }

    // 5. Checks and dumps: local to this rank.
    try {
      if (source != pristine) throw error("device " + std::to_string(rank) + ": the source shard was written to");
      if (!destination.empty()) wrong = cli::count_wrong(p.destination_tile(rank), p.src.shape, eb, destination);
      if (!extra.dump.empty() && is_destination)  // one file per destination rank, empty or not
        cli::write_file(extra.dump + "/rank" + std::to_string(rank) + ".bin",
                        std::string(reinterpret_cast<const char*>(destination.data()), destination.size()), "shard file");
    } catch (const std::exception& e) {
      failed = describe(e, true);
    }
  }();
  if (!agree("checking the result")) {
    report(failed);
    return finish(2);
  }

  // 6. Summary. nccl-tests style: algbw = tensor bytes / time; busbw = bytes the busiest rank
  // takes in from other devices / time (what one device's link must sustain).
  std::uint64_t my_in = 0;
  for (const transfer& o : s.transfers)
    if (o.sender != rank && std::find(o.receivers.begin(), o.receivers.end(), rank) != o.receivers.end())
      my_in += static_cast<std::uint64_t>(o.bytes);
  std::uint64_t total_wrong = 0, busiest_in = 0;
  try {
    total_wrong = bounded_allreduce(MPI_COMM_WORLD, wrong, MPI_SUM, extra.timeout_s, "counting wrong elements");
    busiest_in = bounded_allreduce(MPI_COMM_WORLD, my_in, MPI_MAX, extra.timeout_s, "summing up");
  } catch (const timeout_error& e) {
    abort_job(timeout_failure(e, host_of));
  }
  int status = total_wrong == 0 ? 0 : 1;
  if (rank == 0) {
    try {
      const double tensor = static_cast<double>(p.tensor_bytes());
      const double delivered = static_cast<double>(p.total_bytes());
      const std::string solver = sched.solver.empty() ? "greedy" : sched.solver;
      if (json) {
        cli::json_writer j;
        j.begin_object();
        j.key("seconds").value(seconds);
        j.key("predicted_seconds").value(predicted);
        j.key("lower_bound_seconds").value(s.lower_bound_s);
        j.key("physical_bound_seconds").value(s.physical_bound_s);
        j.key("bytes_delivered").value(static_cast<long long>(p.total_bytes()));
        j.key("tensor_bytes").value(static_cast<long long>(p.tensor_bytes()));
        j.key("wrong_elements").value(static_cast<long long>(total_wrong));
        j.key("strategy").value(strategy);
        j.key("solver").value(solver);
        j.key("mode").value(std::string(to_string(s.mode)));
        j.key("nic_efficiency").value(sched.nic_efficiency);
        j.key("eager_bytes").value(static_cast<long long>(sched.eager_bytes));
        j.key("nic_efficiency_from").value(sched.nic_efficiency_given ? std::string("--nic-efficiency") : efficiency_from);
        j.key("ranks").value(static_cast<long long>(size));
        j.key("repeat").value(static_cast<long long>(extra.repeat));
        j.key("transfers").value(static_cast<long long>(s.transfers.size()));
        j.key("algbw_gbps").value(tensor / seconds / 1e9);
        j.key("busbw_gbps").value(static_cast<double>(busiest_in) / seconds / 1e9);
        j.end_object();
        cli::write_stdout(j.str() + "\n");
      } else {
        char line[1024];
        std::snprintf(line, sizeof line,
                      "meshcast-reshard: %d ranks, %s -> %s, strategy %s, solver %s, %s execution: %s delivered (%s tensor) "
                      "in %.6f s, algbw %.3f GB/s, busbw %.3f GB/s; predicted %.6f s, mode bound %.6f s, physical bound "
                      "%.6f s; %llu wrong elements\n",
                      size, p.src.to_string().c_str(), (p.dst.mesh.to_string() + " as " + p.dst.spec.to_string()).c_str(),
                      strategy.c_str(), solver.c_str(), std::string(to_string(s.mode)).c_str(),
                      cli::human_bytes(delivered).c_str(), cli::human_bytes(tensor).c_str(), seconds, tensor / seconds / 1e9,
                      static_cast<double>(busiest_in) / seconds / 1e9, predicted, s.lower_bound_s, s.physical_bound_s,
                      static_cast<unsigned long long>(total_wrong));
        cli::write_stdout(line);
      }
    } catch (const std::exception& e) {
      report(describe(e, true));
      status = 2;
    }
  }
  return finish(status);
}

template <class Solvers = default_solvers, class Strategies = builtin_strategies>
int reshard_main(int argc, char** argv) {
  try {
    return reshard_whole_run<Solvers, Strategies>(argc, argv);
  } catch (const std::exception& e) {
    // Outside the agreed stages (an allocation before the flags are read, say): this rank's
    // alone, so it ends the job itself rather than leave the others waiting for it.
    const bool no_room = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
    std::fprintf(stderr, "meshcast-reshard (rank %d): error: %s\n", reshard_detail::g_rank, no_room ? "out of memory" : e.what());
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // for the launcher to pass the line on before the abort
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) end_job(2);
    std::_Exit(2);
  }
}

}  // namespace meshcast::cli

#include "manifest_reshard.hpp"  // after reshard_main: it uses reshard_detail

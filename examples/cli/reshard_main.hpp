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
#include <cstdio>
#include <cctype>
#include <cstdlib>
#include <exception>
#include <fstream>
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

// What went wrong on this rank, if anything, and whether it is a rank's own failure (reported by
// that rank) or an input error (the same on every rank: reported by rank 0).
struct failure {
  std::string message;
  bool own = false;
  explicit operator bool() const { return !message.empty(); }
};

inline failure describe(const std::exception& e, bool own) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return {"out of memory (shards or schedule too large for this machine)", true};
  return {e.what(), own};
}

inline int g_rank = 0;

inline void report(const failure& f) {
  if (!f) return;
  if (f.own) std::fprintf(stderr, "meshcast-reshard (rank %d): error: %s\n", g_rank, f.message.c_str());
  else if (g_rank == 0) std::fprintf(stderr, "meshcast-reshard: error: %s\n", f.message.c_str());
  std::fflush(stderr);
}

// A peer is gone or stopped: nothing collective can finish. Report, give the other ranks a moment
// to report what they see, then end the whole job. MPI_Abort asks the launcher to end the job and
// waits for its answer (MPICH's PMI_Abort reads from the local proxy); on a host cut off from the
// launcher that answer never comes, so this rank ends itself 1 s later in any case (where the
// launcher is reachable, it ends the job at once).
[[noreturn]] inline void abort_job(const failure& f) {
  failure shown = f;
  shown.own = true;
  report(shown);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::_Exit(2);
  }).detach();
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::_Exit(2);
}

// "device 5 (host 1)" for messages.
inline std::string device_and_host(int d, const std::vector<meshcast::index_t>& host_of) {
  std::string s = "device " + std::to_string(d);
  if (d >= 0 && static_cast<std::size_t>(d) < host_of.size()) s += " (host " + std::to_string(host_of[d]) + ")";
  return s;
}

inline failure timeout_failure(const meshcast::timeout_error& e, const std::vector<meshcast::index_t>& host_of) {
  std::string m = e.what();
  if (!e.missing().empty()) {
    m += "; unreachable: ";
    for (std::size_t i = 0; i < e.missing().size() && i < 16; ++i)
      m += (i ? ", " : "") + device_and_host(e.missing()[i], host_of);
  }
  return {m, true};
}
// Rank 0 gathers every rank's step times (bounded in time) and writes them, with the model's
// times of the same transfers, as a Chrome trace: process 0 = measured, process 1 = model; one
// track per device.
template <class Executor>
void gather_trace(const Executor& exec, const meshcast::schedule& s, const std::string& path, double timeout_s) {
  using namespace meshcast;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Per step: transfer, wait, start, end, and when the rank's run began on its steady clock.
  std::vector<double> mine;
  for (const auto& t : exec.times())
    mine.insert(mine.end(), {static_cast<double>(t.transfer), t.wait, t.start, t.end, exec.run_began_s()});
  const int count = static_cast<int>(mine.size());
  // bounded_wait keeps these vectors' storage should it give up (a late rank may still write it).
  std::vector<int> sent{count}, counts(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Igather(sent.data(), 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &r), "MPI_Igather");
  bounded_wait(r, timeout_s, "gathering the trace's sizes", sent, counts);
  int total = 0;
  for (int k = 0; k < size; ++k) offsets[static_cast<std::size_t>(k)] = total, total += counts[static_cast<std::size_t>(k)];
  std::vector<double> all(static_cast<std::size_t>(std::max(total, 1)));
  detail::mpi_check(MPI_Igatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0,
                                 MPI_COMM_WORLD, &r), "MPI_Igatherv");
  bounded_wait(r, timeout_s, "gathering the trace", mine, all, counts, offsets);
  if (rank != 0) return;
  cli::json_writer j;
  j.begin_object().key("displayTimeUnit").value("ms").key("traceEvents").begin_array();
  // Every event names its transfer, that transfer's sender and its bytes in "args", for programs that read the trace.
  // Every measured event also gives, in "began_s", when its rank's run began on that rank's steady
  // clock: ranks on one machine (the emulated cluster) share it, and line their times up by it.
  auto event = [&](const std::string& name, long long pid, long long tid, double a, double b, const char* cat,
                   std::size_t i, double began = -1) {
    j.begin_object().key("ph").value("X").key("cat").value(cat).key("name").value(name);
    j.key("pid").value(pid).key("tid").value(tid).key("ts").value(a * 1e6).key("dur").value((b - a) * 1e6);
    j.key("args").begin_object().key("transfer").value(static_cast<long long>(i));
    j.key("sender").value(static_cast<long long>(s.transfers[i].sender));
    j.key("bytes").value(static_cast<long long>(s.transfers[i].bytes));
    if (began >= 0) j.key("began_s").value(began);
    j.end_object().end_object();
  };
  for (int d = 0; d < size; ++d)
    for (int k = offsets[static_cast<std::size_t>(d)]; k + 4 < offsets[static_cast<std::size_t>(d)] + counts[static_cast<std::size_t>(d)]; k += 5) {
      const auto at = [&](int q) { return all[static_cast<std::size_t>(k + q)]; };
      const auto i = static_cast<std::size_t>(at(0));
      const std::string name = std::string(to_string(s.transfers[i].kind)) + " " + std::to_string(i);
      if (at(2) > at(1)) event("wait " + std::to_string(i), 0, d, at(1), at(2), "wait", i, at(4));
      event(name, 0, d, at(2), at(3), "measured", i, at(4));
    }
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const std::string name = std::string(to_string(s.transfers[i].kind)) + " " + std::to_string(i);
    event(name, 1, s.transfers[i].sender, s.model[i].start, s.model[i].end, "model", i);
    for (index_t rcv : s.transfers[i].receivers)
      if (rcv != s.transfers[i].sender) event(name, 1, rcv, s.model[i].start, s.model[i].end, "model", i);
  }
  j.end_array().end_object();
  cli::write_file(path, j.str() + "\n", "execution trace");
}
// Over TCP, a UCX rendezvous (a message above UCX_RNDV_THRESH) starts with a handshake that waits
// behind whatever its peer is already sending on the same connection. Concurrent mode posts the two
// directions of a pair at once (a transpose does little else), so a handshake could wait out a
// whole transfer: on the emulated cluster's transposes, concurrent runs measured 1.16-1.49 of the
// model with the 1 MiB threshold and 0.97-1.24 with everything up to 64 MiB eager. So a concurrent
// run sends eagerly up to 64 MiB unless the user set a threshold (scripts/cluster.sh's default,
// marked by MC_CLUSTER_RNDV_DEFAULT=1, is not a choice). Ordered mode keeps the threshold: its sends
// up to mpi_backend's eager limit are acknowledged, and an acknowledgement queued behind a whole
// eager transfer in the other direction would stall the next one (measured 1.3-1.7 of the model).
inline void concurrent_runs_send_eagerly(int argc, char** argv) {
  bool concurrent = false;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string_view(argv[i]) == "--mode") concurrent = std::string_view(argv[i + 1]) == "concurrent";
  const char* chosen = std::getenv("UCX_RNDV_THRESH");
  const char* cluster_default = std::getenv("MC_CLUSTER_RNDV_DEFAULT");
  const bool user_chose = chosen && !(cluster_default && std::string_view(cluster_default) == "1");
  if (concurrent && !user_chose) ::setenv("UCX_RNDV_THRESH", "64mb", 1);
}

// The payload fraction of the line rate where the run's data goes over TCP/IPv4 and Ethernet (UCX
// limited to TCP, as scripts/cluster.sh sets it): a full frame of MTU + 14 bytes carries MTU - 52
// bytes of payload (IP and TCP headers with timestamps), 1448 of 1514 at MTU 1500. The MTU is that
// of UCX's first NIC (UCX_NET_DEVICES), 1500 when it cannot be read. None for other transports.
struct payload_fraction {
  double value = 1;
  std::string from;
};
inline std::optional<payload_fraction> tcp_payload_fraction() {
  const char* tls = std::getenv("UCX_TLS");
  if (!tls) return std::nullopt;
  bool tcp = false;
  for (std::string_view rest = tls; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    const std::string_view t = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (t == "tcp") tcp = true;
    else if (t != "self" && t != "sm" && t != "shm" && t != "posix" && t != "sysv" && t != "cma" && t != "knem" &&
             t != "xpmem")
      return std::nullopt;  // a transport that may carry the data another way
  }
  if (!tcp) return std::nullopt;
  std::string device = "eth0";
  if (const char* d = std::getenv("UCX_NET_DEVICES")) {
    device = std::string(d).substr(0, std::string(d).find_first_of(",:"));
    if (device.empty() || device == "all" || device.find('/') != std::string::npos) device.clear();
  }
  long mtu = 1500;
  if (!device.empty()) {
    std::ifstream in("/sys/class/net/" + device + "/mtu");
    long m = 0;
    if (in >> m && m >= 576 && m <= 65536) mtu = m;
  }
  return payload_fraction{static_cast<double>(mtu - 52) / static_cast<double>(mtu + 14),
                          "TCP over Ethernet, MTU " + std::to_string(mtu)};
}

// UCX's eager limit as UCX_RNDV_THRESH gives it ("1mb", "65536", "64k", "inf"); nothing when it
// is not set, "auto" or unreadable.
inline std::optional<index_t> ucx_eager_bytes() {
  const char* v = std::getenv("UCX_RNDV_THRESH");
  if (!v) return std::nullopt;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "inf") return index_t{1} << 40;
  std::size_t used = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(s, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = s.substr(used);
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  const unsigned long long scale = unit.empty() ? 1 : unit == "k" ? 1ull << 10 : unit == "m" ? 1ull << 20 : unit == "g" ? 1ull << 30 : 0;
  if (scale == 0 || n > (1ull << 40) / scale) return std::nullopt;
  return static_cast<index_t>(n * scale);
}

}  // namespace meshcast::cli::reshard_detail

namespace meshcast::cli {

/// meshcast-reshard with --manifest (manifest_reshard.hpp).
template <class Solvers = default_solvers, class Strategies = builtin_strategies>
int reshard_manifest_main(int argc, char** argv);

/// meshcast-reshard's whole program, over the solvers and strategies of the lists: a program that
/// appends its own policies to them and calls this from `main` is meshcast-reshard accepting their
/// names (examples/custom_reshard.cpp).
template <class Solvers = default_solvers, class Strategies = builtin_strategies>
int reshard_main(int argc, char** argv) {
  using namespace reshard_detail;
  concurrent_runs_send_eagerly(argc, argv);  // before MPI_Init: UCX reads its settings there
  MPI_Init(&argc, &argv);
  // MPI errors come back as codes (and become meshcast::error) instead of aborting inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--manifest") return reshard_manifest_main<Solvers, Strategies>(argc, argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_rank = rank;

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
      abort_job(timeout_failure(e, host_of));
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
                    "[--repeat N] [--json]\n%s%s"
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
      exec.emplace(backend, p, s, sched.max_staging_bytes);
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

}  // namespace meshcast::cli

#include "manifest_reshard.hpp"  // after reshard_main: it uses reshard_detail

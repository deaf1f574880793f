// meshcast-bench: a size sweep of one reshard, in the spirit of nccl-tests, with the MPI
// collective that does the same job beside it (--peer mpi). Built on <meshcast/benchmark.hpp>:
// Google Benchmark's flags pass through (--benchmark_format=json, --benchmark_out=FILE).
//
//   mpiexec -n 4 meshcast-bench --shape 1024x256 --src-mesh 4 --src-spec S0,R --dst-mesh 4
//       --dst-spec R,S0 --same-mesh --min-bytes 1K --max-bytes 64M --factor 4 --peer mpi
//   (one command line)
//
// Dimension 0 of the shape is swept so that the tensor's size runs from --min-bytes to
// --max-bytes by --factor (a size below one row of the other dims is one row).
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <meshcast/benchmark.hpp>

#include "cli/schedule_options.hpp"
#include "mpi_peer.hpp"

namespace {

using namespace meshcast;

struct bench_flags {
  cli::plan_flags plan;
  cli::schedule_flags schedule;
  std::uint64_t min_bytes = 1024, max_bytes = std::uint64_t{1} << 26, factor = 4;
  std::string peer, label = "reshard", mode = "best";
  double timeout_s = 120;
};

// 4096, 4K, 64M, 1G: a size in bytes (K, M, G are powers of 1024).
std::uint64_t parse_bytes(const std::string& flag, const std::string& text) {
  std::string digits = text;
  std::uint64_t unit = 1;
  if (!digits.empty() && (digits.back() == 'K' || digits.back() == 'M' || digits.back() == 'G')) {
    unit = std::uint64_t{1} << (digits.back() == 'K' ? 10 : digits.back() == 'M' ? 20 : 30);
    digits.pop_back();
  }
  const std::uint64_t v = static_cast<std::uint64_t>(cli::parse_count(flag, digits, 1, std::int64_t{1} << 40));
  if (v > (std::uint64_t{1} << 40) / unit) throw error(flag + " '" + meshcast::detail::printable(text) + "' is larger than 1T");
  return v * unit;
}

const char* usage() {
  return "usage: mpiexec -n N meshcast-bench --shape AxB... --src-mesh M --src-spec S --dst-mesh M --dst-spec S\n"
         "         [--same-mesh] [--min-bytes 1K] [--max-bytes 64M] [--factor 4] [--peer mpi] [--label NAME]\n"
         "         [--dst-devices I,J,...] [--devices-per-host N] [--dtype-bytes N]\n"
         "         [--strategy NAME] [--solver NAME] [--mode best|ordered|concurrent] [--nic-gbps G] [--latency-us U]\n"
         "         [--intra-gbps G] [--nic-efficiency F] [--nics-per-host N] [--time-limit-ms T] [--seed N]\n"
         "         [--max-staging-bytes B] [--timeout-s S] [Google Benchmark flags, e.g. --benchmark_format=json]\n"
         "Replicas always split (the one call's default); --solver takes the built-in solvers, not ilp.\n"
         "Benchmarks are named LABEL/WAY/BYTES, WAY meshcast or the MPI collective of --peer mpi. --mode best\n"
         "(the default) runs each size in the execution mode the model predicts faster.\n";
}

bench_flags parse(int argc, char** argv) {
  bench_flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw error(detail::printable(a) + " needs a value");
      return argv[++i];
    };
    if (a == "--mode") {  // before the schedule flags: this program also takes best
      f.mode = next();
      if (f.mode != "best" && f.mode != "ordered" && f.mode != "concurrent")
        throw error("--mode '" + detail::printable(f.mode) + "' is not best, ordered or concurrent");
      continue;
    }
    // Schedule flags the one call has no option for: refused, rather than parsed and ignored.
    if (a == "--json") throw error("--json: meshcast-bench writes Google Benchmark's formats (--benchmark_format=json)");
    if (a == "--eager-bytes" || a == "--mpi-broadcast" || a == "--trace")
      throw error(a + " is a flag of meshcast-plan and meshcast-reshard; meshcast-bench runs the one call, which has no such option");
    if (cli::parse_plan_flag(f.plan, a, next) || cli::parse_schedule_flag(f.schedule, a, next)) continue;
    if (a == "--min-bytes") f.min_bytes = parse_bytes(a, next());
    else if (a == "--max-bytes") f.max_bytes = parse_bytes(a, next());
    else if (a == "--factor") f.factor = static_cast<std::uint64_t>(cli::parse_count(a, next(), 2, 1024));
    else if (a == "--peer") {
      f.peer = next();
      if (f.peer != "mpi") throw error("--peer '" + detail::printable(f.peer) + "' is not mpi");
    } else if (a == "--label") f.label = next();
    else if (a == "--timeout-s") f.timeout_s = cli::parse_real(a, next(), 0.001, meshcast::max_time_limit_s);
    else throw error("unknown flag '" + detail::printable(a) + "'");
  }
  if (f.min_bytes > f.max_bytes) throw error("--min-bytes is larger than --max-bytes");
  // Names checked now, with the flag named, rather than once per size of the sweep.
  try {
    if (!f.schedule.strategy.empty()) visit_strategy<builtin_strategies>(f.schedule.strategy, [](auto) {});
  } catch (const error& e) {
    throw error(std::string("--strategy: ") + e.what());
  }
  try {
    if (!f.schedule.solver.empty()) visit_solver<builtin_solvers>(f.schedule.solver, [](auto) {});
  } catch (const error& e) {
    throw error(std::string("--solver: ") + e.what() + " (meshcast-bench takes the built-in solvers, not ilp)");
  }
  return f;
}

// The shape text with dimension 0 replaced.
std::string with_rows(const std::string& shape, std::uint64_t rows) {
  const std::size_t x = shape.find('x');
  return std::to_string(rows) + (x == std::string::npos ? "" : shape.substr(x));
}

reshard_options options_of(const bench_flags& f) {
  reshard_options o;
  if (f.plan.same_mesh) o.devices = device_map::same();
  else if (!f.plan.dst_devices.empty()) o.devices = device_map::listed(f.plan.dst_devices);
  o.devices_per_host = f.plan.devices_per_host > 0 ? f.plan.devices_per_host : 0;
  o.nic_gbps = f.schedule.nic_gbps, o.latency_us = f.schedule.latency_us, o.intra_gbps = f.schedule.intra_gbps;
  o.nic_efficiency = f.schedule.nic_efficiency, o.nics_per_host = f.schedule.nics_per_host;
  o.time_limit_s = f.schedule.time_limit_ms / 1000, o.seed = f.schedule.seed;
  o.timeout_s = f.timeout_s;
  if (f.schedule.max_staging_given) o.max_staging_bytes = f.schedule.max_staging_bytes;
  return o;
}

// Registers the sweep: per size meshcast's reshard, then the MPI peer's job.
void register_sweep(benchmark_session& session, bench_flags& f) {
  const std::string strategy = f.schedule.strategy.empty() ? "auto" : f.schedule.strategy;
  const std::string solver = f.schedule.solver.empty() ? "greedy" : f.schedule.solver;
  cli::plan_flags one_row = f.plan;
  one_row.shape = with_rows(f.plan.shape, 1);
  const plan row = cli::plan_from_flags(one_row);
  const std::uint64_t row_bytes = static_cast<std::uint64_t>(row.tensor_bytes());
  if (row_bytes == 0)  // the sweep scales dimension 0: the others must hold an element
    throw error("--shape '" + detail::printable(f.plan.shape) + "' has a dimension of 0 besides the first: nothing to sweep");
  std::uint64_t last_rows = 0;
  for (std::uint64_t target = f.min_bytes; target <= f.max_bytes; target *= f.factor) {
    const std::uint64_t rows = std::max<std::uint64_t>(1, target / row_bytes);
    if (rows == last_rows) continue;  // sizes below one row are all one row
    last_rows = rows;
    cli::plan_flags pf = f.plan;
    pf.shape = with_rows(f.plan.shape, rows);
    const plan p = cli::plan_from_flags(pf);
    const std::string size = std::to_string(p.tensor_bytes());
    const dynamic_shape shape = parse_shape(pf.shape);
    const dynamic_layout src(parse_mesh(pf.src_mesh), dynamic_spec(pf.src_spec), shape);
    const dynamic_layout dst(parse_mesh(pf.dst_mesh), dynamic_spec(pf.dst_spec), shape);
    const reshard_options o = options_of(f);
    // The mode: the one asked for, or (best) whichever the model predicts faster for this size.
    std::optional<timed_job> ours;
    try {
      for (execution mode : {execution::ordered, execution::concurrent}) {
        if (f.mode != "best" && to_string(mode) != f.mode) continue;
        reshard_options o = options_of(f);
        o.mode = mode;
        timed_job job = visit_strategy<builtin_strategies>(strategy, [&](auto s) {
          return visit_solver<builtin_solvers>(solver, [&](auto v) {
            return session.reshard_job<decltype(v), decltype(s)>(src, dst, static_cast<std::size_t>(p.element_bytes), o);
          });
        });
        if (!ours || job.predicted_s < ours->predicted_s) ours = std::move(job);
      }
    } catch (const std::exception& e) {
      session.report_failure(f.label + "/meshcast/" + size, e);
      continue;
    }
    session.add(f.label + "/meshcast/" + size, *ours);
    if (f.peer.empty()) continue;
    try {
      bench::peer_kind kind{};
      timed_job peer = bench::mpi_peer_job(p, session.communicator(), ours->bound_s, f.timeout_s, &kind);
      session.add(f.label + "/" + bench::peer_name(kind) + "/" + size, std::move(peer));
    } catch (const std::exception& e) {
      session.report_failure(f.label + "/mpi/" + size, e);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Google Benchmark's Initialize answers --help with its own flags only: ours answer it first.
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--help") argv[i] = const_cast<char*>("-h");
  meshcast::benchmark_session session(argc, argv);  // takes Google Benchmark's flags out of argv
  if (session.failed()) return 2;                    // a Google Benchmark flag it refused, named by every rank
  try {
    bench_flags f = parse(argc, argv);
    if (f.plan.help) {
      if (session.rank() == 0) std::fputs(usage(), stdout);
      return 0;
    }
    register_sweep(session, f);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meshcast-bench (rank %d): error: %s\n%s", session.rank(), e.what(), session.rank() == 0 ? usage() : "");
    return 2;
  }
  return session.run();
}

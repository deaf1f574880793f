// Command-line flags for networks, strategies and solvers, shared by the command-line tools.
#pragma once

#include <optional>
#include <string>
#include <type_traits>

#include <meshcast/meshcast.hpp>
#if MESHCAST_HAS_CBC
#include <meshcast/solver/ilp.hpp>
#endif

#include "flag_values.hpp"
#include "plan_options.hpp"

namespace meshcast::cli {

#if MESHCAST_HAS_CBC
/// The solvers the tools offer by name: the built-in ones and ilp.
using default_solvers = solvers_with_ilp;
#else
/// Stands for ilp in a program built without CBC: the name is known, and choosing it says why it
/// cannot run.
struct ilp_not_built {
  static constexpr std::string_view name = "ilp";
  const char* supports(const instance&) const { return "this program was built without COIN-OR CBC"; }
  solver_result solve(const instance&, const solver_options&) const { return {}; }
};
using default_solvers = append_t<builtin_solvers, ilp_not_built>;
#endif
/// Shortest text for a bound in a message (1e+15, 0.001, 64).
inline std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace meshcast::cli

namespace meshcast::cli {

struct schedule_flags {
  std::string solver, strategy;
  bool split_replicas = false;
  double nic_gbps = 10, intra_gbps = 800, latency_us = 10, nic_efficiency = 1;
  bool nic_efficiency_given = false;
  int nics_per_host = 1;
  index_t eager_bytes = static_cast<index_t>(std::size_t{1} << 20);  // the MPI backend's eager limit
  bool eager_bytes_given = false;
  double time_limit_ms = 1000;
  std::uint64_t seed = 1;
  std::string trace;
  execution mode = execution::ordered;
  bool mode_given = false;
  bool group_broadcast = false;  // --mpi-broadcast communicator: collective broadcasts, not chains
  std::size_t max_staging_bytes = default_max_staging_bytes;  // --max-staging-bytes (0: no cap)
  bool max_staging_given = false;
  /// A schedule is made when a solver, a strategy, a mode or a trace is asked for.
  bool wanted() const { return !solver.empty() || !strategy.empty() || !trace.empty() || mode_given; }
};

/// A finite number in [lo, hi]; the message names the flag, the text and the range.
inline double parse_real(const std::string& flag, const std::string& text, double lo = 0, double hi = 1e15) {
  const std::optional<double> v = meshcast_cli::whole_number(text);
  if (!v || !(*v >= lo && *v <= hi))  // NaN fails every comparison
    throw error(flag + " '" + detail::printable(text) + "' is not a number in [" + format_number(lo) + ", " +
                format_number(hi) + "]");
  return *v;
}

using meshcast_cli::parse_u64;

template <class Next>
bool parse_schedule_flag(schedule_flags& f, const std::string& arg, Next&& next) {
  if (arg == "--solver") f.solver = parse_name(arg, next());
  else if (arg == "--strategy") f.strategy = parse_name(arg, next());
  else if (arg == "--split-replicas") f.split_replicas = true;
  // Bandwidths as the network accepts them (1 byte/s .. 1e15 bytes/s), latency up to an hour,
  // time limits up to meshcast::max_time_limit_s.
  else if (arg == "--nic-gbps") f.nic_gbps = parse_real(arg, next(), 8e-9, 8e6);
  else if (arg == "--intra-gbps") f.intra_gbps = parse_real(arg, next(), 8e-9, 8e6);
  else if (arg == "--nic-efficiency") f.nic_efficiency = parse_real(arg, next(), 1e-3, 1), f.nic_efficiency_given = true;
  else if (arg == "--latency-us") f.latency_us = parse_real(arg, next(), 0, 3.6e9);
  else if (arg == "--eager-bytes")
    f.eager_bytes = static_cast<index_t>(parse_count(arg, next(), 0, std::int64_t{1} << 40)), f.eager_bytes_given = true;
  else if (arg == "--nics-per-host") f.nics_per_host = static_cast<int>(parse_count(arg, next(), 1, max_nics_per_host));
  else if (arg == "--time-limit-ms") f.time_limit_ms = parse_real(arg, next(), 0, max_time_limit_s * 1000);
  else if (arg == "--seed") f.seed = parse_u64(arg, next());
  else if (arg == "--trace") f.trace = parse_name(arg, next());
  else if (arg == "--mode") f.mode = meshcast_cli::parse_mode(arg, next()), f.mode_given = true;
  else if (arg == "--max-staging-bytes")
    f.max_staging_bytes = static_cast<std::size_t>(parse_count(arg, next(), 0, std::int64_t{1} << 50)), f.max_staging_given = true;
  else if (arg == "--mpi-broadcast") {
    const std::string m = next();
    if (m != "communicator" && m != "chain")
      throw error("--mpi-broadcast '" + detail::printable(m) + "' is not communicator or chain");
    f.group_broadcast = m == "communicator";
  }
  else return false;
  return true;
}

inline network network_from_flags(const schedule_flags& f, std::vector<index_t> host_of) {
  return network::uniform(std::move(host_of), network::gbit_per_s(f.nic_gbps), network::gbit_per_s(f.intra_gbps),
                          f.latency_us * 1e-6, f.nics_per_host)
      .with_payload_fraction(f.nic_efficiency)
      .with_eager_bytes(f.eager_bytes);
}

/// `--mpi-broadcast communicator` acts only under `--strategy broadcast`; any other strategy
/// broadcasts in chains, so the flag is refused rather than ignored.
[[noreturn]] inline void refuse_group_broadcast(const std::string& strategy) {
  throw error("--mpi-broadcast communicator needs --strategy broadcast (strategy '" + strategy + "' broadcasts in chains)");
}

/// Calls `solve(strategy, solver, options)` with the strategy of `Strategies` and the solver of
/// `Solvers` that the flags name; throws `error` for unknown or inapplicable names. A program that
/// appends its own policies to the lists accepts their names too.
template <class Solvers, class Strategies, class Solve>
schedule solve_named(const schedule_flags& f, Solve&& solve) {
  const std::string strategy = f.strategy.empty() ? "auto" : f.strategy;
  const std::string solver_name = f.solver.empty() ? "greedy" : f.solver;
  solver_options o;
  o.time_limit_s = f.time_limit_ms / 1000;
  o.seed = f.seed;
  return visit_strategy<Strategies>(strategy, [&](auto s) {
    if constexpr (std::is_same_v<decltype(s), broadcast>) {
      if (f.group_broadcast) s.how = transfer_kind::group_broadcast;
    } else if (f.group_broadcast) {
      refuse_group_broadcast(strategy);
    }
    return visit_solver<Solvers>(solver_name, [&](auto solver) { return solve(s, solver, o); });
  });
}

/// Checks the names and pairings solve_named would refuse, solving nothing: a run with nothing to
/// schedule (an empty manifest) refuses `--strategy bogus` as one with tensors does.
template <class Solvers, class Strategies>
void check_named(const schedule_flags& f) {
  (void)solve_named<Solvers, Strategies>(f, [](auto, auto, const solver_options&) { return schedule{}; });
}

/// The schedule of one plan (already cut to the staging cap by the caller).
template <class Solvers = default_solvers, class Strategies = builtin_strategies>
schedule schedule_from_flags(const schedule_flags& f, const plan& p, const network& net) {
  return solve_named<Solvers, Strategies>(f, [&](auto s, auto solver, const solver_options& o) {
    return solve_batch(std::vector<std::shared_ptr<const plan>>{std::make_shared<const plan>(p)},
                       std::make_shared<const network>(net), s, solver, {.split_replicas = f.split_replicas, .mode = f.mode}, o);
  });
}

/// The same for a batch of plans (a model's tensors), solved as one schedule; `auto` by default.
template <class Solvers = default_solvers, class Strategies = builtin_strategies>
schedule schedule_batch_from_flags(const schedule_flags& f, const std::vector<plan>& plans, const network& net) {
  return solve_named<Solvers, Strategies>(f, [&](auto s, auto solver, const solver_options& o) {
    return solve_batch(plans, net, s, solver,
                       {.split_replicas = f.split_replicas, .mode = f.mode, .max_staging_bytes = f.max_staging_bytes}, o);
  });
}

/// The schedule flags' usage text, naming the solvers and strategies of the lists.
template <class Solvers = default_solvers, class Strategies = builtin_strategies>
std::string schedule_flags_help() {
  return "  --solver NAME           " + names_text<Solvers>(", ") + "\n"
         "                          (default greedy when --strategy is given)\n"
         "  --strategy NAME         " + names_text<Strategies>(", ") + " (default auto: per task,\n"
         "                          whichever the model says makes the whole finish first)\n" +
         "  --split-replicas        let several replicas send slices of one task (under auto, where the\n"
         "                          model predicts that faster than whole tasks)\n"
         "  --nic-gbps X            NIC bandwidth per direction, Gbit/s (default 10)\n"
         "  --nics-per-host N       NICs per host (default 1)\n"
         "  --nic-efficiency F      payload fraction of the NIC line rate the transport achieves (0.001..1,\n"
         "                          default 1; measure it with meshcast-calibrate)\n"
         "  --intra-gbps X          intra-host link bandwidth, Gbit/s (default 800)\n"
         "  --latency-us X          per-message latency, microseconds (default 10)\n"
         "  --eager-bytes N         the transport sends messages up to N bytes eagerly and ordered mode\n"
         "                          waits for their receivers' acknowledgements (default 1048576, the MPI\n"
         "                          backend's eager limit; 0 for NCCL)\n"
         "  --time-limit-ms N       limit for the searching solvers (default 1000; under auto, shared\n"
         "                          among the instances it solves: 4, or 8 with --split-replicas)\n"
         "  --seed N                seed for the randomised solvers (default 1)\n"
         "  --trace FILE            write a Chrome trace-event JSON of the schedule (open in Perfetto)\n"
         "  --mode MODE             ordered (one transfer at a time per device and NIC direction, in\n"
         "                          schedule order) or concurrent (all posted at once); default ordered\n"
         "  --mpi-broadcast KIND    broadcast strategy: chain (pipelined point-to-point, default) or\n"
         "                          communicator (one collective broadcast per group; needs\n"
         "                          --strategy broadcast)\n"
         "  --max-staging-bytes N   no rank holds more than N bytes of message buffers at once beyond its\n"
         "                          shards: tasks are cut to N/2 before they are scheduled (default\n"
         "                          268435456, 256 MiB; 0: no cap)\n";
}

}  // namespace meshcast::cli

// meshcast-plan's program (examples/meshcast_plan.cpp is its `main`): prints the send tasks that reshard a tensor from one mesh layout to another.
#pragma once

#include <cstdio>
#include <exception>
#include <new>
#include <optional>
#include <string>

#include <meshcast/meshcast.hpp>

#include "json_writer.hpp"
#include "manifest_plan.hpp"
#include "plan_options.hpp"
#include "plan_report.hpp"
#include "schedule_options.hpp"
#include "schedule_report.hpp"

namespace meshcast::cli {

/// meshcast-plan's whole program, over the solvers and strategies of the lists (a program that
/// appends its own and calls this from `main` accepts their names: examples/custom_plan.cpp).
template <class Solvers = default_solvers, class Strategies = builtin_strategies>
int plan_main(int argc, char** argv) {
  auto usage = [](std::FILE* out) {
  std::fprintf(out, "usage: meshcast-plan --shape 1024x512 --src-mesh 2x4 --src-spec S0,R\n"
                    "                     --dst-mesh 3x4 --dst-spec R,S01 [options]\n"
                    "       meshcast-plan --manifest FILE [--devices-per-host N] [--json] [schedule options]\n%s"
                    "For one tensor, a schedule is made (and the schedule options act) when --solver, --strategy,\n"
                    "--mode or --trace is given (else a note on stderr names those given); with --manifest, always.\n%s",
               plan_flags_help(), schedule_flags_help<Solvers, Strategies>().c_str());
  };
  try {
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]) == "--manifest") return plan_manifest_main<Solvers, Strategies>(argc, argv);
    cli::plan_flags flags;
    cli::schedule_flags sched;
    std::string schedule_only;  // the schedule's flags given, which act only where a schedule is asked for
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw error("flag " + detail::printable(arg) + " needs a value");
        return argv[++i];
      };
      if (cli::parse_plan_flag(flags, arg, next)) continue;
      if (!cli::parse_schedule_flag(sched, arg, next)) throw error("unknown flag '" + detail::printable(arg) + "'");
      if (arg != "--max-staging-bytes" && arg != "--mpi-broadcast") schedule_only += (schedule_only.empty() ? "" : ", ") + arg;
    }
    if (flags.help) {
      usage(stdout);
      cli::write_stdout("");  // checks that the help got there (not `> /dev/full`)
      return 0;
    }
    if (sched.group_broadcast && !sched.wanted()) cli::refuse_group_broadcast("auto");  // as solve_named does
    if (!sched.wanted() && !schedule_only.empty())  // documented, but a --nic-gbps that changes nothing should say so
      std::fprintf(stderr,
                   "meshcast-plan: note: %s act only on a schedule (--solver, --strategy, --mode or --trace), and none "
                   "was asked for\n",
                   schedule_only.c_str());
    plan p = cli::plan_from_flags(flags);
    cut_for_staging(p, sched.max_staging_bytes);  // what meshcast-reshard runs: the same default cap
    auto hosts = default_hosts(p.device_count, static_cast<index_t>(p.src_devices.size()), flags.devices_per_host);
    std::optional<schedule> s;
    std::optional<network> net;
    if (sched.wanted()) {
      net = cli::network_from_flags(sched, hosts);
      s = cli::schedule_from_flags<Solvers, Strategies>(sched, p, *net);
      resource_space rs{net->port_count(), net->device_count()};
      if (!sched.trace.empty()) cli::write_trace(sched.trace, *s, *net, rs);
    }
    if (flags.json) {
      cli::json_writer j;
      j.begin_object();
      cli::write_plan_fields(j, p, hosts);
      if (s) {
        j.key("schedule");
        cli::write_schedule(j, *s, &*net);
      }
      j.end_object();
      cli::write_stdout(j.str() + '\n');
    } else {
      cli::print_summary(stdout, p, hosts);
      if (s) cli::print_schedule_summary(stdout, *s);
      cli::write_stdout("");
    }
    return 0;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "meshcast-plan: error: out of memory (the plan or schedule is too large for this machine)\n");
    return 2;
  } catch (const std::exception& e) {  // meshcast::error and anything else: a message, never a crash
    std::fprintf(stderr, "meshcast-plan: error: %s\n", e.what());
    return 2;
  }
}

}  // namespace meshcast::cli

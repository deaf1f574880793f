// `meshcast-plan --manifest FILE`: a whole model's weights planned, solved as one schedule and
// predicted, with no ranks (the manifest format: include/meshcast/api/manifest.hpp).
//
//   meshcast-plan --manifest llama70b.json --nic-gbps 400 --json
//
// JSON: tensors, tasks, bytes (sum of tensor sizes), devices, hosts, devices_per_host, strategy,
// solver, mode, predicted_seconds, physical_bound_seconds (the busiest NIC direction at line rate,
// `busiest_nic_bound_s`), lower_bound_seconds (the mode's bound for the strategy), plan_seconds,
// solve_seconds (instance building included), transfers, tasks_by_strategy.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <meshcast/api/manifest.hpp>

#include "json_writer.hpp"
#include "plan_options.hpp"
#include "schedule_options.hpp"
#include "schedule_report.hpp"

namespace meshcast::cli {

/// What meshcast-plan and meshcast-reshard make of a manifest before any rank moves a byte.
struct manifest_setup {
  manifest m;
  index_t devices_per_host = 0;
  std::vector<index_t> hosts;
  std::vector<plan> plans;
  double plan_s = 0;
  index_t tasks = 0;
  index_t bytes = 0;
};

/// The plans' tasks are cut to half of `max_staging_bytes` (staging.hpp); `tasks` counts them uncut.
inline manifest_setup setup_manifest(const std::string& path, index_t devices_per_host_flag, std::size_t max_staging_bytes) {
  manifest_setup out;
  const auto t0 = std::chrono::steady_clock::now();
  out.m = read_manifest(path);
  out.devices_per_host = out.m.devices_per_host_or(devices_per_host_flag);
  out.hosts = hosts_in_order(out.m.device_count, out.devices_per_host);
  out.plans = make_plans(out.m.tensors, {}, out.m.device_count);
  for (const plan& p : out.plans) {
    out.tasks += static_cast<index_t>(p.tasks.size());
    out.bytes = detail::checked_add(out.bytes, p.tensor_bytes(), "the bytes of the manifest");
  }
  cut_for_staging(out.plans, max_staging_bytes);
  out.plan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

inline void write_tasks_by_strategy(json_writer& j, const std::map<std::string, index_t>& counts) {
  j.key("tasks_by_strategy").begin_object();
  for (const auto& [name, n] : counts) j.key(name).value(static_cast<long long>(n));
  j.end_object();
}

/// The flags meshcast-plan and meshcast-reshard both take with --manifest.
struct manifest_flags {
  std::string path;
  index_t devices_per_host = 0;
  bool json = false, help = false;
  schedule_flags sched;
};

/// Takes `arg` (and its value, from `next`) if it is one of manifest_flags'.
template <class Next>
bool parse_manifest_flag(manifest_flags& f, const std::string& arg, Next&& next) {
  if (arg == "--manifest") f.path = parse_name(arg, next());
  else if (arg == "--devices-per-host") f.devices_per_host = parse_count(arg, next(), 1, max_devices);
  else if (arg == "--json") f.json = true;
  else if (arg == "--help" || arg == "-h") f.help = true;
  else return parse_schedule_flag(f.sched, arg, next);
  return true;
}

inline error unknown_manifest_flag(const std::string& arg) {
  return error("unknown flag '" + detail::printable(arg) + "' with --manifest (the tensors come from the manifest)");
}

/// meshcast-plan with --manifest: the flags other than the plan's own single-tensor ones.
template <class Solvers = default_solvers, class Strategies = builtin_strategies>
int plan_manifest_main(int argc, char** argv) {
  manifest_flags f;
  const std::string& path = f.path;
  const index_t& devices_per_host = f.devices_per_host;
  const bool &json = f.json, &help = f.help;
  const schedule_flags& sched = f.sched;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw error("flag " + detail::printable(arg) + " needs a value");
      return argv[++i];
    };
    if (!parse_manifest_flag(f, arg, next)) throw unknown_manifest_flag(arg);
  }
  if (help) {
    write_stdout("usage: meshcast-plan --manifest FILE [--devices-per-host N] [--json] [schedule options]\n" +
                 schedule_flags_help<Solvers, Strategies>());  // throws where stdout cannot take it
    return 0;
  }
  check_named<Solvers, Strategies>(sched);
  manifest_setup m = setup_manifest(path, devices_per_host, sched.max_staging_bytes);
  const network net = network_from_flags(sched, m.hosts);
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<schedule> s;
  if (!m.plans.empty()) s = schedule_batch_from_flags<Solvers, Strategies>(sched, m.plans, net);
  const double solve_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!sched.trace.empty())  // an empty model gives a trace with the hosts and no transfer
    write_trace(sched.trace, s ? *s : schedule{}, net, resource_space{net.port_count(), net.device_count()});
  const double bound = busiest_nic_bound_s(m.plans, net);
  const std::string strategy = s ? s->strategy : (sched.strategy.empty() ? "auto" : sched.strategy);
  const std::string solver = s ? s->solver : (sched.solver.empty() ? "greedy" : sched.solver);
  const auto counts = s ? tasks_by_strategy(*s, m.plans) : std::map<std::string, index_t>{};
  if (json) {
    json_writer j;
    j.begin_object();
    j.key("tensors").value(static_cast<long long>(m.plans.size()));
    j.key("tasks").value(static_cast<long long>(m.tasks));
    j.key("bytes").value(static_cast<long long>(m.bytes));
    j.key("devices").value(static_cast<long long>(m.m.device_count));
    j.key("devices_per_host").value(static_cast<long long>(m.devices_per_host));
    j.key("hosts").value(static_cast<long long>(net.host_count()));
    j.key("strategy").value(strategy);
    j.key("solver").value(solver);
    j.key("mode").value(std::string(to_string(sched.mode)));
    j.key("predicted_seconds").precise(s ? s->makespan_s : 0.0);
    j.key("physical_bound_seconds").precise(bound);
    j.key("lower_bound_seconds").precise(s ? s->lower_bound_s : 0.0);
    j.key("plan_seconds").precise(m.plan_s);
    j.key("solve_seconds").precise(solve_s);
    j.key("transfers").value(static_cast<long long>(s ? s->transfers.size() : 0));
    j.key("max_staging_bytes").value(static_cast<long long>(sched.max_staging_bytes));
    write_tasks_by_strategy(j, counts);
    j.end_object();
    write_stdout(j.str() + '\n');
  } else {
    std::string by;
    for (const auto& [name, n] : counts) by += (by.empty() ? "" : ", ") + name + " " + std::to_string(n);
    std::printf("%zu tensors, %lld tasks, %llu bytes on %lld devices (%lld hosts of %lld)\n", m.plans.size(),
                static_cast<long long>(m.tasks), static_cast<unsigned long long>(m.bytes),
                static_cast<long long>(m.m.device_count), static_cast<long long>(net.host_count()),
                static_cast<long long>(m.devices_per_host));
    std::printf("strategy %s (tasks: %s), solver %s, %s mode: predicted %.6f s, busiest NIC bound %.6f s (x%.3f)\n",
                strategy.c_str(), by.empty() ? "none" : by.c_str(), solver.c_str(),
                std::string(to_string(sched.mode)).c_str(), s ? s->makespan_s : 0.0, bound,
                bound > 0 && s ? s->makespan_s / bound : 1.0);
    std::printf("planned in %.3f s, solved in %.3f s\n", m.plan_s, solve_s);
    write_stdout("");
  }
  return 0;
}

}  // namespace meshcast::cli

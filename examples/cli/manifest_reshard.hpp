// `meshcast-reshard --manifest FILE`: every weight of a model resharded on MPI ranks as one
// schedule, every element checked (rank d is device d; the manifest format:
// include/meshcast/api/manifest.hpp).
//
//   mpiexec -n 16 meshcast-reshard --manifest llama8b.json --json
//
// Source shards hold, for tensor k (manifest order, from 0), each element's global row-major index
// within its tensor plus k, wrapping, little-endian in dtype_bytes bytes. --dump DIR writes tensor
// k's destination shard of rank r to DIR/t<k>.rank<r>.bin (every destination rank; empty shards
// as empty files). --json: one line on rank 0 with seconds, predicted_seconds,
// physical_bound_seconds, bytes_delivered, wrong_elements, max_staging_bytes (the cap in force;
// 0: none), peak_staging_bytes (max over ranks of the message buffers held at once),
// peak_rss_bytes (max over ranks of VmHWM at the end), shard_bytes (max over ranks of source plus
// destination shard bytes), tasks_by_strategy, and more.
#pragma once

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "manifest_plan.hpp"
#include "reshard_main.hpp"

namespace meshcast::cli::reshard_detail {

// The peak resident set of this process (VmHWM), 0 where /proc cannot tell.
inline std::uint64_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "VmHWM:   1234 kB"
  return 0;
}

// Tensor k's fill: element i holds i + k, wrapping in eb bytes.
inline void fill_offset(const box& tile, const extents_value& shape, std::size_t eb, std::uint64_t k, std::span<std::byte> out) {
  for_each_tile_element(tile, shape, eb, [&](std::size_t off, std::uint64_t v) { put_index(out.data() + off, v + k, eb); });
}
inline std::size_t count_wrong_offset(const box& tile, const extents_value& shape, std::size_t eb, std::uint64_t k,
                                      std::span<const std::byte> in) {
  std::size_t wrong = 0;
  std::byte expect[8];
  for_each_tile_element(tile, shape, eb, [&](std::size_t off, std::uint64_t v) {
    put_index(expect, v + k, eb);
    for (std::size_t b = 0; b < eb; ++b)
      if (in[off + b] != expect[b]) {
        ++wrong;
        return;
      }
  });
  return wrong;
}

}  // namespace meshcast::cli::reshard_detail

namespace meshcast::cli {

/// meshcast-reshard with --manifest (MPI is initialised, errors return as codes).
template <class Solvers, class Strategies>
int reshard_manifest_main(int argc, char** argv) {
  using namespace reshard_detail;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  manifest_flags flags;
  std::string& path = flags.path;
  index_t& devices_per_host = flags.devices_per_host;
  bool &json = flags.json, &help = flags.help;
  schedule_flags& sched = flags.sched;
  std::string dump;
  double timeout_s = 120;
  int repeat = 1;
  std::string exec_trace;  // Chrome trace of each rank's steps in the last run, beside the model
  std::string efficiency_from = "the default";  // where the model's payload fraction comes from
  failure failed;
  auto agree = [&](const char* what) {
    try {
      return all_ok(MPI_COMM_WORLD, !failed, timeout_s, what);
    } catch (const timeout_error& e) {
      abort_job(timeout_failure(e, {}, failed));
    }
  };
  auto finish = [](int status) {
    MPI_Finalize();
    return status;
  };

  // 1. Flags and manifest: input errors, the same on every rank (rank 0 reports them).
  std::optional<manifest_setup> m;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw error("flag " + detail::printable(arg) + " needs a value");
        return argv[++i];
      };
      if (arg == "--dump") dump = parse_name(arg, next());
      else if (arg == "--exec-trace") exec_trace = parse_name(arg, next());
      else if (arg == "--timeout-s") timeout_s = parse_real(arg, next(), 0.001, max_time_limit_s);
      else if (arg == "--repeat") repeat = static_cast<int>(parse_count(arg, next(), 1, max_repeat));
      else if (!parse_manifest_flag(flags, arg, next)) throw unknown_manifest_flag(arg);
    }
    if (help) {
      if (rank == 0)
        std::printf("usage: mpiexec -n <devices> meshcast-reshard --manifest FILE [--devices-per-host N] [--json] [schedule "
                    "options] [--dump DIR] [--timeout-s S] [--repeat N] [--exec-trace FILE]\n%s",
                    schedule_flags_help<Solvers, Strategies>().c_str());
      return finish(0);
    }
    check_named<Solvers, Strategies>(sched);
    if (!sched.nic_efficiency_given)
      if (auto f = tcp_payload_fraction()) sched.nic_efficiency = f->value, efficiency_from = f->from;
    if (!sched.eager_bytes_given)
      if (auto e = ucx_eager_bytes()) sched.eager_bytes = *e;
    m = setup_manifest(path, devices_per_host, sched.max_staging_bytes);
    if (m->m.device_count != size)
      throw error("the manifest uses " + std::to_string(m->m.device_count) + " devices but " + std::to_string(size) +
                  " ranks were started: run with mpiexec -n " + std::to_string(m->m.device_count));
  } catch (const std::exception& e) {
    failed = describe(e, false);
  }
  if (!agree("checking the input")) {
    report(failed);
    return finish(2);
  }
  const std::vector<plan>& plans = m->plans;
  if (plans.empty()) {  // an empty model: nothing moves; the runtime's own memory is still reported
    const std::uint64_t rss = bounded_allreduce(MPI_COMM_WORLD, peak_rss_bytes(), MPI_MAX, timeout_s, "summing up");
    const std::string strategy = sched.strategy.empty() ? "auto" : sched.strategy;
    const std::string solver = sched.solver.empty() ? "greedy" : sched.solver;
    if (rank == 0 && json) {  // the fields of a model that moves something, each at its empty value
      json_writer j;
      j.begin_object();
      for (const char* zero : {"seconds", "predicted_seconds", "physical_bound_seconds", "lower_bound_seconds"})
        j.key(zero).value(0.0);
      for (const char* zero : {"bytes_delivered", "bytes", "wrong_elements"}) j.key(zero).value(0LL);
      j.key("max_staging_bytes").value(static_cast<long long>(sched.max_staging_bytes));
      j.key("peak_staging_bytes").value(0LL);
      j.key("peak_rss_bytes").value(static_cast<long long>(rss));
      j.key("shard_bytes").value(0LL);
      write_tasks_by_strategy(j, {});
      j.key("strategy").value(strategy).key("solver").value(solver).key("mode").value(std::string(to_string(sched.mode)));
      for (const char* zero : {"tensors", "tasks", "transfers"}) j.key(zero).value(0LL);
      j.key("ranks").value(static_cast<long long>(size)).key("repeat").value(static_cast<long long>(repeat));
      j.key("nic_efficiency").value(sched.nic_efficiency);
      j.key("eager_bytes").value(static_cast<long long>(sched.eager_bytes));
      j.key("nic_efficiency_from").value(sched.nic_efficiency_given ? std::string("--nic-efficiency") : efficiency_from);
      j.end_object();
      write_stdout(j.str() + "\n");
    } else if (rank == 0) {
      write_stdout("meshcast-reshard: " + std::to_string(size) + " ranks, 0 tensors, strategy " + strategy +
                   ": nothing to move; 0 wrong elements\n");
    }
    if (rank == 0 && !sched.trace.empty()) {  // the hosts and no transfer
      try {
        const network net = network_from_flags(sched, m->hosts);
        write_trace(sched.trace, schedule{}, net, resource_space{net.port_count(), net.device_count()});
      } catch (const std::exception& e) {
        report(describe(e, true));
        return finish(2);
      }
    }
    return finish(0);
  }

  // 2. Rank 0 schedules; every rank receives and checks the schedule.
  schedule s;
  network net;
  try {
    net = network_from_flags(sched, m->hosts);
    if (rank == 0) s = schedule_batch_from_flags<Solvers, Strategies>(sched, plans, net);
    if (rank == 0 && !sched.trace.empty())  // the model's schedule (--exec-trace: what ran)
      write_trace(sched.trace, s, net, resource_space{net.port_count(), net.device_count()});
  } catch (const std::exception& e) {
    failed = describe(e, false);
  }
  if (!agree("scheduling")) {
    report(failed);
    return finish(2);
  }
  try {
    share_schedule(MPI_COMM_WORLD, plans, s, 0, timeout_s);
  } catch (const timeout_error& e) {
    abort_job(timeout_failure(e, m->hosts));
  } catch (const std::exception& e) {
    failed = describe(e, true);
  }
  if (!agree("sharing the schedule")) {
    report(failed);
    return finish(2);
  }

  // 3. Shards and the executor.
  mpi_backend backend(MPI_COMM_WORLD, timeout_s, chain_chunk_bytes, static_cast<std::size_t>(sched.eager_bytes));
  std::optional<executor<mpi_backend>> exec;
  std::vector<std::vector<std::byte>> sources(plans.size()), destinations(plans.size());
  std::uint64_t shard_bytes = 0, staging = 0, wrong = 0;
  double seconds = 0;
  try {
    exec.emplace(backend, std::span<const plan>(plans), s, sched.max_staging_bytes, connect_later);  // groups below
    exec->record_times(!exec_trace.empty());
    staging = exec->staging_bytes();
    for (std::size_t k = 0; k < plans.size(); ++k) {
      sources[k].resize(exec->source_bytes(k));
      destinations[k].resize(exec->destination_bytes(k));
      shard_bytes += sources[k].size() + destinations[k].size();
      if (!sources[k].empty())
        fill_offset(plans[k].source_tile(rank), plans[k].src.shape, static_cast<std::size_t>(plans[k].element_bytes), k,
                    sources[k]);
    }
  } catch (const std::exception& e) {
    failed = describe(e, true);
  }
  if (!agree("preparing buffers")) {
    report(failed);
    return finish(2);
  }
  try {  // once every rank holds its buffers: one out of memory above stops all at the agreement
    exec->connect();
  } catch (const timeout_error& e) {
    abort_job(timeout_failure(e, {}));
  } catch (const std::exception& e) {
    failed = describe(e, true);
  }
  if (!agree("making the executor's groups")) {
    report(failed);
    return finish(2);
  }
  std::vector<std::span<const std::byte>> in(sources.begin(), sources.end());
  std::vector<std::span<std::byte>> out(destinations.begin(), destinations.end());

  // 4. The reshards. A failure here leaves peers waiting on this rank: the job ends.
  try {
    for (int r = 0; r < repeat; ++r) {
      bounded_barrier(MPI_COMM_WORLD, timeout_s);
      const auto t0 = std::chrono::steady_clock::now();
      exec->run(in, out);
      bounded_barrier(MPI_COMM_WORLD, timeout_s);
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      seconds = r == 0 ? t : std::min(seconds, t);
    }
  } catch (const timeout_error& e) {
    abort_job(timeout_failure(e, m->hosts));
  } catch (const std::exception& e) {
    abort_job(describe(e, true));
  }

  if (!exec_trace.empty()) {
    try {
      gather_trace(*exec, s, exec_trace, timeout_s);
    } catch (const timeout_error& e) {
      abort_job(timeout_failure(e, m->hosts));
    } catch (const std::exception& e) {
      failed = describe(e, true);
    }
  }

  // 5. Checks and dumps: local to this rank.
  try {
    for (std::size_t k = 0; k < plans.size(); ++k) {
      const plan& p = plans[k];
      const auto eb = static_cast<std::size_t>(p.element_bytes);
      if (!destinations[k].empty()) wrong += count_wrong_offset(p.destination_tile(rank), p.src.shape, eb, k, destinations[k]);
      const bool is_destination = std::find(p.dst_devices.begin(), p.dst_devices.end(), rank) != p.dst_devices.end();
      if (!dump.empty() && is_destination)
        write_file(dump + "/t" + std::to_string(k) + ".rank" + std::to_string(rank) + ".bin",
                   std::string(reinterpret_cast<const char*>(destinations[k].data()), destinations[k].size()), "shard file");
    }
  } catch (const std::exception& e) {
    failed = describe(e, true);
  }
  if (!agree("checking the result")) {
    report(failed);
    return finish(2);
  }

  // 6. Summary, on rank 0.
  std::uint64_t total_wrong = 0, max_shards = 0, max_staging = 0, max_rss = 0;
  try {
    total_wrong = bounded_allreduce(MPI_COMM_WORLD, wrong, MPI_SUM, timeout_s, "counting wrong elements");
    max_shards = bounded_allreduce(MPI_COMM_WORLD, shard_bytes, MPI_MAX, timeout_s, "summing up");
    max_staging = bounded_allreduce(MPI_COMM_WORLD, staging, MPI_MAX, timeout_s, "summing up");
    max_rss = bounded_allreduce(MPI_COMM_WORLD, peak_rss_bytes(), MPI_MAX, timeout_s, "summing up");
  } catch (const timeout_error& e) {
    abort_job(timeout_failure(e, m->hosts));
  }
  int status = total_wrong == 0 ? 0 : 1;
  if (rank == 0) {
    try {
      index_t delivered = 0;
      for (const plan& p : plans) delivered = detail::checked_add(delivered, p.total_bytes(), "bytes delivered");
      const double bound = busiest_nic_bound_s(plans, net);
      if (json) {
        json_writer j;
        j.begin_object();
        j.key("seconds").value(seconds);
        j.key("predicted_seconds").value(s.makespan_s);
        j.key("physical_bound_seconds").value(bound);
        j.key("lower_bound_seconds").value(s.lower_bound_s);
        j.key("bytes_delivered").value(static_cast<long long>(delivered));
        j.key("bytes").value(static_cast<long long>(m->bytes));
        j.key("wrong_elements").value(static_cast<long long>(total_wrong));
        j.key("max_staging_bytes").value(static_cast<long long>(sched.max_staging_bytes));
        j.key("peak_staging_bytes").value(static_cast<long long>(max_staging));
        j.key("peak_rss_bytes").value(static_cast<long long>(max_rss));
        j.key("shard_bytes").value(static_cast<long long>(max_shards));
        write_tasks_by_strategy(j, tasks_by_strategy(s, plans));
        j.key("strategy").value(s.strategy);
        j.key("solver").value(s.solver);
        j.key("mode").value(std::string(to_string(s.mode)));
        j.key("tensors").value(static_cast<long long>(plans.size()));
        j.key("tasks").value(static_cast<long long>(m->tasks));
        j.key("transfers").value(static_cast<long long>(s.transfers.size()));
        j.key("ranks").value(static_cast<long long>(size));
        j.key("repeat").value(static_cast<long long>(repeat));
        j.key("nic_efficiency").value(sched.nic_efficiency);
        j.key("eager_bytes").value(static_cast<long long>(sched.eager_bytes));
        j.key("nic_efficiency_from").value(sched.nic_efficiency_given ? std::string("--nic-efficiency") : efficiency_from);
        j.end_object();
        write_stdout(j.str() + "\n");
      } else {
        char line[512];
        std::snprintf(line, sizeof line,
                      "meshcast-reshard: %d ranks, %zu tensors (%s), strategy %s: %s delivered in %.6f s; predicted %.6f "
                      "s, busiest NIC bound %.6f s; %llu wrong elements\n",
                      size, plans.size(), human_bytes(static_cast<double>(m->bytes)).c_str(), s.strategy.c_str(),
                      human_bytes(static_cast<double>(delivered)).c_str(), seconds, s.makespan_s, bound,
                      static_cast<unsigned long long>(total_wrong));
        write_stdout(line);
      }
    } catch (const std::exception& e) {
      report(describe(e, true));
      status = 2;
    }
  }
  return finish(status);
}

}  // namespace meshcast::cli

// meshcast-reshard: reshards a tensor across MPI ranks (rank r is device r) and checks the result.
//
//   mpiexec -n 20 meshcast-reshard --shape 1024x1024x512 --src-mesh 2x4 --src-spec S0,R,R
//       --dst-mesh 3x4 --dst-spec R,S0,R --solver greedy
//
// Every source shard is filled with each element's global row-major index (little-endian, int32
// for --dtype-bytes 4, int64 for 8, wrapping); every destination element is checked; rank 0
// prints one summary line. Exit status 0 only when every element on every rank is right.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <meshcast/backend/mpi.hpp>
#include <meshcast/meshcast.hpp>

#include "cli/fill.hpp"
#include "cli/plan_options.hpp"
#include "cli/schedule_options.hpp"
#include "cli/plan_report.hpp"

namespace {
struct reshard_flags {
  std::string dump;
  double timeout_s = 120;
  bool chain = false;  // broadcasts as pipelined point-to-point chains instead of MPI_Ibcast
  int repeat = 1;
};
}  // namespace

int main(int argc, char** argv) {
  using namespace meshcast;
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 0;
  try {
    cli::plan_flags flags;
    cli::schedule_flags sched;
    reshard_flags extra;
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw error("flag " + arg + " needs a value");
        return argv[++i];
      };
      if (cli::parse_plan_flag(flags, arg, next) || cli::parse_schedule_flag(sched, arg, next)) continue;
      if (arg == "--dump") extra.dump = next();
      else if (arg == "--timeout-s") extra.timeout_s = cli::parse_real(arg, next());
      else if (arg == "--mpi-broadcast") {
        std::string m = next();
        if (m != "communicator" && m != "chain") throw error("--mpi-broadcast '" + m + "' is not communicator or chain");
        extra.chain = m == "chain";
      }
      else if (arg == "--repeat") extra.repeat = static_cast<int>(std::max<index_t>(1, cli::parse_count(arg, next())));
      else throw error("unknown flag '" + arg + "'");
    }
    if (flags.help) {
      if (rank == 0)
        std::printf("usage: mpiexec -n <devices> meshcast-reshard <meshcast-plan flags> [--dump DIR] [--timeout-s S] "
                    "[--repeat N] [--mpi-broadcast communicator|chain]\n%s%s", cli::plan_flags_help(), cli::schedule_flags_help());
      MPI_Finalize();
      return 0;
    }
    plan p = cli::plan_from_flags(flags);
    if (p.device_count != size)
      throw error("the layouts use " + std::to_string(p.device_count) + " devices but " + std::to_string(size) +
                  " ranks were started: run with mpiexec -n " + std::to_string(p.device_count));
    auto hosts = default_hosts(p.device_count, static_cast<index_t>(p.src_devices.size()), flags.devices_per_host);
    network net = cli::network_from_flags(sched, hosts);
    schedule s;
    int scheduled = 1;
    std::string why;
    if (rank == 0) {
      try {
        s = cli::schedule_from_flags(sched, p, net);
      } catch (const error& e) {
        scheduled = 0;
        why = e.what();
      }
    }
    MPI_Bcast(&scheduled, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!scheduled) throw error(why);
    double predicted = s.makespan_s;
    MPI_Bcast(&predicted, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    share_schedule(MPI_COMM_WORLD, p, s.ops);

    const std::size_t eb = static_cast<std::size_t>(p.element_bytes);
    const std::string strategy = sched.strategy.empty() ? "send_recv" : sched.strategy;
    mpi_backend backend(MPI_COMM_WORLD, extra.timeout_s,
                        extra.chain ? mpi_backend::broadcast_mode::chain : mpi_backend::broadcast_mode::communicator);
    std::size_t wrong = 0;
    double seconds = 0;
    visit_strategy(strategy, [&](auto st) {
      executor<mpi_backend, decltype(st)> exec(backend, p, s.ops);
      std::vector<std::byte> source(exec.source_bytes()), destination(exec.destination_bytes());
      const box src_tile = p.source_tile(rank), dst_tile = p.destination_tile(rank);
      if (!source.empty()) cli::fill(src_tile, p.src.shape, eb, source);
      const std::vector<std::byte> pristine = source;
      for (int r = 0; r < extra.repeat; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const auto t0 = std::chrono::steady_clock::now();
        exec.run(source, destination);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        seconds = r == 0 ? t : std::min(seconds, t);
      }
      if (source != pristine) throw error("device " + std::to_string(rank) + ": the source shard was written to");
      if (!destination.empty()) wrong = cli::count_wrong(dst_tile, p.src.shape, eb, destination);
      if (!extra.dump.empty() && exec.destination_bytes() > 0) {
        std::string path = extra.dump + "/rank" + std::to_string(rank) + ".bin";
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(destination.data()), static_cast<std::streamsize>(destination.size()));
        if (!out) throw error("cannot write " + path);
      }
    });
    // nccl-tests style: algbw = tensor bytes / time; busbw = bytes the busiest rank takes in from
    // other devices / time (what one device's link must sustain).
    unsigned long long my_in = 0, busiest_in = 0;
    for (const op& o : s.ops)
      if (o.sender != rank && std::find(o.receivers.begin(), o.receivers.end(), rank) != o.receivers.end())
        my_in += static_cast<unsigned long long>(o.bytes);
    MPI_Allreduce(&my_in, &busiest_in, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    unsigned long long mine = wrong, total_wrong = 0;
    MPI_Reduce(&mine, &total_wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(&total_wrong, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      const double tensor = static_cast<double>(p.src.whole().volume()) * static_cast<double>(eb);
      const double delivered = static_cast<double>(p.total_bytes());
      std::printf("meshcast-reshard: %d ranks, %s -> %s, strategy %s, solver %s: %s delivered (%s tensor) in %.6f s, "
                  "algbw %.3f GB/s, busbw %.3f GB/s; ordered-model prediction %.6f s; %llu wrong elements\n",
                  size, p.src.to_string().c_str(), (p.dst.mesh.to_string() + " as " + p.dst.spec.to_string()).c_str(),
                  strategy.c_str(), sched.solver.empty() ? "greedy" : sched.solver.c_str(),
                  cli::human_bytes(delivered).c_str(), cli::human_bytes(tensor).c_str(), seconds,
                  tensor / seconds / 1e9, static_cast<double>(busiest_in) / seconds / 1e9, predicted, total_wrong);
    }
    status = total_wrong == 0 ? 0 : 1;
  } catch (const error& e) {
    if (rank == 0) std::fprintf(stderr, "meshcast-reshard: error: %s\n", e.what());
    // Every rank meets input errors alike, so rank 0 reports those; a rank's own failure (its
    // messages start with "device ") is reported by that rank.
    else if (std::string(e.what()).rfind("device ", 0) == 0) std::fprintf(stderr, "meshcast-reshard (rank %d): error: %s\n", rank, e.what());
    std::fflush(stderr);
    // A transfer that timed out leaves peers waiting on this rank: end them all.
    if (std::string(e.what()).find("did not complete") != std::string::npos) MPI_Abort(MPI_COMM_WORLD, 2);
    status = 2;
  }
  MPI_Finalize();
  return status;
}

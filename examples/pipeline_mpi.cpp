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
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <meshcast/api/benchmark_job.hpp>
#include <meshcast/mpi.hpp>
#include <meshcast/pipeline.hpp>

#include "cli/json_writer.hpp"
#include "cli/plan_options.hpp"
#include "cli/schedule_options.hpp"

namespace {
using namespace meshcast;
namespace pl = meshcast::pipeline;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}
double clock_s() { return std::chrono::duration<double>(clock_type::now().time_since_epoch()).count(); }

enum class compute_kind { spin, sleep, matmul };
const char* to_string(compute_kind c) { return c == compute_kind::spin ? "spin" : c == compute_kind::sleep ? "sleep" : "matmul"; }

struct flags {
  std::string file;
  std::vector<std::string> policies;
  index_t ranks_per_stage = 1;
  double time_unit_s = 0;  // 0: the file's time_unit_s
  compute_kind compute = compute_kind::spin;
  int repeat = 3;
  bool json = false;
  pl::policy_options policy;
  double search_limit_s = -1;
  double timeout_s = 60;
  double tie = 0.02;
  bool size_by_measured = false;
  // network overrides (the file's "network", else network_model's defaults, then these)
  std::optional<double> nic_gbps, nic_efficiency, intra_gbps, latency_us;
  std::optional<int> nics_per_host;
  std::optional<index_t> devices_per_host;
  std::optional<std::string> strategy;
  std::optional<bool> split_replicas;
  std::optional<execution> mode;
  bool help = false;
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: mpiexec -n <stages x K> meshcast-pipeline-mpi FILE.json [flags]\n"
               "  --policy A[,B...]      policies to run (%s; default %s)\n"
               "  --ranks-per-stage K    ranks per stage mesh (default 1): stage s = ranks [sK, (s+1)K)\n"
               "  --time-unit-ms U       one time unit of the description = U ms (default: the file's time_unit_s)\n"
               "  --compute KIND         spin (default), sleep or matmul\n"
               "  --repeat N             runs per policy, interleaved; the best is reported (default 3)\n"
               "  --tie F                simulated makespans within a fraction F are ties in the ranking (default 0.02)\n"
               "  --size-by model|measured  size each activation so that the model predicts its edge's time\n"
               "                         (default), or resize it until it takes that time here, alone\n"
               "  --json                 print one JSON object on rank 0's stdout instead of the report\n"
               "  --time-limit-ms N, --search-limit-ms N, --seed N   as meshcast-pipeline\n"
               "  --timeout-s S          give up on a peer after S seconds without progress (default 60)\n"
               "network model (the file's \"network\", else its defaults; these override):\n"
               "  --nic-gbps G --nic-efficiency F --intra-gbps G --latency-us L --nics-per-host N\n"
               "  --devices-per-host D (default K: each stage on its own host) --strategy S --mode ordered|concurrent\n"
               "  --split-replicas / --no-split-replicas\n"
               "JSON: {\"file\", \"stages\", \"ranks_per_stage\", \"microbatches\", \"schedule\", \"streams\", \"time_unit_s\",\n"
               "  \"compute\", \"size_by\", \"network\": {...}, \"transfers\": [{\"edge\", \"pass\", \"from\", \"to\", \"shape\",\n"
               "  \"bytes\", \"tensor_from_file\", \"stated_s\", \"predicted_s\", \"alone_s\"}], \"policies\": [{\"policy\", \"simulated_s\", \"measured_s\",\n"
               "  \"runs_s\", \"resimulated_s\", \"measured_over_simulated\", \"measured_over_resimulated\",\n"
               "  \"compute_over_stated\", \"transfers_over_stated\", \"proven_optimal\", \"stages\":\n"
               "  [[{\"op\", \"mb\", \"edge\", \"pass\", \"peer\", \"sim_start\", \"sim_end\", \"start\", \"end\"}]]}],\n"
               "  \"ranking\": {\"simulated\", \"measured\", \"pairs\", \"agreeing_pairs\", \"ties\", \"agree\"}}; times in seconds.\n",
               pl::policy_names().c_str(), std::string(pl::default_policy::name).c_str());
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t a = 0;
  while (true) {
    const std::size_t b = s.find(',', a);
    out.push_back(s.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

flags parse_flags(int argc, char** argv) {
  flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw error("flag " + detail::printable(arg) + " needs a value");
      return argv[++i];
    };
    auto real = [&](double lo, double hi) { return cli::parse_real(arg, next(), lo, hi); };
    if (arg == "--policy") {
      for (const std::string& p : split_commas(next())) {
        if (!pl::has_policy(p)) pl::visit_policy(p, [](auto) {});  // throws naming the policies
        f.policies.push_back(p);
      }
    } else if (arg == "--ranks-per-stage") f.ranks_per_stage = cli::parse_count(arg, next(), 1, 4096);
    else if (arg == "--time-unit-ms") f.time_unit_s = real(1e-6, 1e6) / 1000;
    else if (arg == "--compute") {
      const std::string c = next();
      if (c == "spin") f.compute = compute_kind::spin;
      else if (c == "sleep") f.compute = compute_kind::sleep;
      else if (c == "matmul") f.compute = compute_kind::matmul;
      else throw error("--compute '" + detail::printable(c) + "' is not spin, sleep or matmul");
    } else if (arg == "--repeat") f.repeat = static_cast<int>(cli::parse_count(arg, next(), 1, 1000));
    else if (arg == "--tie") f.tie = real(0, 1);
    else if (arg == "--size-by") {
      const std::string v = next();
      if (v != "model" && v != "measured") throw error("--size-by '" + detail::printable(v) + "' is not model or measured");
      f.size_by_measured = v == "measured";
    }
    else if (arg == "--json") f.json = true;
    else if (arg == "--time-limit-ms") f.policy.time_limit_s = real(0, 1e9) / 1000;
    else if (arg == "--search-limit-ms") f.search_limit_s = real(0, 1e9) / 1000;
    else if (arg == "--seed") f.policy.seed = static_cast<std::uint64_t>(cli::parse_count(arg, next()));
    else if (arg == "--timeout-s") f.timeout_s = real(0.001, max_time_limit_s);
    else if (arg == "--nic-gbps") f.nic_gbps = real(8e-9, 8e6);  // the network model's range
    else if (arg == "--nic-efficiency") f.nic_efficiency = real(1e-9, 1);
    else if (arg == "--intra-gbps") f.intra_gbps = real(8e-9, 8e6);
    else if (arg == "--latency-us") f.latency_us = real(0, 3.6e9);
    else if (arg == "--nics-per-host") f.nics_per_host = static_cast<int>(cli::parse_count(arg, next(), 1, 64));
    else if (arg == "--devices-per-host") f.devices_per_host = cli::parse_count(arg, next(), 1, pl::max_edge_mesh_devices);
    else if (arg == "--strategy") {
      f.strategy = next();
      visit_strategy(*f.strategy, [](auto) {});  // throws naming the strategies
    } else if (arg == "--mode") f.mode = parse_execution(next());
    else if (arg == "--split-replicas") f.split_replicas = true;
    else if (arg == "--no-split-replicas") f.split_replicas = false;
    else if (arg == "--help" || arg == "-h") f.help = true;
    else if (!arg.empty() && arg[0] == '-') throw error("unknown flag '" + detail::printable(arg) + "'");
    else if (f.file.empty()) f.file = arg;
    else throw error("one pipeline file only ('" + detail::printable(f.file) + "' and '" + detail::printable(arg) + "' given)");
  }
  if (f.policies.empty()) f.policies.push_back(std::string(pl::default_policy::name));
  if (!f.help && f.file.empty()) throw error("missing the pipeline file (see --help)");
  return f;
}

// ---- waiting without taking the cores from ranks that have work --------------------------------

// The buffers of an operation given up on are kept, not freed, by bounded_wait: a late rank may
// still complete it.
void sleepy_barrier(MPI_Comm comm, double timeout_s, const char* what) {
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Ibarrier(comm, &r), "MPI_Ibarrier");
  bounded_wait(r, timeout_s, what);
}
double allreduce_max(MPI_Comm comm, double v, double timeout_s) {
  std::vector<double> in{v}, out{0.0};
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Iallreduce(in.data(), out.data(), 1, MPI_DOUBLE, MPI_MAX, comm, &r), "MPI_Iallreduce");
  bounded_wait(r, timeout_s, "reducing times", in, out);
  return out[0];
}
template <class T>
void broadcast_vector(std::vector<T>& v, int root, double timeout_s, const char* what) {
  long long n = static_cast<long long>(v.size());
  bounded_broadcast(MPI_COMM_WORLD, &n, sizeof n, root, timeout_s, what);
  v.resize(static_cast<std::size_t>(n));
  bounded_broadcast(MPI_COMM_WORLD, v.data(), static_cast<int>(n * static_cast<long long>(sizeof(T))), root, timeout_s, what);
}

/// This rank's steady clock minus rank 0's, estimated by ping-pong with rank 0 (of 40 exchanges,
/// the one with the shortest round trip), and the estimate's error bound: half that round trip.
/// Hosts' clocks differ; every rank's times are taken on rank 0's clock. On rank 0 `error_s` is
/// the largest bound over all ranks (the report's "clock_error_s": times taken on two ranks
/// compare to within twice that).
struct clock_estimate {
  double offset = 0, error_s = 0;
};
clock_estimate clock_offset() {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  constexpr int tag = 7001, rounds = 40;
  clock_estimate e;
  if (rank == 0) {
    for (int r = 1; r < size; ++r) {
      double best_rtt = 1e300, best = 0;
      for (int q = 0; q < rounds; ++q) {
        double theirs = 0;
        const double a = clock_s();
        detail::mpi_check(MPI_Send(&a, 1, MPI_DOUBLE, r, tag, MPI_COMM_WORLD), "MPI_Send");
        detail::mpi_check(MPI_Recv(&theirs, 1, MPI_DOUBLE, r, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        const double b = clock_s();
        if (b - a < best_rtt) best_rtt = b - a, best = theirs - (a + b) / 2;
      }
      e.error_s = std::max(e.error_s, best_rtt / 2);
      detail::mpi_check(MPI_Send(&best, 1, MPI_DOUBLE, r, tag, MPI_COMM_WORLD), "MPI_Send");
    }
  } else {
    for (int q = 0; q < rounds; ++q) {
      double ping = 0;
      detail::mpi_check(MPI_Recv(&ping, 1, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
      const double mine = clock_s();
      detail::mpi_check(MPI_Send(&mine, 1, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD), "MPI_Send");
    }
    detail::mpi_check(MPI_Recv(&e.offset, 1, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  }
  return e;
}

// ---- compute ----------------------------------------------------------------------------------

constexpr int block = 64;
struct matmul_state {
  std::vector<float> a, b, c;
  double product_s = 1e-4;
  matmul_state() : a(block * block), b(block * block), c(block * block) {
    for (int i = 0; i < block * block; ++i) a[i] = 1.0f + static_cast<float>(i % 7) * 1e-3f, b[i] = 1.0f - static_cast<float>(i % 5) * 1e-3f;
  }
  void product() {
    for (int i = 0; i < block; ++i)
      for (int k = 0; k < block; ++k) {
        const float x = a[i * block + k];
        for (int j = 0; j < block; ++j) c[i * block + j] += x * b[k * block + j];
      }
    // Keep the values bounded and the work observable.
    a[0] = c[0] * 1e-9f + 1.0f;
  }
  void calibrate() {
    for (int i = 0; i < 20; ++i) product();
    double best = 1e300;
    for (int k = 0; k < 7; ++k) {
      const auto t0 = clock_type::now();
      for (int i = 0; i < 20; ++i) product();
      best = std::min(best, seconds_since(t0) / 20);
    }
    product_s = best;
  }
};

void compute(compute_kind kind, double seconds, matmul_state& mm) {
  const auto t0 = clock_type::now();
  const auto until = t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  switch (kind) {
    case compute_kind::spin:
      while (clock_type::now() < until) {
      }
      break;
    case compute_kind::sleep:
      std::this_thread::sleep_until(until);
      break;
    case compute_kind::matmul:
      for (long long n = std::llround(seconds / mm.product_s); n > 0; --n) mm.product();
      break;
  }
}

// ---- transfers ----------------------------------------------------------------------------------

struct transfer_spec {
  index_t edge = 0;
  pl::pass_kind pass = pl::pass_kind::forward;
  index_t sender = 0, receiver = 0;  // stages
  pl::tensor_edge tensor;            // the forward tensor (the edge's source mesh to its destination)
  std::vector<pl::tensor_edge> rest; // the file's other tensors between the same stages (one batch)
  bool from_file = false;            // the file gave the tensor
  double stated_s = 0, predicted_s = 0;
  index_t bytes = 0;
};

pl::tensor_edge activation(index_t k, index_t cols) {
  return {dynamic_shape({8 * k, cols}), 4, parse_mesh(std::to_string(k)), dynamic_spec("S0,R"), parse_mesh(std::to_string(k)),
          dynamic_spec("R,S0")};
}

/// The activation whose reshard the model predicts closest to `seconds` (at least K columns).
pl::tensor_edge sized_activation(index_t k, double seconds, const pl::network_model& net, bool backward) {
  auto predict = [&](index_t cols) { return pl::reshard_time_s(activation(k, cols), net, backward); };
  index_t lo = k, hi = k;
  if (!(seconds > predict(lo))) return activation(k, lo);
  const index_t most = (index_t{1} << 31) / (8 * k * 4);
  while (predict(hi) < seconds) {
    lo = hi;
    if (hi >= most) throw error("a transfer of " + std::to_string(seconds) + " s needs a tensor larger than 2 GiB");
    hi = std::min(most, hi * 2);
  }
  while (hi - lo > 1) {  // predict(lo) < seconds <= predict(hi)
    const index_t mid = lo + (hi - lo) / 2;
    (predict(mid) < seconds ? lo : hi) = mid;
  }
  return activation(k, seconds - predict(lo) < predict(hi) - seconds ? lo : hi);
}

/// Every tensor a transfer sends: its tensor and the rest of its batch.
std::vector<const pl::tensor_edge*> batch_of(const transfer_spec& t) {
  std::vector<const pl::tensor_edge*> all{&t.tensor};
  for (const pl::tensor_edge& x : t.rest) all.push_back(&x);
  return all;
}

std::vector<pl::tensor_edge> batch_copy(const transfer_spec& t) {
  std::vector<pl::tensor_edge> all{t.tensor};
  all.insert(all.end(), t.rest.begin(), t.rest.end());
  return all;
}

index_t tensor_bytes(const pl::tensor_edge& t) {
  index_t b = t.element_bytes;
  for (int i = 0; i < t.shape.rank(); ++i) b *= t.shape.extent(i);
  return b;
}

std::string extents_text(const dynamic_shape& s) {
  std::string out;
  for (int i = 0; i < s.rank(); ++i) {
    if (i) out += 'x';
    out += std::to_string(s.extent(i));
  }
  return out;
}

/// One resharder of one edge and direction on this rank, type-erased.
struct runner {
  MPI_Comm comm = MPI_COMM_NULL;
  std::function<void()> run;
};

template <class T, class S>
std::function<void()> make_runner(MPI_Comm comm, const transfer_spec& t, const reshard_options& o, S strategy, int rank) {
  const pl::tensor_edge& x = t.tensor;
  const dynamic_layout fwd_src(x.src_mesh, x.src_spec, x.shape), fwd_dst(x.dst_mesh, x.dst_spec, x.shape);
  const bool back = t.pass == pl::pass_kind::backward;
  auto r = std::make_shared<resharder<greedy, S>>(comm, back ? fwd_dst : fwd_src, back ? fwd_src : fwd_dst, sizeof(T), o,
                                                  greedy{}, strategy);
  auto in = std::make_shared<std::vector<T>>(r->source_elements());
  auto out = std::make_shared<std::vector<T>>(r->destination_elements());
  for (std::size_t i = 0; i < in->size(); ++i) (*in)[i] = static_cast<T>(i * 2654435761u + static_cast<unsigned>(rank));
  return [r, in, out] { (*r)(*in, *out); };
}

// Several tensors between two stages: one batch_resharder, one schedule.
template <class S>
std::function<void()> make_batch_runner(MPI_Comm comm, const transfer_spec& t, const reshard_options& o, S strategy) {
  const bool back = t.pass == pl::pass_kind::backward;
  std::vector<tensor_layouts> layouts;
  for (const pl::tensor_edge* x : batch_of(t)) {
    const dynamic_layout fwd_src(x->src_mesh, x->src_spec, x->shape), fwd_dst(x->dst_mesh, x->dst_spec, x->shape);
    layouts.push_back(tensor_layouts{(back ? fwd_dst : fwd_src).value(), (back ? fwd_src : fwd_dst).value(),
                                     static_cast<std::size_t>(x->element_bytes)});
  }
  auto r = std::make_shared<batch_resharder<greedy, S>>(comm, layouts, o, greedy{}, strategy);
  // Each tensor's sources hold every element's index; the first run is checked element by element.
  int me = 0;  // the device id: this rank's place in the edge's communicator
  MPI_Comm_rank(comm, &me);
  auto data = std::make_shared<std::vector<detail::checked_buffers>>();
  for (std::size_t k = 0; k < layouts.size(); ++k) data->emplace_back(r->plans()[k], me, r->source_elements(k), r->destination_elements(k));
  auto run = [r, data] {
    std::vector<std::span<const std::byte>> ins;
    std::vector<std::span<std::byte>> outs;
    for (detail::checked_buffers& b : *data) ins.emplace_back(b.in), outs.emplace_back(b.out);
    (*r)(ins, outs);
  };
  for (detail::checked_buffers& b : *data) b.clear();
  run();
  std::uint64_t wrong = 0;
  for (const detail::checked_buffers& b : *data) wrong += b.wrong();
  wrong = bounded_allreduce(comm, wrong, MPI_SUM, o.timeout_s, "checking a batch edge");
  if (wrong) throw error("edges[" + std::to_string(t.edge) + "]: the batch of " + std::to_string(layouts.size()) +
                         " tensors delivered " + std::to_string(wrong) + " wrong elements");
  return run;
}

std::function<void()> build_runner(MPI_Comm comm, const transfer_spec& t, const reshard_options& o, const std::string& strategy,
                                   int rank) {
  if (!t.rest.empty())
    return visit_strategy(strategy, [&](auto s) -> std::function<void()> { return make_batch_runner(comm, t, o, s); });
  return visit_strategy(strategy, [&](auto s) -> std::function<void()> {
    switch (t.tensor.element_bytes) {
      case 1: return make_runner<std::uint8_t>(comm, t, o, s, rank);
      case 2: return make_runner<std::uint16_t>(comm, t, o, s, rank);
      case 4: return make_runner<std::uint32_t>(comm, t, o, s, rank);
      case 8: return make_runner<std::uint64_t>(comm, t, o, s, rank);
      default: throw error("edges[" + std::to_string(t.edge) + "]: element_bytes must be 1, 2, 4 or 8 to be executed");
    }
  });
}

// ---- lists on the wire --------------------------------------------------------------------------

void put_lists(std::vector<std::int64_t>& w, const pl::lists& l) {
  w.push_back(static_cast<std::int64_t>(l.size()));
  for (const pl::stage_list& s : l) {
    w.push_back(static_cast<std::int64_t>(s.size()));
    for (const pl::instruction& x : s)
      w.insert(w.end(), {static_cast<std::int64_t>(x.op), x.mb, x.edge, static_cast<std::int64_t>(x.pass), x.peer});
  }
}
pl::lists get_lists(const std::vector<std::int64_t>& w, std::size_t& at) {
  pl::lists l(static_cast<std::size_t>(w.at(at++)));
  for (pl::stage_list& s : l) {
    s.resize(static_cast<std::size_t>(w.at(at++)));
    for (pl::instruction& x : s) {
      x.op = static_cast<pl::op_kind>(w.at(at));
      x.mb = w.at(at + 1);
      x.edge = w.at(at + 2);
      x.pass = static_cast<pl::pass_kind>(w.at(at + 3));
      x.peer = w.at(at + 4);
      at += 5;
    }
  }
  return l;
}

// ---- one run of one policy's lists on this rank ------------------------------------------------

struct rank_times {
  double origin = 0;               // when this rank left the common barrier
  std::vector<double> start, end;  // per entry of this rank's stage list
};  // seconds on rank 0's clock; rank 0 then counts them from the earliest origin

rank_times run_lists(const pl::graph& g, const pl::stage_list& list, const std::vector<pl::graph::id>& ids,
                     std::vector<runner>& runners, compute_kind kind, matmul_state& mm, double unit, bool separate,
                     double timeout_s, double offset) {
  const pl::description& d = g.source();
  rank_times t;
  t.start.assign(list.size(), 0);
  t.end.assign(list.size(), 0);
  auto transfer_index = [&](const pl::instruction& x) {
    return static_cast<std::size_t>(x.edge * d.passes() + (x.pass == pl::pass_kind::backward ? 1 : 0));
  };
  sleepy_barrier(MPI_COMM_WORLD, timeout_s, "starting a run");
  sleepy_barrier(MPI_COMM_WORLD, timeout_s, "starting a run");
  t.origin = clock_s() - offset;
  auto do_compute = [&](std::size_t i) {
    t.start[i] = clock_s() - offset;
    compute(kind, g.duration(ids[i]) * unit, mm);
    t.end[i] = clock_s() - offset;
  };
  auto do_transfer = [&](std::size_t i) {
    t.start[i] = clock_s() - offset;
    runners[transfer_index(list[i])].run();
    t.end[i] = clock_s() - offset;
  };
  if (!separate) {
    for (std::size_t i = 0; i < list.size(); ++i) list[i].is_compute() ? do_compute(i) : do_transfer(i);
    return t;
  }
  // Separate streams: this thread computes, another one communicates; each takes its entries in
  // list order. done[o]: operation o finished on this rank.
  std::vector<unsigned char> done(static_cast<std::size_t>(g.size()), 0);
  std::mutex m;
  std::condition_variable cv;
  std::exception_ptr comm_failure;
  std::atomic<bool> abandon{false};
  auto mark = [&](pl::graph::id o) {
    {
      std::lock_guard<std::mutex> lock(m);
      done[static_cast<std::size_t>(o)] = 1;
    }
    cv.notify_all();
  };
  auto wait_for = [&](auto&& ready) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return ready() || abandon.load(); });
    return !abandon.load();
  };
  std::thread comm([&] {
    try {
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (list[i].is_compute()) continue;
        if (list[i].op == pl::op_kind::send) {
          const pl::graph::id p = g.producer(ids[i]);
          if (!wait_for([&] { return done[static_cast<std::size_t>(p)] != 0; })) return;
        }
        do_transfer(i);
        mark(ids[i]);
      }
    } catch (...) {
      comm_failure = std::current_exception();
      abandon = true;
      cv.notify_all();
    }
  });
  for (std::size_t i = 0; i < list.size() && !abandon; ++i) {
    if (!list[i].is_compute()) continue;
    const pl::graph::id o = ids[i];
    if (!wait_for([&] {
          bool ready = true;
          g.for_each_input(o, [&](pl::graph::id x) { ready = ready && done[static_cast<std::size_t>(x)] != 0; });
          return ready;
        }))
      break;
    do_compute(i);
    mark(o);
  }
  comm.join();
  if (comm_failure) std::rethrow_exception(comm_failure);
  return t;
}

// ---- what rank 0 makes of the gathered times ----------------------------------------------------

struct policy_report {
  std::string name;
  pl::timeline simulated;                 // the stated times
  std::vector<double> runs;               // measured makespans
  std::size_t best = 0;
  std::vector<rank_times> best_times;     // per rank, the best run
  double resimulated = 0;                 // seconds
  double compute_ratio = 0, transfer_ratio = 0;  // measured / stated durations, summed over the operations
  pl::lists measured_stages;              // per stage: start = first rank's start, end = last rank's end
};

/// Per-operation durations measured in one run (seconds): a compute, its stage's slowest rank; a
/// transfer, from the last participant's start (when both stages had reached it) to the last end.
std::vector<double> measured_durations(const pl::graph& g, const std::vector<std::vector<pl::graph::id>>& ids,
                                       const std::vector<rank_times>& times, index_t k) {
  std::vector<double> dur(static_cast<std::size_t>(g.size()), 0), last_start(static_cast<std::size_t>(g.size()), -1), last_end(static_cast<std::size_t>(g.size()), -1);
  for (std::size_t r = 0; r < times.size(); ++r) {
    const index_t s = static_cast<index_t>(r) / k;
    for (std::size_t i = 0; i < ids[s].size(); ++i) {
      const auto o = static_cast<std::size_t>(ids[s][i]);
      const double a = times[r].start[i], b = times[r].end[i];
      if (g.is_compute(ids[s][i])) dur[o] = std::max(dur[o], b - a);
      last_start[o] = std::max(last_start[o], a);
      last_end[o] = std::max(last_end[o], b);
    }
  }
  for (pl::graph::id o = g.compute_count(); o < g.size(); ++o)
    dur[static_cast<std::size_t>(o)] = std::max(0.0, last_end[static_cast<std::size_t>(o)] - last_start[static_cast<std::size_t>(o)]);
  return dur;
}

std::string ranking_text(const std::vector<policy_report>& reports, const std::vector<double>& value, double tie) {
  std::vector<std::size_t> order(reports.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return value[a] < value[b]; });
  std::string out;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (i) out += value[order[i]] <= value[order[i - 1]] * (1 + tie) ? " = " : " < ";
    char buf[64];
    std::snprintf(buf, sizeof buf, " %.4g", value[order[i]]);
    out += reports[order[i]].name + buf;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double timeout_s = 60;
  std::string problem;
  // Input errors are the same on every rank (every rank reads the same flags and rank 0's file);
  // rank 0 reports them and every rank ends with status 2.
  auto input_check = [&]() {
    bool ok = false;
    try {
      ok = all_ok(MPI_COMM_WORLD, problem.empty(), timeout_s, "checking the input");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "meshcast-pipeline-mpi (rank %d): error: %s\n", rank, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (ok) return true;
    if (rank == 0 && !problem.empty()) std::fprintf(stderr, "meshcast-pipeline-mpi: error: %s\n", problem.c_str());
    return false;
  };
  flags f;
  pl::parsed_pipeline file;
  pl::network_model net;
  index_t k = 1;
  double unit = 1;
  try {
    f = parse_flags(argc, argv);
    timeout_s = f.timeout_s;
  } catch (const std::exception& e) {
    problem = e.what();
  }
  if (!input_check()) return MPI_Finalize(), 2;
  if (f.help) {
    if (rank == 0) usage(stdout);
    MPI_Finalize();
    return 0;
  }
  // The file, as rank 0 reads it.
  std::vector<char> text;
  if (rank == 0) {
    try {
      const std::string t = pl::read_pipeline_text(f.file);
      text.assign(t.begin(), t.end());
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  if (!input_check()) return MPI_Finalize(), 2;
  std::vector<transfer_spec> specs;
  try {
    broadcast_vector(text, 0, timeout_s, "receiving the pipeline file");
    try {
      file = pl::parse_pipeline(json::parse(std::string_view(text.data(), text.size())));
    } catch (const error& e) {
      throw error(f.file + ": " + e.what());
    }
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
    for (std::size_t e = 0; e < d.edges.size(); ++e) {
      pl::edge& x = d.edges[e];
      const std::vector<pl::tensor_edge>& given = file.tensors[e];
      const std::string at = "edges[" + std::to_string(file.file_edges[e][0]) + "]";
      for (const pl::tensor_edge& g : given) {
        if (g.element_bytes != 1 && g.element_bytes != 2 && g.element_bytes != 4 && g.element_bytes != 8)
          throw error(at + ": element_bytes is " + std::to_string(g.element_bytes) +
                      "; an executed tensor has elements of 1, 2, 4 or 8 bytes");
        if (g.src_mesh.size() != k || g.dst_mesh.size() != k)
          throw error(at + ": its meshes have " + std::to_string(g.src_mesh.size()) + " and " +
                      std::to_string(g.dst_mesh.size()) + " devices but every stage has " + std::to_string(k) +
                      " ranks (--ranks-per-stage)");
      }
      for (index_t p = 0; p < d.passes(); ++p) {
        transfer_spec t;
        t.edge = static_cast<index_t>(e);
        t.pass = p ? pl::pass_kind::backward : pl::pass_kind::forward;
        t.sender = p ? x.to : x.from;
        t.receiver = p ? x.from : x.to;
        const bool back = p == 1;
        if (!given.empty()) {
          t.tensor = given[0];
          t.rest.assign(given.begin() + 1, given.end());
          t.from_file = true;
          t.predicted_s = pl::reshard_time_s(batch_copy(t), net, back);
          // The stated time of a tensor edge is its prediction under this run's model.
          if (back && !x.backward_time) x.backward_time = t.predicted_s / unit;
          if (!back) x.time = t.predicted_s / unit;
          t.stated_s = (back ? x.back() : x.time) * unit;
        } else {
          t.stated_s = (back ? x.back() : x.time) * unit;
          t.tensor = sized_activation(k, t.stated_s, net, back);
          t.predicted_s = pl::reshard_time_s(t.tensor, net, back);
        }
        t.bytes = 0;
        for (const pl::tensor_edge* y : batch_of(t)) t.bytes += tensor_bytes(*y);
        specs.push_back(std::move(t));
      }
    }
    pl::validate(d);
  } catch (const std::exception& e) {
    problem = e.what();
  }
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
      try {
        for (std::size_t i = 0; i < f.policies.size(); ++i) {
          reports[i].name = f.policies[i];
          reports[i].simulated = pl::visit_policy(f.policies[i], [&](auto p) {
            if constexpr (requires { p.search_limit_s; })
              if (f.search_limit_s >= 0) p.search_limit_s = f.search_limit_s;
            return pl::order(d, p, f.policy);
          });
          put_lists(wire, reports[i].simulated.stages);
        }
      } catch (const std::exception& e) {
        problem = e.what();
        wire.clear();
      }
    }
    if (!input_check()) return MPI_Finalize(), 2;
    broadcast_vector(wire, 0, timeout_s, "receiving the lists");
    std::vector<pl::lists> all_lists;
    std::size_t at = 0;
    for (std::size_t i = 0; i < f.policies.size(); ++i) all_lists.push_back(get_lists(wire, at));
    std::vector<std::vector<std::vector<pl::graph::id>>> all_ids;
    for (const pl::lists& l : all_lists) all_ids.push_back(pl::identify(g, l));

    // 2. A communicator and a resharder per edge and direction (every rank goes through them in
    //    the same order; each construction involves only the two stages' ranks).
    std::vector<runner> runners(specs.size());
    const reshard_options ro = [&] {
      reshard_options o = pl::to_reshard_options(net, net.devices_per_host);
      o.timeout_s = timeout_s;
      return o;
    }();
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
        best = std::min(best, allreduce_max(r.comm, seconds_since(t0), timeout_s));
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
      bounded_wait(r, timeout_s, "gathering the transfer times", mine, got);
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
    const clock_estimate clock_est = clock_offset();
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
        int total = 0;
        for (int r = 0; r < size; ++r) {
          counts[static_cast<std::size_t>(r)] = static_cast<int>(1 + 2 * all_lists[i][static_cast<std::size_t>(r / k)].size());
          offsets[static_cast<std::size_t>(r)] = total;
          total += counts[static_cast<std::size_t>(r)];
        }
        std::vector<double> gathered(rank == 0 ? static_cast<std::size_t>(total) : 1);
        MPI_Request req = MPI_REQUEST_NULL;
        detail::mpi_check(MPI_Igatherv(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, gathered.data(), counts.data(),
                                       offsets.data(), MPI_DOUBLE, 0, MPI_COMM_WORLD, &req),
                          "MPI_Igatherv");
        bounded_wait(req, timeout_s, "gathering the measured times", mine, gathered, counts, offsets);
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
      for (std::size_t i = 0; i < reports.size(); ++i) {
        policy_report& r = reports[i];
        pl::graph gm(d);
        const std::vector<double> dur = measured_durations(g, all_ids[i], r.best_times, k);
        double stated[2] = {0, 0}, measured[2] = {0, 0};
        for (pl::graph::id o = 0; o < g.size(); ++o) {
          gm.set_duration(o, dur[static_cast<std::size_t>(o)] / unit);
          stated[g.is_compute(o) ? 0 : 1] += g.duration(o) * unit;
          measured[g.is_compute(o) ? 0 : 1] += dur[static_cast<std::size_t>(o)];
        }
        r.compute_ratio = stated[0] > 0 ? measured[0] / stated[0] : 0;
        r.transfer_ratio = stated[1] > 0 ? measured[1] / stated[1] : 0;
        pl::lists l = all_lists[i];
        const pl::simulation sim = pl::simulate(gm, l);
        if (sim.deadlock) throw error("re-simulating " + r.name + "'s lists: " + sim.problem);
        r.resimulated = sim.makespan * unit;
        r.measured_stages = all_lists[i];
        for (index_t s = 0; s < d.stage_count(); ++s)
          for (std::size_t j = 0; j < r.measured_stages[static_cast<std::size_t>(s)].size(); ++j) {
            double a = 1e300, b = 0;
            for (index_t q = s * k; q < (s + 1) * k; ++q) {
              a = std::min(a, r.best_times[static_cast<std::size_t>(q)].start[j]);
              b = std::max(b, r.best_times[static_cast<std::size_t>(q)].end[j]);
            }
            r.measured_stages[static_cast<std::size_t>(s)][j].start = a;
            r.measured_stages[static_cast<std::size_t>(s)][j].end = b;
          }
      }
      std::vector<double> sim_s, meas_s;
      for (const policy_report& r : reports) {
        sim_s.push_back(r.simulated.makespan * unit);
        meas_s.push_back(r.runs[r.best]);
      }
      // Pairs the simulator orders (beyond the tie tolerance) and whether the measurements agree.
      int pairs = 0, agreeing = 0, ties = 0;
      for (std::size_t a = 0; a < reports.size(); ++a)
        for (std::size_t b = a + 1; b < reports.size(); ++b) {
          const double lo = std::min(sim_s[a], sim_s[b]), hi = std::max(sim_s[a], sim_s[b]);
          if (hi <= lo * (1 + f.tie)) {
            ++ties;
            continue;
          }
          ++pairs;
          if ((sim_s[a] < sim_s[b]) == (meas_s[a] < meas_s[b])) ++agreeing;
        }
      if (f.json) {
        cli::json_writer j;
        j.begin_object();
        j.key("file").value(f.file);
        j.key("stages").value(static_cast<long long>(d.stage_count()));
        j.key("ranks_per_stage").value(static_cast<long long>(k));
        j.key("microbatches").value(static_cast<long long>(d.microbatches));
        j.key("schedule").value(std::string(pl::to_string(d.schedule)));
        j.key("streams").value(std::string(pl::to_string(d.streams)));
        j.key("time_unit_s").exact(unit);
        j.key("clock_error_s").exact(clock_est.error_s);
        j.key("compute").value(to_string(f.compute));
        j.key("size_by").value(f.size_by_measured ? "measured" : "model");
        if (f.compute == compute_kind::matmul) j.key("matmul_product_s").exact(mm.product_s);
        j.key("network").begin_object();
        j.key("nic_gbps").exact(net.nic_gbps).key("nic_efficiency").exact(net.nic_efficiency);
        j.key("intra_gbps").exact(net.intra_gbps).key("latency_us").exact(net.latency_us);
        j.key("nics_per_host").value(static_cast<long long>(net.nics_per_host));
        j.key("devices_per_host").value(static_cast<long long>(net.devices_per_host));
        j.key("strategy").value(net.strategy).key("split_replicas").boolean(net.split_replicas);
        j.key("mode").value(std::string(meshcast::to_string(net.mode)));
        j.end_object();
        j.key("transfers").begin_array();
        for (std::size_t i = 0; i < specs.size(); ++i) {
          const transfer_spec& t = specs[i];
          j.begin_object().key("edge").value(static_cast<long long>(t.edge));
          j.key("pass").value(std::string(pl::to_string(t.pass)));
          j.key("from").value(static_cast<long long>(t.sender)).key("to").value(static_cast<long long>(t.receiver));
          j.key("shape").value(extents_text(t.tensor.shape)).key("bytes").value(static_cast<long long>(t.bytes));
          j.key("tensor_from_file").boolean(t.from_file);
          j.key("tensors").value(static_cast<long long>(1 + t.rest.size()));
          j.key("stated_s").exact(t.stated_s).key("predicted_s").exact(t.predicted_s).key("alone_s").exact(alone[i]);
          j.end_object();
        }
        j.end_array();
        j.key("policies").begin_array();
        for (std::size_t i = 0; i < reports.size(); ++i) {
          const policy_report& r = reports[i];
          j.begin_object().key("policy").value(r.name);
          j.key("simulated_s").exact(sim_s[i]).key("measured_s").exact(meas_s[i]);
          j.key("runs_s").begin_array();
          for (double x : r.runs) j.exact(x);
          j.end_array();
          j.key("resimulated_s").exact(r.resimulated);
          j.key("measured_over_simulated").exact(sim_s[i] > 0 ? meas_s[i] / sim_s[i] : 0);
          j.key("measured_over_resimulated").exact(r.resimulated > 0 ? meas_s[i] / r.resimulated : 0);
          j.key("compute_over_stated").exact(r.compute_ratio).key("transfers_over_stated").exact(r.transfer_ratio);
          j.key("proven_optimal").boolean(r.simulated.proven_optimal);
          j.key("stages").begin_array();
          for (std::size_t s = 0; s < r.measured_stages.size(); ++s) {
            j.begin_array();
            for (std::size_t q = 0; q < r.measured_stages[s].size(); ++q) {
              const pl::instruction& x = r.measured_stages[s][q];
              const pl::instruction& y = r.simulated.stages[s][q];
              j.begin_object().key("op").value(std::string(pl::to_string(x.op)));
              if (x.is_transfer()) j.key("edge").value(static_cast<long long>(x.edge));
              j.key("mb").value(static_cast<long long>(x.mb));
              if (x.is_transfer()) {
                j.key("pass").value(std::string(pl::to_string(x.pass)));
                j.key("peer").value(static_cast<long long>(x.peer));
              }
              j.key("sim_start").exact(y.start * unit).key("sim_end").exact(y.end * unit);
              j.key("start").exact(x.start).key("end").exact(x.end);
              j.end_object();
            }
            j.end_array();
          }
          j.end_array();
          j.end_object();
        }
        j.end_array();
        j.key("ranking").begin_object();
        j.key("simulated").value(ranking_text(reports, sim_s, f.tie));
        j.key("measured").value(ranking_text(reports, meas_s, f.tie));
        j.key("pairs").value(static_cast<long long>(pairs)).key("agreeing_pairs").value(static_cast<long long>(agreeing));
        j.key("ties").value(static_cast<long long>(ties)).key("agree").boolean(agreeing == pairs);
        j.end_object();
        j.end_object();
        std::printf("%s\n", j.str().c_str());
      } else {
        std::printf("meshcast-pipeline-mpi: %s: %lld stages x %lld ranks, %lld microbatches, %s, %s streams, %zu edges; "
                    "time unit %.6g ms, compute %s\n",
                    f.file.c_str(), static_cast<long long>(d.stage_count()), static_cast<long long>(k),
                    static_cast<long long>(d.microbatches), std::string(pl::to_string(d.schedule)).c_str(),
                    std::string(pl::to_string(d.streams)).c_str(), d.edges.size(), unit * 1e3, to_string(f.compute));
        std::printf("  network model: NIC %.6g Gbit/s x %.4g payload, latency %.6g us, intra-host %.6g Gbit/s, %lld devices per "
                    "host, %s, %s mode\n",
                    net.nic_gbps, net.nic_efficiency, net.latency_us, net.intra_gbps, static_cast<long long>(net.devices_per_host),
                    net.strategy.c_str(), std::string(meshcast::to_string(net.mode)).c_str());
        for (std::size_t i = 0; i < specs.size(); ++i) {
          const transfer_spec& t = specs[i];
          std::printf("  edges[%lld] %s (stage %lld -> %lld): %s x %lld B = %lld B%s; stated %.3f ms, predicted %.3f ms, "
                      "alone %.3f ms\n",
                      static_cast<long long>(t.edge), std::string(pl::to_string(t.pass)).c_str(),
                      static_cast<long long>(t.sender), static_cast<long long>(t.receiver), extents_text(t.tensor.shape).c_str(),
                      static_cast<long long>(t.tensor.element_bytes), static_cast<long long>(t.bytes),
                      t.from_file ? " (the file's tensor)" : "", t.stated_s * 1e3, t.predicted_s * 1e3, alone[i] * 1e3);
        }
        for (std::size_t i = 0; i < reports.size(); ++i) {
          const policy_report& r = reports[i];
          std::string runs;
          for (double x : r.runs) {
            char buf[32];
            std::snprintf(buf, sizeof buf, " %.4f", x);
            runs += buf;
          }
          std::printf("  %-16s simulated %.4f s (%.6g units), measured %.4f s (x%.3f; runs%s), re-simulated with the "
                      "measured durations %.4f s (measured x%.3f; computes x%.3f, transfers x%.3f of the stated time)\n",
                      r.name.c_str(), sim_s[i], r.simulated.makespan, meas_s[i], sim_s[i] > 0 ? meas_s[i] / sim_s[i] : 0,
                      runs.c_str(), r.resimulated, r.resimulated > 0 ? meas_s[i] / r.resimulated : 0, r.compute_ratio,
                      r.transfer_ratio);
        }
        std::printf("  ranking, simulated: %s\n", ranking_text(reports, sim_s, f.tie).c_str());
        std::printf("  ranking, measured:  %s\n", ranking_text(reports, meas_s, f.tie).c_str());
        std::printf("  the measurements order %d of the %d pairs the simulator orders as it does (%d ties within %.3g%%): %s\n",
                    agreeing, pairs, ties, f.tie * 100, agreeing == pairs ? "the rankings agree" : "the rankings DISAGREE");
      }
      std::fflush(stdout);
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
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meshcast-pipeline-mpi (rank %d): error: %s\n", rank, e.what());
    std::fflush(stderr);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  MPI_Finalize();
  return 0;
}

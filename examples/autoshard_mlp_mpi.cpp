// meshcast-autoshard-mlp-mpi: runs the plan automatic sharding chose for an MLP forward pass (or
// another forward graph of 2-D matmuls and elementwise ops) on the ranks of MPI_COMM_WORLD, rank r
// being device r of the logical mesh (row-major), with real matrix products, and checks the
// result against a single-process run of the same graph (issue 11, point 6).
//
//   mpiexec -n 2 meshcast-autoshard-mlp-mpi --mesh 2 --batch 32 --hidden 512 --ffn 2048 --memory-mib 6
//   mpiexec -n 4 meshcast-autoshard-mlp-mpi --mesh 2x2 --batch 2048 --hidden 128 --ffn 512
//
// 1. The cost model is calibrated where no flag gives its values: device flops from a timed local
//    sgemm (every rank at once, the slowest rank's rate), each mesh axis's latency and bandwidth
//    from all-reduces of 4 bytes and of the largest activation on that axis's communicators.
// 2. Rank 0 runs auto_shard (or every rank reads --specs FILE.json, {"specs": {...}}) and shares
//    the specs; every rank evaluates them into the same plan.
// 3. Inputs and parameters are filled from their global indices, each rank its own tile in the
//    tensor's spec. Then `execution_order` runs: reshards through meshcast::resharder (same
//    devices; the schedule automatic sharding costs: send_recv, greedy without local search, on
//    the network derived from the mesh), compute as local products on the tiles, partial sums
//    reduced by MPI all-reduce / reduce-scatter over the communicators of the plan's mesh axes.
//    A warm-up run, then --repeat timed runs: each step between barriers (the slowest rank's
//    time), and the whole pass without barriers.
// 4. Every rank compares its tile of each graph output with the single-process result (rank 0
//    computes it, all ranks receive it): exit 0 only if the largest error is within --tolerance
//    of the output's largest magnitude. Exit 1 on a mismatch or an --expect-spec that does not
//    hold, 2 on bad input.
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <meshcast/autoshard.hpp>
#include <meshcast/mpi.hpp>
#include "cli/one_blas_thread.hpp"  // CBC and MPI in one executable

#if MESHCAST_HAS_CBLAS
extern "C" void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float* a, int lda,
                            const float* b, int ldb, float beta, float* c, int ldc);
#endif
#if MESHCAST_HAS_OPENBLAS
extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_config(void);
#endif

namespace {

namespace mc = meshcast;
namespace as = meshcast::autoshard;
using mc::error;
using mc::index_t;

int world_rank = 0, world_size = 1;

// ---- matrix products -------------------------------------------------------------------------

const char* blas_name() {
#if MESHCAST_HAS_OPENBLAS
  return "OpenBLAS";
#elif MESHCAST_HAS_CBLAS
  return "BLAS (cblas_sgemm)";
#else
  return "no BLAS (plain loops)";
#endif
}

/// C[m,n] = A[m,k] B[k,n], dense row-major.
void sgemm(index_t m, index_t n, index_t k, const float* a, const float* b, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(c, c + m * n, 0.0f);
    return;
  }
#if MESHCAST_HAS_CBLAS
  cblas_sgemm(101 /* row major */, 111 /* no trans */, 111, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(k), b, static_cast<int>(n), 0.0f, c, static_cast<int>(n));
#else
  std::fill(c, c + m * n, 0.0f);
  for (index_t i = 0; i < m; ++i)
    for (index_t p = 0; p < k; ++p) {
      const float x = a[i * k + p];
      const float* brow = b + p * n;
      float* crow = c + i * n;
      for (index_t j = 0; j < n; ++j) crow[j] += x * brow[j];
    }
#endif
}

// ---- waiting without holding a core (ranks may outnumber cores) ------------------------------

constexpr double wait_limit_s = 300;

void wait(MPI_Request& r, const char* what) {
  int done = 0, spins = 0;
  const auto begin = std::chrono::steady_clock::now();
  while (true) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (++spins > 64) {
      sched_yield();  // leave the core to a rank with work, without sleeping past the message
      if (spins % 4096 == 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() > wait_limit_s) {
        std::fprintf(stderr, "meshcast-autoshard-mlp-mpi: rank %d: no progress for %.0f s in %s; aborting\n",
                     world_rank, wait_limit_s, what);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
    }
  }
}

void barrier(MPI_Comm comm = MPI_COMM_WORLD) {
  MPI_Request r;
  MPI_Ibarrier(comm, &r);
  wait(r, "a barrier");
}

void allreduce(void* data, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, const char* what) {
  MPI_Request r;
  MPI_Iallreduce(MPI_IN_PLACE, data, count, type, op, comm, &r);
  wait(r, what);
}

void broadcast(void* data, int count, MPI_Datatype type, int root, MPI_Comm comm, const char* what) {
  MPI_Request r;
  MPI_Ibcast(data, count, type, root, comm, &r);
  wait(r, what);
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// ---- options ---------------------------------------------------------------------------------

struct options {
  std::string mesh_text;
  index_t batch = 32, hidden = 512, ffn = 2048;
  std::string activation = "gelu", x_spec = "R,R", y_spec = "R,R";
  std::string graph_path, specs_path, solver;
  double time_limit_s = 60, memory_mib = std::numeric_limits<double>::infinity();
  std::vector<double> gbps, latency_us;
  double gflops = 0;
  int repeat = 5, blas_threads = 1;
  double tolerance = 1e-4;
  std::vector<std::pair<std::string, std::string>> expect;  // tensor, specs
  bool corrupt = false;
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: mpiexec -n N meshcast-autoshard-mlp-mpi [options]\n"
               "  --mesh AxB               logical mesh, as many devices as ranks (default: N, 1-D)\n"
               "  --batch B --hidden H --ffn F   the MLP x[B,H] @ w1[H,F] -> act -> @ w2[F,H] -> y\n"
               "                           (default 32, 512, 2048)\n"
               "  --activation NAME        relu, gelu, silu, tanh, sigmoid, identity, ... (default gelu)\n"
               "  --x-spec S               x's fixed spec, or 'free' (default R,R)\n"
               "  --y-spec S               spec y must be delivered in, or 'any' (default R,R)\n"
               "  --graph GRAPH.json       run this forward graph instead (2-D matmul, elementwise unary,\n"
               "                           same-shape add/sub/mul/maximum/minimum)\n"
               "  --specs SPECS.json       run this assignment {\"specs\": {tensor: spec}} instead of solving\n"
               "  --solver NAME            %s (default %s)\n"
               "  --time-limit S           solver time limit (default 60)\n"
               "  --memory-mib X           memory limit per device for the solver (default: none)\n"
               "  --axis-gbps X[,Y]        axis bandwidths, Gbit/s (default: measured by all-reduces)\n"
               "  --axis-latency-us X[,Y]  axis latencies, microseconds (default: measured)\n"
               "  --device-gflops X        device speed, GFLOP/s (default: measured by a timed sgemm)\n"
               "  --repeat N               timed runs after a warm-up (default 5)\n"
               "  --blas-threads N         threads of the BLAS per rank, where it can be set (default 1)\n"
               "  --tolerance T            largest error / largest magnitude accepted (default 1e-4)\n"
               "  --expect-spec T=S1[|S2]  fail (exit 1) unless tensor T gets one of these specs (repeatable)\n"
               "  --corrupt                add 1 to the first element of the last rank's tile of the first\n"
               "                           parameter (shows that the check catches a wrong result)\n"
               "Exit status: 0 when every output matches the single-process result, 1 when not (or an\n"
               "--expect-spec fails), 2 on bad input.\n",
               as::sharding_solver_names,
#if MESHCAST_HAS_CBC
               "ilp"
#else
               "dp, greedy where dp does not apply"
#endif
  );
}

double parse_number(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(v)) throw error(flag + " '" + text + "' is not a finite number");
  return v;
}

index_t parse_count(const std::string& flag, const std::string& text, index_t low, index_t high) {
  const double v = parse_number(flag, text);
  if (v != std::floor(v) || v < static_cast<double>(low) || v > static_cast<double>(high))
    throw error(flag + " '" + text + "' must be a whole number in " + std::to_string(low) + ".." + std::to_string(high));
  return static_cast<index_t>(v);
}

std::vector<double> parse_list(const std::string& flag, const std::string& text) {
  std::vector<double> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t next = text.find(',', pos);
    out.push_back(parse_number(flag, text.substr(pos, next == std::string::npos ? std::string::npos : next - pos)));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return out;
}

options parse_options(int argc, char** argv, bool& help) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw error("flag " + arg + " needs a value");
      return argv[++i];
    };
    constexpr index_t big = index_t{1} << 20;
    if (arg == "--help" || arg == "-h") help = true;
    else if (arg == "--mesh") o.mesh_text = next();
    else if (arg == "--batch") o.batch = parse_count(arg, next(), 1, big);
    else if (arg == "--hidden") o.hidden = parse_count(arg, next(), 1, big);
    else if (arg == "--ffn") o.ffn = parse_count(arg, next(), 1, big);
    else if (arg == "--activation") o.activation = next();
    else if (arg == "--x-spec") o.x_spec = next();
    else if (arg == "--y-spec") o.y_spec = next();
    else if (arg == "--graph") o.graph_path = next();
    else if (arg == "--specs") o.specs_path = next();
    else if (arg == "--solver") o.solver = next();
    else if (arg == "--time-limit") {
      o.time_limit_s = parse_number(arg, next());
      if (!(o.time_limit_s > 0)) throw error("--time-limit must be positive");
    } else if (arg == "--memory-mib") {
      o.memory_mib = parse_number(arg, next());
      if (!(o.memory_mib > 0)) throw error("--memory-mib must be positive");
    } else if (arg == "--axis-gbps") o.gbps = parse_list(arg, next());
    else if (arg == "--axis-latency-us") o.latency_us = parse_list(arg, next());
    else if (arg == "--device-gflops") {
      o.gflops = parse_number(arg, next());
      if (!(o.gflops > 0)) throw error("--device-gflops must be positive");
    } else if (arg == "--repeat") o.repeat = static_cast<int>(parse_count(arg, next(), 1, 1000));
    else if (arg == "--blas-threads") o.blas_threads = static_cast<int>(parse_count(arg, next(), 1, 256));
    else if (arg == "--tolerance") {
      o.tolerance = parse_number(arg, next());
      if (!(o.tolerance > 0)) throw error("--tolerance must be positive");
    } else if (arg == "--corrupt") {
      o.corrupt = true;
    } else if (arg == "--expect-spec") {
      const std::string v = next();
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0) throw error("--expect-spec '" + v + "' is not TENSOR=SPEC");
      o.expect.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else throw error("unknown argument '" + arg + "' (see --help)");
  }
  if (!o.specs_path.empty() && !o.solver.empty()) throw error("--specs and --solver exclude each other");
  return o;
}

std::string read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(std::string(what) + " '" + path + "' cannot be read: " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- the graph and what this example can execute ---------------------------------------------

const char* const unary_ops[] = {"relu", "gelu", "silu", "tanh", "sigmoid", "exp", "neg", "square", "abs", "identity"};
const char* const binary_ops[] = {"add", "sub", "mul", "maximum", "minimum"};

bool listed(const std::string& type, const auto& list) {
  return std::any_of(std::begin(list), std::end(list), [&](const char* n) { return type == n; });
}

as::graph make_mlp(const options& o) {
  as::graph g;
  g.element_bytes = 4;
  g.add_tensor("x", {o.batch, o.hidden}, false,
               o.x_spec == "free" ? std::nullopt : std::optional<std::string>(o.x_spec));
  g.add_tensor("w1", {o.hidden, o.ffn}, true);
  g.add_tensor("w2", {o.ffn, o.hidden}, true);
  auto op = [&](std::string name, std::string type, std::vector<std::string> inputs, std::string output) {
    as::op_args a;
    a.name = std::move(name), a.type = std::move(type), a.inputs = std::move(inputs), a.output = std::move(output);
    g.add_op(std::move(a));
  };
  op("fc1", "matmul", {"x", "w1"}, "h");
  op("act", o.activation, {"h"}, "a");
  op("fc2", "matmul", {"a", "w2"}, "y");
  g.add_output("y", o.y_spec == "any" ? std::nullopt : std::optional<std::string>(o.y_spec));
  g.finalize();
  return g;
}

void check_executable(const as::graph& g) {
  if (g.element_bytes != 4) throw error("the graph's element_bytes is " + std::to_string(g.element_bytes) +
                                        "; this example computes in 4-byte floats");
  if (g.training) throw error("the graph is a training graph; this example runs forward passes only");
  for (const as::op_desc& op : g.ops()) {
    const auto& ts = g.tensors();
    const std::string what = "op '" + op.name + "' (" + op.type + ")";
    if (op.kind == as::op_kind::matmul) {
      if (ts[op.inputs[0]].shape.size() != 2 || ts[op.inputs[1]].shape.size() != 2)
        throw error(what + ": this example multiplies 2-D matrices only");
    } else if (op.kind == as::op_kind::unary) {
      if (!listed(op.type, unary_ops)) throw error(what + ": this example does not compute it");
    } else if (op.kind == as::op_kind::binary) {
      if (!listed(op.type, binary_ops)) throw error(what + ": this example does not compute it");
      if (ts[op.inputs[0]].shape != ts[op.inputs[1]].shape)
        throw error(what + ": this example computes binary ops of equal shapes only (no broadcasting)");
    } else {
      throw error(what + ": this example computes 2-D matmul and elementwise ops only");
    }
  }
}

using unary_fn = float (*)(float);
using binary_fn = float (*)(float, float);

/// The function of an elementwise unary op (checked by check_executable).
unary_fn unary(const std::string& t) {
  if (t == "relu") return [](float x) { return x > 0 ? x : 0.0f; };
  if (t == "gelu") return [](float x) { return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x))); };
  if (t == "silu") return [](float x) { return x / (1.0f + std::exp(-x)); };
  if (t == "tanh") return [](float x) { return std::tanh(x); };
  if (t == "sigmoid") return [](float x) { return 1.0f / (1.0f + std::exp(-x)); };
  if (t == "exp") return [](float x) { return std::exp(x); };
  if (t == "neg") return [](float x) { return -x; };
  if (t == "square") return [](float x) { return x * x; };
  if (t == "abs") return [](float x) { return std::fabs(x); };
  return [](float x) { return x; };  // identity
}

binary_fn binary(const std::string& t) {
  if (t == "add") return [](float x, float y) { return x + y; };
  if (t == "sub") return [](float x, float y) { return x - y; };
  if (t == "mul") return [](float x, float y) { return x * y; };
  if (t == "maximum") return [](float x, float y) { return std::max(x, y); };
  return [](float x, float y) { return std::min(x, y); };
}

/// Value of element `linear` (global row-major index) of tensor `t`: uniform in [-1, 1), scaled
/// by 1/sqrt(rows) for parameters so that products stay of order one.
float fill_value(int t, index_t linear, float scale) {
  std::uint64_t z = (static_cast<std::uint64_t>(t) + 1) * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(linear);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 40) / static_cast<double>(1 << 24) * 2 - 1) * scale;
}

float fill_scale(const as::tensor_desc& t) {
  return t.parameter ? 1.0f / std::sqrt(static_cast<float>(t.shape[0])) : 1.0f;
}

// ---- tiles -----------------------------------------------------------------------------------

/// Calls f(linear index in `shape`, position in `b`'s row-major order) for every element of box b.
template <class F>
void for_each_in(const mc::box& b, const std::vector<index_t>& shape, F&& f) {
  if (b.empty()) return;
  std::vector<index_t> idx(static_cast<std::size_t>(b.rank));
  for (int d = 0; d < b.rank; ++d) idx[d] = b[d].lo;
  for (index_t pos = 0;; ++pos) {
    index_t linear = 0;
    for (int d = 0; d < b.rank; ++d) linear = linear * shape[d] + idx[d];
    f(linear, pos);
    int d = b.rank - 1;
    while (d >= 0 && ++idx[d] == b[d].hi) idx[d] = b[d].lo, --d;
    if (d < 0) return;
  }
}

/// Copies `region` from `src` (dense over box `from`) to `dst` (dense over box `to`).
void copy_region(const float* src, const mc::box& from, float* dst, const mc::box& to, const mc::box& region) {
  if (region.empty()) return;
  std::vector<index_t> shape_from(from.rank), shape_to(to.rank);
  for (int d = 0; d < from.rank; ++d) shape_from[d] = from[d].size(), shape_to[d] = to[d].size();
  mc::box in_from = region, in_to = region;
  for (int d = 0; d < region.rank; ++d) {
    in_from[d] = {region[d].lo - from[d].lo, region[d].hi - from[d].lo};
    in_to[d] = {region[d].lo - to[d].lo, region[d].hi - to[d].lo};
  }
  std::vector<index_t> dst_pos;
  dst_pos.reserve(static_cast<std::size_t>(region.volume()));
  for_each_in(in_to, shape_to, [&](index_t linear, index_t) { dst_pos.push_back(linear); });
  for_each_in(in_from, shape_from, [&](index_t linear, index_t pos) { dst[dst_pos[pos]] = src[linear]; });
}

struct fixed_layout {
  mc::layout_value v;
  mc::layout_value value() const { return v; }
};

// ---- the mesh --------------------------------------------------------------------------------

struct mesh_info {
  mc::extents_value ext;
  std::vector<index_t> sizes;
  std::array<index_t, mc::max_rank> coord{};

  mc::layout_value layout(const mc::spec_value& s, const std::vector<index_t>& shape) const {
    mc::extents_value sh;
    sh.rank = static_cast<int>(shape.size());
    for (std::size_t d = 0; d < shape.size(); ++d) sh.values[d] = shape[d];
    mc::layout_value l{ext, s, sh};
    mc::validate(l);
    return l;
  }
  mc::box tile(const mc::spec_value& s, const std::vector<index_t>& shape, index_t device) const {
    return layout(s, shape).tile(device);
  }
  mc::box whole(const std::vector<index_t>& shape) const {
    mc::box b;
    b.rank = static_cast<int>(shape.size());
    for (std::size_t d = 0; d < shape.size(); ++d) b[static_cast<int>(d)] = {0, shape[d]};
    return b;
  }
  /// Devices that share this rank's coordinates off `axes`, by their row-major index over `axes`.
  std::vector<index_t> group(const std::vector<int>& axes) const {
    std::vector<index_t> members;
    index_t n = 1;
    for (int a : axes) n *= sizes[a];
    members.assign(static_cast<std::size_t>(n), -1);
    for (index_t d = 0; d < ext.product(); ++d) {
      const auto c = mc::mesh_coordinate(ext, d);
      bool same = true;
      index_t key = 0;
      for (int a = 0; a < ext.rank; ++a) {
        const bool in = std::find(axes.begin(), axes.end(), a) != axes.end();
        if (in) key = key * sizes[a] + c[a];
        else same &= c[a] == coord[a];
      }
      if (same) members[key] = d;
    }
    return members;
  }
};

/// Communicators of sets of mesh axes: ranks sharing their coordinates off the axes, ordered by
/// their row-major index over the axes (so that group rank j is group(axes)[j]).
class axis_comms {
 public:
  explicit axis_comms(const mesh_info& m) : mesh_(&m) {}
  axis_comms(const axis_comms&) = delete;
  axis_comms& operator=(const axis_comms&) = delete;
  ~axis_comms() {
    for (auto& [k, c] : comms_) MPI_Comm_free(&c);
  }
  /// Collective over MPI_COMM_WORLD the first time a set is asked for.
  MPI_Comm get(std::vector<int> axes) {
    std::sort(axes.begin(), axes.end());
    auto it = comms_.find(axes);
    if (it != comms_.end()) return it->second;
    int color = 0, key = 0;
    for (int a = 0; a < mesh_->ext.rank; ++a) {
      const bool in = std::find(axes.begin(), axes.end(), a) != axes.end();
      if (in) key = key * static_cast<int>(mesh_->sizes[a]) + static_cast<int>(mesh_->coord[a]);
      else color = color * static_cast<int>(mesh_->sizes[a]) + static_cast<int>(mesh_->coord[a]);
    }
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, color, key, &c);
    return comms_.emplace(std::move(axes), c).first->second;
  }

 private:
  const mesh_info* mesh_;
  std::map<std::vector<int>, MPI_Comm> comms_;
};

std::string axes_text(const std::vector<int>& axes) {
  std::string s;
  for (int a : axes) {
    if (!s.empty()) s.push_back(',');
    s.append(std::to_string(a));
  }
  return s;
}

// ---- calibration -----------------------------------------------------------------------------

struct calibration {
  std::string flops_how;
  std::vector<std::string> axis_how;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// FLOP/s of one rank running sgemm m x n x k while every rank does the same: the median call of
/// each rank (the steps it predicts are single calls too), the slowest rank's rate.
double measure_flops(index_t m, index_t n, index_t k) {
  std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n)),
      c(static_cast<std::size_t>(m * n));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = fill_value(1000, static_cast<index_t>(i), 1);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = fill_value(1001, static_cast<index_t>(i), 0.01f);
  sgemm(m, n, k, a.data(), b.data(), c.data());  // warm-up
  barrier();
  std::vector<double> calls;
  const double begin = now();
  do {
    const double t = now();
    sgemm(m, n, k, a.data(), b.data(), c.data());
    calls.push_back(now() - t);
  } while (calls.size() < 5 || now() - begin < 0.3);
  double rate = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / median(calls);
  allreduce(&rate, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD, "calibrating flops");
  return rate;
}

/// Seconds of one all-reduce of `count` floats on `comm` while every group of the axis does the
/// same: the median of `reps` calls on each rank, the slowest rank's.
double time_allreduce(MPI_Comm comm, index_t count, int reps) {
  std::vector<float> buf(static_cast<std::size_t>(count), 1.0f);
  allreduce(buf.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm, "calibrating an axis");  // warm-up
  barrier();
  std::vector<double> calls;
  for (int r = 0; r < reps; ++r) {
    const double begin = now();
    allreduce(buf.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm, "calibrating an axis");
    calls.push_back(now() - begin);
  }
  double t = median(calls);
  allreduce(&t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "calibrating an axis");
  return t;
}

as::mesh_model calibrate(const options& o, const as::graph& g, const mesh_info& mesh, axis_comms& comms,
                         calibration& how) {
  as::mesh_model m;
  m.sizes = mesh.sizes;
  const int rank = static_cast<int>(m.sizes.size());
  auto per_axis = [&](const std::string& flag, const std::vector<double>& v) {
    if (v.empty()) return v;
    if (v.size() == 1) return std::vector<double>(static_cast<std::size_t>(rank), v[0]);
    if (static_cast<int>(v.size()) != rank)
      throw error(flag + " has " + std::to_string(v.size()) + " values for a mesh of " + std::to_string(rank) +
                  " axes (give one, or one per axis)");
    return v;
  };
  const std::vector<double> gbps = per_axis("--axis-gbps", o.gbps), lat = per_axis("--axis-latency-us", o.latency_us);
  for (double x : gbps) as::checked_real(x, 0, true, "--axis-gbps");
  for (double x : lat) as::checked_real(x, 0, false, "--axis-latency-us");

  // Device flops: sgemm of the largest matmul with its largest dim split over every device.
  if (o.gflops > 0) {
    m.device_flops = o.gflops * 1e9;
    how.flops_how = "given";
  } else {
    index_t M = 256, N = 256, K = 256;
    double most = 0;
    for (const as::op_desc& op : g.ops())
      if (op.kind == as::op_kind::matmul && op.flops > most) {
        most = op.flops;
        M = g.tensors()[op.inputs[0]].shape[0], K = g.tensors()[op.inputs[0]].shape[1],
        N = g.tensors()[op.inputs[1]].shape[1];
      }
    index_t* largest = M >= N && M >= K ? &M : N >= K ? &N : &K;
    *largest = (*largest + mesh.ext.product() - 1) / mesh.ext.product();
    m.device_flops = measure_flops(M, N, K);
    how.flops_how = "median of timed sgemms " + std::to_string(M) + "x" + std::to_string(K) + " @ " + std::to_string(K) + "x" +
                    std::to_string(N) + ", every rank at once, slowest rank";
  }
  // Axes: all-reduces of 4 bytes (latency) and of the largest activation (bandwidth).
  index_t big = 0;
  for (const as::tensor_desc& t : g.tensors())
    if (!t.parameter) big = std::max(big, t.bytes);
  big = std::clamp<index_t>(big, 64 << 10, 16 << 20) / 4 * 4;
  for (int a = 0; a < rank; ++a) {
    const double n = static_cast<double>(m.sizes[a]);
    double bw = gbps.empty() ? 0 : gbps[a] * 1e9 / 8, l = lat.empty() ? -1 : lat[a] * 1e-6;
    std::string text;
    if (m.sizes[a] == 1) {
      if (bw <= 0) bw = 100e9 / 8;
      if (l < 0) l = 0;
      text = "size 1, nothing to measure";
    } else if (bw <= 0 || l < 0) {
      MPI_Comm c = comms.get({a});
      const double t_small = time_allreduce(c, 1, 200);
      const double t_big = time_allreduce(c, big / 4, 15);
      if (l < 0) l = t_small / (2 * (n - 1));
      if (bw <= 0) bw = 2 * (n - 1) / n * static_cast<double>(big) / std::max(t_big - 2 * (n - 1) * l, 1e-9);
      char line[200];
      std::snprintf(line, sizeof line, "median all-reduce of 4 bytes %.1f us, of %lld bytes %.1f us", t_small * 1e6,
                    static_cast<long long>(big), t_big * 1e6);
      text = line;
      if (!gbps.empty()) text += "; bandwidth given";
      if (!lat.empty()) text += "; latency given";
    } else {
      text = "given";
    }
    m.bandwidth.push_back(bw);
    m.latency.push_back(l);
    how.axis_how.push_back(text);
  }
  if (std::isfinite(o.memory_mib)) m.memory_bytes = o.memory_mib * 1048576.0;
  // Every rank computed the same reduced figures; make sure they are bit for bit rank 0's.
  broadcast(&m.device_flops, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, "sharing the model");
  broadcast(m.bandwidth.data(), rank, MPI_DOUBLE, 0, MPI_COMM_WORLD, "sharing the model");
  broadcast(m.latency.data(), rank, MPI_DOUBLE, 0, MPI_COMM_WORLD, "sharing the model");
  m.validate();
  return m;
}

/// The reshard options whose network is the one automatic sharding costs reshards on
/// (autoshard/reshard_cost.hpp's mesh_network): the last axis inside a host, one NIC per device
/// at the smallest bandwidth of the other axes, the largest latency.
mc::reshard_options reshard_options_for(const as::mesh_model& m) {
  mc::reshard_options o;
  o.devices = mc::device_map::same();
  o.devices_per_host = m.sizes.back();
  double nic = m.bandwidth.back(), latency = 0;
  for (int a = 0; a + 1 < m.rank(); ++a) nic = a == 0 ? m.bandwidth[a] : std::min(nic, m.bandwidth[a]);
  for (double l : m.latency) latency = std::max(latency, l);
  o.nic_gbps = nic * 8 / 1e9;
  o.intra_gbps = m.bandwidth.back() * 8 / 1e9;
  o.latency_us = latency * 1e6;
  o.nics_per_host = static_cast<int>(m.sizes.back());
  return o;
}

// ---- the run ---------------------------------------------------------------------------------

using resharder_t = mc::resharder<mc::greedy, mc::send_recv>;

class runner {
 public:
  runner(const options& o, const as::graph& g, const as::sharding_plan& p, const mesh_info& mesh, axis_comms& comms,
         const as::mesh_model& model)
      : g_(g), p_(p), mesh_(mesh), comms_(comms), steps_(as::execution_order(g, p.report)) {
    const auto& ts = g.tensors();
    // Inputs and parameters: this rank's tile in the tensor's spec, from global indices.
    for (std::size_t t = 0; t < ts.size(); ++t) {
      if (ts[t].producer >= 0) continue;
      const mc::spec_value& s = p.report.specs[t];
      const mc::box b = mesh.tile(s, ts[t].shape, world_rank);
      std::vector<float>& v = buffer(static_cast<int>(t), s);
      v.resize(static_cast<std::size_t>(b.volume()));
      const float scale = fill_scale(ts[t]);
      for_each_in(b, ts[t].shape, [&](index_t linear, index_t pos) { v[pos] = fill_value(static_cast<int>(t), linear, scale); });
    }
    if (o.corrupt && world_rank == world_size - 1)
      for (std::size_t t = 0; t < ts.size(); ++t)
        if (ts[t].parameter) {
          std::vector<float>& v = buffer(static_cast<int>(t), p.report.specs[t]);
          if (!v.empty()) v[0] += 1.0f;
          break;
        }
    // A resharder per reshard step (collective: every rank builds them in the same order), and
    // the communicators of every collective.
    mc::greedy solver;
    solver.search_limit_s = 0;
    const mc::reshard_options ro = reshard_options_for(model);
    resharders_.resize(p.report.reshards.size());
    for (const as::plan_step& s : steps_) {
      if (s.what == as::plan_step::kind::reshard) {
        const as::tensor_reshard& r = p.report.reshards[s.index];
        const auto& shape = ts[r.tensor].shape;
        resharders_[s.index] = std::make_unique<resharder_t>(
            MPI_COMM_WORLD, fixed_layout{mesh.layout(r.from, shape)}, fixed_layout{mesh.layout(r.to, shape)}, 4, ro,
            solver, mc::send_recv{});
      } else if (s.what == as::plan_step::kind::collective) {
        comms_.get(p.report.collectives[s.index].step.axes);
      }
    }
  }

  const std::vector<as::plan_step>& steps() const { return steps_; }
  const resharder_t* resharder_of(std::size_t reshard) const { return resharders_[reshard].get(); }

  /// One pass; with `per_step`, a barrier before each step and the step's local seconds recorded.
  void run(std::vector<double>* per_step) {
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      if (per_step) barrier();
      const double begin = per_step ? now() : 0;
      execute(steps_[i]);
      if (per_step) (*per_step)[i] = now() - begin;
    }
  }

  /// This rank's tile of tensor t in spec s (must have been made).
  const std::vector<float>& data(int t, const mc::spec_value& s) const {
    auto it = buffers_.find({t, s.to_string()});
    if (it == buffers_.end()) throw error("internal: tensor '" + g_.tensors()[t].name + "' was never made in " + s.to_string());
    return it->second;
  }

 private:
  std::vector<float>& buffer(int t, const mc::spec_value& s) { return buffers_[{t, s.to_string()}]; }

  void execute(const as::plan_step& s) {
    const auto& ts = g_.tensors();
    switch (s.what) {
      case as::plan_step::kind::reshard: {
        const as::tensor_reshard& r = p_.report.reshards[s.index];
        const std::vector<float>& in = data(r.tensor, r.from);
        std::vector<float>& out = buffer(r.tensor, r.to);
        out.resize(resharders_[s.index]->destination_elements());
        (*resharders_[s.index])(in, out);
        break;
      }
      case as::plan_step::kind::compute: {
        const as::op_desc& op = g_.ops()[s.op];
        const as::op_strategy& st = p_.op_strategies[s.op];
        const as::op_form f = as::form_of(g_, op);
        const mc::spec_value natural = as::detail::project(st.iteration, f.out_dims);
        const auto& out_shape = ts[op.output].shape;
        const mc::box ob = mesh_.tile(natural, out_shape, world_rank);
        std::vector<float>& out = buffer(op.output, natural);
        out.resize(static_cast<std::size_t>(ob.volume()));
        current_[op.output] = natural;
        if (op.kind == as::op_kind::matmul) {
          const auto &sa = ts[op.inputs[0]].shape, &sb = ts[op.inputs[1]].shape;
          const mc::box ab = mesh_.tile(st.inputs[0], sa, world_rank), bb = mesh_.tile(st.inputs[1], sb, world_rank);
          if (!(ab[0] == ob[0]) || !(bb[1] == ob[1]) || !(ab[1] == bb[0]))
            throw error("internal: op '" + op.name + "': tiles " + ab.to_string() + " @ " + bb.to_string() +
                        " do not make " + ob.to_string());
          sgemm(ob[0].size(), ob[1].size(), ab[1].size(), data(op.inputs[0], st.inputs[0]).data(),
                data(op.inputs[1], st.inputs[1]).data(), out.data());
        } else {
          for (std::size_t k = 0; k < op.inputs.size(); ++k)
            if (!(mesh_.tile(st.inputs[k], ts[op.inputs[k]].shape, world_rank) == ob))
              throw error("internal: op '" + op.name + "': an input tile differs from the output tile");
          const float* x = data(op.inputs[0], st.inputs[0]).data();
          if (op.kind == as::op_kind::unary) {
            const unary_fn fn = unary(op.type);
            for (std::size_t i = 0; i < out.size(); ++i) out[i] = fn(x[i]);
          } else {
            const binary_fn fn = binary(op.type);
            const float* y = data(op.inputs[1], st.inputs[1]).data();
            for (std::size_t i = 0; i < out.size(); ++i) out[i] = fn(x[i], y[i]);
          }
        }
        break;
      }
      case as::plan_step::kind::collective: {
        const as::op_collective& c = p_.report.collectives[s.index];
        const int t = g_.ops()[c.op].output;
        const auto& shape = ts[t].shape;
        MPI_Comm comm = comms_.get(c.step.axes);
        const mc::spec_value from = current_.at(t);
        if (c.step.kind == as::collective::all_reduce) {
          std::vector<float>& v = buffer(t, from);
          allreduce(v.data(), static_cast<int>(v.size()), MPI_FLOAT, MPI_SUM, comm, "an all-reduce");
        } else if (c.step.kind == as::collective::reduce_scatter) {
          // From the partial tile in `from` to this rank's tile in the op's output spec: pack the
          // group members' tiles one after another, reduce-scatter them.
          const mc::spec_value& to = p_.report.specs[t];
          const mc::box whole = mesh_.tile(from, shape, world_rank);
          const std::vector<index_t> members = mesh_.group(c.step.axes);
          std::vector<int> counts;
          std::vector<float>& send = scratch_;
          send.resize(static_cast<std::size_t>(whole.volume()));
          index_t offset = 0;
          const std::vector<float>& src = data(t, from);
          for (index_t d : members) {
            const mc::box part = mesh_.tile(to, shape, d);
            if (!whole.contains(part)) throw error("internal: a reduce-scatter part lies outside the partial tile");
            copy_region(src.data(), whole, send.data() + offset, part, part);
            counts.push_back(static_cast<int>(part.volume()));
            offset += part.volume();
          }
          std::vector<float>& out = buffer(t, to);
          out.resize(static_cast<std::size_t>(mesh_.tile(to, shape, world_rank).volume()));
          MPI_Request r;
          MPI_Ireduce_scatter(send.data(), out.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm, &r);
          wait(r, "a reduce-scatter");
          current_[t] = to;
        } else {
          throw error(std::string("internal: a forward ") + as::collective_name(c.step.kind) + " in the plan");
        }
        break;
      }
    }
  }

  const as::graph& g_;
  const as::sharding_plan& p_;
  const mesh_info& mesh_;
  axis_comms& comms_;
  std::vector<as::plan_step> steps_;
  std::vector<std::unique_ptr<resharder_t>> resharders_;
  std::map<std::pair<int, std::string>, std::vector<float>> buffers_;
  std::map<int, mc::spec_value> current_;
  std::vector<float> scratch_;
};

/// The graph's outputs computed in one process on whole tensors (rank 0 only).
std::vector<std::vector<float>> single_process(const as::graph& g) {
  const auto& ts = g.tensors();
  std::vector<std::vector<float>> v(ts.size());
  for (std::size_t t = 0; t < ts.size(); ++t) {
    if (ts[t].producer >= 0) continue;
    v[t].resize(static_cast<std::size_t>(ts[t].elements));
    const float scale = fill_scale(ts[t]);
    for (index_t i = 0; i < ts[t].elements; ++i) v[t][i] = fill_value(static_cast<int>(t), i, scale);
  }
  for (int o : g.order()) {
    const as::op_desc& op = g.ops()[o];
    auto& out = v[op.output];
    out.resize(static_cast<std::size_t>(ts[op.output].elements));
    const auto& x = v[op.inputs[0]];
    if (op.kind == as::op_kind::matmul) {
      const auto &sa = ts[op.inputs[0]].shape, &sb = ts[op.inputs[1]].shape;
      sgemm(sa[0], sb[1], sa[1], x.data(), v[op.inputs[1]].data(), out.data());
    } else if (op.kind == as::op_kind::unary) {
      const unary_fn fn = unary(op.type);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = fn(x[i]);
    } else {
      const binary_fn fn = binary(op.type);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = fn(x[i], v[op.inputs[1]][i]);
    }
  }
  std::vector<std::vector<float>> outs;
  for (const as::output_desc& o : g.outputs()) outs.push_back(std::move(v[o.tensor]));
  return outs;
}

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", s * 1e3);
  return b;
}

std::string step_text(const as::graph& g, const as::sharding_plan& p, const as::plan_step& s, const runner& run) {
  const auto& ts = g.tensors();
  char b[256];
  switch (s.what) {
    case as::plan_step::kind::reshard: {
      const as::tensor_reshard& r = p.report.reshards[s.index];
      std::snprintf(b, sizeof b, "reshard %s %s -> %s (%s; meshcast's schedule %s ms)", ts[r.tensor].name.c_str(),
                    r.from.to_string().c_str(), r.to.to_string().c_str(), as::reshard_kind_name(r.cost.kind),
                    ms(run.resharder_of(s.index)->schedule().makespan_s).c_str());
      break;
    }
    case as::plan_step::kind::compute: {
      const as::op_desc& op = g.ops()[s.op];
      const as::op_strategy& st = p.op_strategies[s.op];
      std::string split;
      for (std::size_t d = 0; d < st.iteration.size(); ++d)
        split += (d ? " " : "") + (st.iteration[d].empty() ? std::string("-") : "S" + axes_text(st.iteration[d]));
      std::snprintf(b, sizeof b, "compute %s (%s, iteration [%s])", op.name.c_str(), op.type.c_str(), split.c_str());
      break;
    }
    case as::plan_step::kind::collective: {
      const as::op_collective& c = p.report.collectives[s.index];
      std::snprintf(b, sizeof b, "%s of %s over axes [%s], %lld bytes", as::collective_name(c.step.kind),
                    ts[g.ops()[c.op].output].name.c_str(), axes_text(c.step.axes).c_str(),
                    static_cast<long long>(c.step.bytes));
      break;
    }
  }
  return b;
}

double predicted(const as::sharding_plan& p, const as::plan_step& s) {
  switch (s.what) {
    case as::plan_step::kind::reshard: return p.report.reshards[s.index].cost.seconds;
    case as::plan_step::kind::compute: return p.op_strategies[s.op].compute_s;
    case as::plan_step::kind::collective: return p.report.collectives[s.index].step.seconds;
  }
  return 0;
}

int execute_and_check(const options& o, const as::graph& g, const as::sharding_plan& plan, const mesh_info& mesh,
                      const as::mesh_model& model, const calibration& how, runner& run, const std::string& solver,
                      bool proven, double solve_s, double setup_s, const std::vector<std::string>& failed_expectations);
int execute_and_check_unguarded(const options& o, const as::graph& g, const as::sharding_plan& plan,
                                 const mesh_info& mesh, const as::mesh_model& model, const calibration& how,
                                 runner& run, const std::string& solver, bool proven, double solve_s, double setup_s,
                                 const std::vector<std::string>& failed_expectations);

int run_main(int argc, char** argv) {
  // 1. Arguments, graph, mesh (every rank alike; a fault on one is a fault on all).
  options o;
  as::graph g;
  mesh_info mesh;
  std::vector<std::string> fixed_texts;
  bool help = false;
  std::string problem;
  try {
    o = parse_options(argc, argv, help);
    if (!help) {
      g = o.graph_path.empty() ? make_mlp(o) : as::graph_from_json(mc::json::parse(read_file(o.graph_path, "graph file")));
      check_executable(g);
      const mc::dynamic_mesh dm = mc::parse_mesh(o.mesh_text.empty() ? std::to_string(world_size) : o.mesh_text);
      mesh.ext.rank = dm.rank();
      for (int a = 0; a < dm.rank(); ++a) mesh.ext.values[a] = dm.extent(a), mesh.sizes.push_back(dm.extent(a));
      if (mesh.ext.product() != world_size)
        throw error("--mesh " + mesh.ext.to_string() + " has " + std::to_string(mesh.ext.product()) +
                    " devices but there are " + std::to_string(world_size) + " ranks (rank r is device r)");
      if (mesh.ext.rank > as::max_mesh_axes) throw error("--mesh: at most " + std::to_string(as::max_mesh_axes) + " axes");
      mesh.coord = mc::mesh_coordinate(mesh.ext, world_rank);
      if (!o.specs_path.empty())
        fixed_texts = as::spec_texts_from_json(g, mc::json::parse(read_file(o.specs_path, "spec file")));
      for (const auto& [t, s] : o.expect)
        if (g.find_tensor(t) < 0) throw error("--expect-spec: tensor '" + t + "' is not in the graph");
    }
  } catch (const std::exception& e) {
    problem = e.what();
  }
  mc::agree_or_throw(MPI_COMM_WORLD, problem, 60);
  if (help) {
    if (world_rank == 0) usage(stdout);
    return 0;
  }
#if MESHCAST_HAS_OPENBLAS
  openblas_set_num_threads(o.blas_threads);
#endif

  // 2. The model, calibrated where not given.
  axis_comms comms(mesh);
  calibration how;
  as::mesh_model model;
  try {
    model = calibrate(o, g, mesh, comms, how);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  mc::agree_or_throw(MPI_COMM_WORLD, problem, 60);

  // 3. The plan: rank 0 solves (or every rank takes --specs); the specs are shared as text.
  as::sharding_plan plan;
  std::string solver = o.solver.empty() ?
#if MESHCAST_HAS_CBC
                                        "ilp"
#else
                                        "dp"
#endif
                                        : o.solver;
  std::string shared;
  const double solve_begin = now();
  try {
    if (fixed_texts.empty() && world_rank == 0) {
      as::sharding_plan solved;
      auto solve_with = [&](const std::string& name) {
        const bool known = as::visit_sharding_solver(
            name, [&](auto s) { solved = as::auto_shard(g, model, s, {.time_limit_s = o.time_limit_s}); });
        if (!known) throw error("unknown solver '" + name + "' (expected " + as::sharding_solver_names + ")");
      };
      if (!o.solver.empty() || solver == "ilp") {
        solve_with(solver);
      } else {
        // Without CBC: the exact dp where it applies (trees, no binding memory limit), else greedy.
        try {
          solve_with("dp");
        } catch (const error& e) {
          solver = "greedy (" + std::string(e.what()) + ")";
          solve_with("greedy");
        }
      }
      for (const mc::spec_value& s : solved.report.specs) shared += s.to_string() + ";";
      shared += solved.proven_optimal ? "1" : "0";
    }
  } catch (const std::exception& e) {
    problem = e.what();
  }
  mc::agree_or_throw(MPI_COMM_WORLD, problem, o.time_limit_s + 60);
  bool proven = false;
  if (fixed_texts.empty()) {
    long long n = static_cast<long long>(shared.size());
    broadcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD, "sharing the plan");
    shared.resize(static_cast<std::size_t>(n));
    broadcast(shared.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD, "sharing the plan");
    std::size_t pos = 0;
    for (std::size_t t = 0; t < g.tensors().size(); ++t) {
      const std::size_t end = shared.find(';', pos);
      fixed_texts.push_back(shared.substr(pos, end - pos));
      pos = end + 1;
    }
    proven = shared.substr(pos) == "1";
  }
  std::vector<std::string> failed_expectations;
  try {
    as::cost_model cm(g, model);
    plan = as::plan_of(cm, as::parse_assignment(cm, fixed_texts));
    for (const auto& [t, texts] : o.expect) {
      const int i = g.find_tensor(t);
      bool any = false;
      for (std::size_t pos = 0; pos <= texts.size();) {  // alternatives separated by '|'
        const std::size_t end = std::min(texts.find('|', pos), texts.size());
        const mc::spec_value want = as::canonical(
            as::detail::parse_spec_for(texts.substr(pos, end - pos), g.tensors()[i].shape.size(), "--expect-spec " + t),
            model);
        any |= want == plan.report.specs[i];
        pos = end + 1;
      }
      if (!any) failed_expectations.push_back(t + " is " + plan.report.specs[i].to_string() + ", expected " + texts);
    }
  } catch (const std::exception& e) {
    problem = e.what();
  }
  mc::agree_or_throw(MPI_COMM_WORLD, problem, 60);
  const double solve_s = now() - solve_begin;

  // 4. Set up (resharders, communicators; their faults are agreed on by every rank), warm up, time.
  const double setup_begin = now();
  runner run(o, g, plan, mesh, comms, model);
  const double setup_s = now() - setup_begin;
  return execute_and_check(o, g, plan, mesh, model, how, run, solver, proven, solve_s, setup_s, failed_expectations);
}

/// Steps 4 to 6; a fault here is one rank's alone (the others would wait for it): it aborts.
int execute_and_check(const options& o, const as::graph& g, const as::sharding_plan& plan, const mesh_info& mesh,
                      const as::mesh_model& model, const calibration& how, runner& run, const std::string& solver,
                      bool proven, double solve_s, double setup_s, const std::vector<std::string>& failed_expectations) {
  try {
    return execute_and_check_unguarded(o, g, plan, mesh, model, how, run, solver, proven, solve_s, setup_s,
                                       failed_expectations);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meshcast-autoshard-mlp-mpi: rank %d: error while running the plan: %s\n", world_rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  return 3;
}

int execute_and_check_unguarded(const options& o, const as::graph& g, const as::sharding_plan& plan,
                                 const mesh_info& mesh, const as::mesh_model& model, const calibration& how,
                                 runner& run, const std::string& solver, bool proven, double solve_s, double setup_s,
                                 const std::vector<std::string>& failed_expectations) {
  const std::size_t n = run.steps().size();
  run.run(nullptr);  // warm-up
  std::vector<std::vector<double>> step_times(n);
  std::vector<double> totals, whole;
  std::vector<double> local(n), worst(n);
  for (int r = 0; r < o.repeat; ++r) {
    run.run(&local);
    MPI_Reduce(local.data(), worst.data(), static_cast<int>(n), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) step_times[i].push_back(worst[i]), sum += worst[i];
    totals.push_back(sum);
  }
  for (int r = 0; r < o.repeat; ++r) {
    barrier();
    const double begin = now();
    run.run(nullptr);
    double t = now() - begin;
    MPI_Reduce(world_rank == 0 ? MPI_IN_PLACE : &t, &t, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    whole.push_back(t);
  }

  // 5. The check against one process.
  std::vector<std::vector<float>> reference;
  double reference_s = 0;
  if (world_rank == 0) {
    const double begin = now();
    reference = single_process(g);
    reference_s = now() - begin;
  }
  const auto& ts = g.tensors();
  double worst_error = 0, largest = 0;  // over every output
  bool finite = true;
  for (std::size_t k = 0; k < g.outputs().size(); ++k) {
    const as::output_desc& out = g.outputs()[k];
    const auto& shape = ts[out.tensor].shape;
    std::vector<float> ref = world_rank == 0 ? std::move(reference[k]) : std::vector<float>(static_cast<std::size_t>(ts[out.tensor].elements));
    for (std::size_t off = 0; off < ref.size(); off += 1 << 28)
      broadcast(ref.data() + off, static_cast<int>(std::min<std::size_t>(ref.size() - off, 1 << 28)), MPI_FLOAT, 0,
                MPI_COMM_WORLD, "sharing the reference");
    const mc::spec_value spec = plan.report.specs[out.tensor];
    const mc::spec_value final_spec = out.spec ? as::canonical(*out.spec, model) : spec;
    const std::vector<float>& mine = run.data(out.tensor, final_spec);
    const mc::box b = mesh.tile(final_spec, shape, world_rank);
    for (float x : ref) largest = std::max(largest, static_cast<double>(std::fabs(x)));
    for_each_in(b, shape, [&](index_t linear, index_t pos) {
      const double e = std::fabs(static_cast<double>(mine[pos]) - ref[linear]);
      if (!std::isfinite(mine[pos])) finite = false;
      worst_error = std::max(worst_error, e);
    });
  }
  allreduce(&worst_error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "comparing results");
  int all_finite = finite ? 1 : 0;
  allreduce(&all_finite, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, "comparing results");
  const double relative = worst_error / std::max(largest, 1e-30);
  const bool matches = all_finite && relative <= o.tolerance;

  // 6. Report (rank 0).
  if (world_rank == 0) {
    std::string graph_text = o.graph_path.empty()
                                 ? "MLP x[" + std::to_string(o.batch) + "," + std::to_string(o.hidden) + "] -> fc1 [" +
                                       std::to_string(o.hidden) + "," + std::to_string(o.ffn) + "] -> " + o.activation +
                                       " -> fc2 [" + std::to_string(o.ffn) + "," + std::to_string(o.hidden) + "], fp32"
                                 : o.graph_path;
    std::printf("meshcast-autoshard-mlp-mpi: %d ranks, mesh %s, %s\n", world_size, mesh.ext.to_string().c_str(),
                graph_text.c_str());
#if MESHCAST_HAS_OPENBLAS
    std::printf("matrix products: %s (%s), %d thread(s) per rank\n", blas_name(), openblas_get_config(), o.blas_threads);
#else
    std::printf("matrix products: %s\n", blas_name());
#endif
    std::printf("model: device %.2f GFLOP/s (%s)\n", model.device_flops / 1e9, how.flops_how.c_str());
    for (int a = 0; a < model.rank(); ++a)
      std::printf("       axis %d (%lld devices): %.3f GB/s, %.2f us (%s)\n", a, static_cast<long long>(model.sizes[a]),
                  model.bandwidth[a] / 1e9, model.latency[a] * 1e6, how.axis_how[a].c_str());
    if (std::isfinite(model.memory_bytes)) std::printf("       memory limit %.2f MiB per device\n", model.memory_bytes / 1048576);
    std::printf("plan: %s; predicted %s ms (compute %s ms); %.3f s to plan, %.3f s to set up the reshards\n",
                o.specs_path.empty() ? ("solver " + solver + (proven ? ", proven optimal" : ", not proven optimal")).c_str()
                                     : ("specs from " + o.specs_path).c_str(),
                ms(plan.report.objective_s).c_str(), ms(plan.report.compute_s).c_str(), solve_s, setup_s);
    std::printf("specs:");
    for (std::size_t t = 0; t < ts.size(); ++t)
      std::printf(" %s %s%s", ts[t].name.c_str(), plan.report.specs[t].to_string().c_str(), t + 1 < ts.size() ? "," : "\n");
    std::printf("steps (median of %d runs; each step between barriers, the slowest rank's time):\n", o.repeat);
    std::printf("  %-88s %12s %12s %8s\n", "step", "predicted ms", "measured ms", "ratio");
    double predicted_sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double pr = predicted(plan, run.steps()[i]), me = median(step_times[i]);
      predicted_sum += pr;
      char ratio[32] = "-";
      if (pr > 0) std::snprintf(ratio, sizeof ratio, "%.2f", me / pr);
      std::printf("  %-88s %12s %12s %8s\n", step_text(g, plan, run.steps()[i], run).c_str(), ms(pr).c_str(),
                  ms(me).c_str(), ratio);
    }
    const double total = median(totals), e2e = median(whole);
    std::printf("total: predicted %s ms, measured %s ms step by step (ratio %.2f), %s ms end to end without barriers "
                "(ratio %.2f)\n",
                ms(predicted_sum).c_str(), ms(total).c_str(), total / predicted_sum, ms(e2e).c_str(),
                e2e / predicted_sum);
    std::printf("check: %s the single-process result (%.3f s on rank 0): largest error %.3g, %.3g of the largest "
                "magnitude %.3g (tolerance %.3g)\n",
                matches ? "matches" : "DOES NOT MATCH", reference_s, worst_error, relative, largest, o.tolerance);
    for (const std::string& f : failed_expectations) std::printf("expectation failed: %s\n", f.c_str());
    std::fflush(stdout);
  }
  return matches && failed_expectations.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  int status = 0;
  try {
    status = run_main(argc, argv);
  } catch (const std::exception& e) {
    // Every fault that reaches here was agreed on by every rank (agree_or_throw, resharder).
    if (world_rank == 0) std::fprintf(stderr, "meshcast-autoshard-mlp-mpi: error: %s\n", e.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}

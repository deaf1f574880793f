// meshcast-autoshard-mlp-mpi (../autoshard_mlp_mpi.cpp), part: the mesh, its axes' communicators, and the calibrated cost model.
// Included once, by that program's one translation unit: its names stay in an unnamed namespace.
#pragma once

#include "graph.hpp"

namespace {

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
    barrier();  // bounded (a rank that never comes aborts the job): MPI_Comm_split has no deadline
    MPI_Comm_split(MPI_COMM_WORLD, color, key, &c);
    return comms_.emplace(std::move(axes), c).first->second;
  }

 private:
  const mesh_info* mesh_;
  std::map<std::vector<int>, MPI_Comm> comms_;
};

// ---- calibration -----------------------------------------------------------------------------

struct calibration {
  std::string flops_how;
  std::vector<std::string> axis_how;
};

/// Runs `make` (a step's buffers) on every rank and tells each whether all made theirs before the
/// collectives that use them: one rank out of memory alone stops every rank at once, where the
/// others waited in the next barrier until wait_limit_s.
template <class Make>
void make_on_every_rank(Make&& make, const char* what) {
  mc::agree_or_throw(MPI_COMM_WORLD, mc::detail::failure_of(make, what), 60);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// FLOP/s of one rank running sgemm m x n x k while every rank does the same: the median call of
/// each rank (the steps it predicts are single calls too), the slowest rank's rate.
double measure_flops(index_t m, index_t n, index_t k) {
  std::vector<float> a, b, c;
  make_on_every_rank([&] {
    a.resize(static_cast<std::size_t>(m * k)), b.resize(static_cast<std::size_t>(k * n)), c.resize(static_cast<std::size_t>(m * n));
  }, "calibrating flops");
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
  std::vector<float> buf;
  make_on_every_rank([&] { buf.assign(static_cast<std::size_t>(count), 1.0f); }, "calibrating an axis");
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
  for (double x : gbps) {
    as::checked_real(x, 0, true, "--axis-gbps");
    meshcast_cli::check_axis_gbps(x);
  }
  for (double x : lat) {
    as::checked_real(x, 0, false, "--axis-latency-us");
    meshcast_cli::check_axis_latency_us(x);
  }

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
      // The large all-reduce's time past its latency carries its bytes. Where the latency (given,
      // or measured on a noisy machine) leaves none of it, the bandwidth comes from the whole
      // time: a floor of 1 ns made it 262 TB/s against a measured 6 GB/s, used unsaid.
      const double bytes_s = t_big - 2 * (n - 1) * l;
      const bool latency_fits = bytes_s > 0.1 * t_big;
      if (bw <= 0) bw = 2 * (n - 1) / n * static_cast<double>(big) / (latency_fits ? bytes_s : t_big);
      char line[200];
      std::snprintf(line, sizeof line, "median all-reduce of 4 bytes %.1f us, of %lld bytes %.1f us", t_small * 1e6,
                    static_cast<long long>(big), t_big * 1e6);
      text = line;
      if (!gbps.empty()) text += "; bandwidth given";
      if (!lat.empty()) text += "; latency given";
      if (!latency_fits && gbps.empty()) text += "; the latency takes over 90% of it: bandwidth from the whole time";
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

}  // namespace

// weight_sync: a model's manifest moved by the ways RL and checkpoint frameworks do it, written with
// plain MPI, beside meshcast, on the same ranks and bytes. One way per run (so that each run's
// peak RSS is its own); every destination element checked (tensor k's elements hold their global
// index plus k, as meshcast-reshard --manifest fills them).
//
//   mpiexec -n D meshcast-bench-weight-sync --manifest FILE --way W [--repeat 3] [--nic-gbps G]
//
// Ways:
//   allgather   every destination device all-gathers each whole tensor (MPI_Allgatherv over the
//               tensor's source and destination devices, one replica of each tile contributing)
//               and keeps its tile (DTensor full_tensor, verl)
//   broadcast   one source device per tensor gathers it (MPI_Gatherv) and broadcasts it to every
//               destination device (MPI_Bcast; OpenRLHF, verl's rank-0 broadcast)
//   owner       an owner per tensor, round-robin over the source devices, gathers it and sends each
//               destination device its tile point to point (checkpoint-engine, NeMo-RL buckets)
//   serial      meshcast, one tensor at a time (a batch_resharder per tensor, built beforehand)
//   batch       meshcast, every tensor in one schedule, strategy auto
// Prints one JSON line on rank 0: way, seconds (best of --repeat, barrier to barrier),
// wrong_elements, peak_rss_bytes (max over ranks), bytes (the model's).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <meshcast/api/manifest.hpp>
#include <meshcast/mpi.hpp>

#include "flags.hpp"

#include "cli/end_job.hpp"
#include "cli/fill.hpp"
#include "cli/manifest_reshard.hpp"

using namespace meshcast;

namespace {
int rank_ = 0;

// A communicator over `members` (ascending world ranks), cached: MPI_Comm_create_group is collective
// over the members only.
MPI_Comm group_of(std::vector<int> members) {
  static std::map<std::vector<int>, MPI_Comm> cache;
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  if (std::find(members.begin(), members.end(), rank_) == members.end()) return MPI_COMM_NULL;
  auto [it, fresh] = cache.try_emplace(members, MPI_COMM_NULL);
  if (fresh) {
    MPI_Group world, sub;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, static_cast<int>(members.size()), members.data(), &sub);
    MPI_Comm_create_group(MPI_COMM_WORLD, sub, 7, &it->second);
    MPI_Group_free(&sub);
    MPI_Group_free(&world);
  }
  return it->second;
}

struct tensor_data {
  const plan* p;
  std::vector<std::byte> in, out, whole;
  std::size_t eb;
};

// One replica per distinct source tile: the first device (in mesh order) holding it.
std::vector<index_t> tile_owners(const plan& p) {
  std::vector<index_t> owners;
  for (index_t g = 0; g < p.src_groups.size(); ++g)
    if (!p.src_groups[g].empty()) owners.push_back(p.src_groups[g][0]);
  return owners;
}

void copy_tile(const box& whole, std::byte* full, const box& tile, std::byte* shard, std::size_t eb, bool into_full) {
  host_memory m;
  if (into_full) unpack(m, shard, whole, full, tile, eb);
  else pack(m, whole, full, tile, eb, shard);
}

// Gathers tensor `t` whole on `root` (a world rank) from one replica of each tile, over `comm`.
void gather_whole(tensor_data& t, int root, MPI_Comm comm) {
  const plan& p = *t.p;
  const auto owners = tile_owners(p);
  std::vector<int> members(owners.begin(), owners.end());
  members.push_back(root);
  MPI_Comm c = group_of(members);
  if (c == MPI_COMM_NULL) return;
  int me = 0, n = 0;
  MPI_Comm_rank(c, &me);
  MPI_Comm_size(c, &n);
  std::vector<int> ranks(static_cast<std::size_t>(n)), counts(static_cast<std::size_t>(n), 0), displs(static_cast<std::size_t>(n), 0);
  std::vector<int> world(static_cast<std::size_t>(n));
  MPI_Allgather(&rank_, 1, MPI_INT, world.data(), 1, MPI_INT, c);
  const bool mine = std::find(owners.begin(), owners.end(), rank_) != owners.end();
  int root_in_c = static_cast<int>(std::find(world.begin(), world.end(), root) - world.begin());
  const int bytes = mine ? static_cast<int>(t.in.size()) : 0;
  MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, root_in_c, c);
  std::vector<std::byte> packed;
  if (rank_ == root) {
    int at = 0;
    for (int r = 0; r < n; ++r) displs[static_cast<std::size_t>(r)] = at, at += counts[static_cast<std::size_t>(r)];
    packed.resize(static_cast<std::size_t>(at));
  }
  MPI_Gatherv(t.in.data(), bytes, MPI_BYTE, packed.data(), counts.data(), displs.data(), MPI_BYTE, root_in_c, c);
  if (rank_ == root) {
    t.whole.resize(static_cast<std::size_t>(p.tensor_bytes()));
    for (int r = 0; r < n; ++r)
      if (counts[static_cast<std::size_t>(r)] > 0)
        copy_tile(p.src.whole(), t.whole.data(), p.source_tile(world[static_cast<std::size_t>(r)]),
                  packed.data() + displs[static_cast<std::size_t>(r)], t.eb, true);
  }
  (void)comm;
}

void way_allgather(std::vector<tensor_data>& ts) {
  for (auto& t : ts) {
    const plan& p = *t.p;
    const auto owners = tile_owners(p);
    std::vector<int> members(owners.begin(), owners.end());
    members.insert(members.end(), p.dst_devices.begin(), p.dst_devices.end());
    MPI_Comm c = group_of(members);
    if (c == MPI_COMM_NULL) continue;
    int n = 0;
    MPI_Comm_size(c, &n);
    std::vector<int> world(static_cast<std::size_t>(n)), counts(static_cast<std::size_t>(n)), displs(static_cast<std::size_t>(n));
    MPI_Allgather(&rank_, 1, MPI_INT, world.data(), 1, MPI_INT, c);
    const bool mine = std::find(owners.begin(), owners.end(), rank_) != owners.end();
    const int bytes = mine ? static_cast<int>(t.in.size()) : 0;
    MPI_Allgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, c);
    int at = 0;
    for (int r = 0; r < n; ++r) displs[static_cast<std::size_t>(r)] = at, at += counts[static_cast<std::size_t>(r)];
    std::vector<std::byte> packed(static_cast<std::size_t>(at));
    MPI_Allgatherv(t.in.data(), bytes, MPI_BYTE, packed.data(), counts.data(), displs.data(), MPI_BYTE, c);
    if (t.out.empty()) continue;
    t.whole.resize(static_cast<std::size_t>(p.tensor_bytes()));
    for (int r = 0; r < n; ++r)
      if (counts[static_cast<std::size_t>(r)] > 0)
        copy_tile(p.src.whole(), t.whole.data(), p.source_tile(world[static_cast<std::size_t>(r)]),
                  packed.data() + displs[static_cast<std::size_t>(r)], t.eb, true);
    copy_tile(p.src.whole(), t.whole.data(), p.destination_tile(rank_), t.out.data(), t.eb, false);
  }
}

void way_broadcast(std::vector<tensor_data>& ts) {
  for (auto& t : ts) {
    const plan& p = *t.p;
    const int root = static_cast<int>(tile_owners(p).front());
    gather_whole(t, root, MPI_COMM_WORLD);
    std::vector<int> members(p.dst_devices.begin(), p.dst_devices.end());
    members.push_back(root);
    MPI_Comm c = group_of(members);
    if (c == MPI_COMM_NULL) continue;
    int n = 0;
    MPI_Comm_size(c, &n);
    std::vector<int> world(static_cast<std::size_t>(n));
    MPI_Allgather(&rank_, 1, MPI_INT, world.data(), 1, MPI_INT, c);
    const int root_in_c = static_cast<int>(std::find(world.begin(), world.end(), root) - world.begin());
    t.whole.resize(static_cast<std::size_t>(p.tensor_bytes()));
    MPI_Bcast(t.whole.data(), static_cast<int>(t.whole.size()), MPI_BYTE, root_in_c, c);
    if (!t.out.empty()) copy_tile(p.src.whole(), t.whole.data(), p.destination_tile(rank_), t.out.data(), t.eb, false);
  }
}

void way_owner(std::vector<tensor_data>& ts) {
  for (std::size_t k = 0; k < ts.size(); ++k) {
    tensor_data& t = ts[k];
    const plan& p = *t.p;
    const int owner = static_cast<int>(p.src_devices[k % p.src_devices.size()]);
    gather_whole(t, owner, MPI_COMM_WORLD);
    std::vector<MPI_Request> reqs;
    std::vector<std::vector<std::byte>> slices;
    if (rank_ == owner)
      for (index_t d : p.dst_devices) {
        const box tile = p.destination_tile(d);
        slices.emplace_back(static_cast<std::size_t>(tile.volume()) * t.eb);
        copy_tile(p.src.whole(), t.whole.data(), tile, slices.back().data(), t.eb, false);
        if (d == owner) continue;
        reqs.emplace_back();
        MPI_Isend(slices.back().data(), static_cast<int>(slices.back().size()), MPI_BYTE, static_cast<int>(d), static_cast<int>(k % 32768),
                  MPI_COMM_WORLD, &reqs.back());
      }
    const bool dst = std::find(p.dst_devices.begin(), p.dst_devices.end(), rank_) != p.dst_devices.end();
    if (dst && rank_ != owner) {
      reqs.emplace_back();
      MPI_Irecv(t.out.data(), static_cast<int>(t.out.size()), MPI_BYTE, owner, static_cast<int>(k % 32768), MPI_COMM_WORLD, &reqs.back());
    } else if (dst) {
      copy_tile(p.src.whole(), t.whole.data(), p.destination_tile(rank_), t.out.data(), t.eb, false);
    }
    MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
  }
}
}  // namespace

constexpr const char* usage =
    "usage: mpiexec -n D meshcast-bench-weight-sync --manifest FILE [--way allgather|broadcast|owner|serial|batch]\n"
    "         [--repeat 3] [--nic-gbps G] [--nic-efficiency F] [--latency-us U]   (model flags: ways serial and batch)\n";

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string path, way = "batch";
  int repeat = 3;
  double nic_gbps = 100, nic_efficiency = 1, latency_us = 10;
  try {  // every rank parses alike: a bad flag ends every rank with status 2, no abort
    const meshcast_bench::flags f(argc, argv, {"--manifest", "--way", "--repeat", "--nic-gbps", "--nic-efficiency", "--latency-us"});
    if (f.help()) {
      if (rank_ == 0) std::fputs(usage, stdout);
      MPI_Finalize();
      return 0;
    }
    path = f.text("--manifest", "");
    if (path.empty()) throw error("--manifest FILE is needed");
    way = f.word("--way", way, {"allgather", "broadcast", "owner", "serial", "batch"});
    repeat = static_cast<int>(f.count("--repeat", repeat, 1, 1 << 20));
    nic_gbps = f.real("--nic-gbps", nic_gbps, 8e-9, 8e6);
    nic_efficiency = f.real("--nic-efficiency", nic_efficiency, 1e-3, 1);
    latency_us = f.real("--latency-us", latency_us, 0, 3.6e9);
    // The model flags describe meshcast's network model; the plain-MPI ways have none to take them.
    if (way != "serial" && way != "batch")
      for (const char* model : {"--nic-gbps", "--nic-efficiency", "--latency-us"})
        if (f.has(model)) throw error(std::string(model) + " sets meshcast's model: way '" + way + "' has none (serial and batch do)");
  } catch (const std::exception& e) {
    if (rank_ == 0) std::fprintf(stderr, "meshcast-bench-weight-sync: %s\n%s", e.what(), usage);
    MPI_Finalize();
    return 2;
  }
  int status = 0;
  try {
    const manifest m = read_manifest(path);
    if (m.device_count != size) throw error("the manifest needs " + std::to_string(m.device_count) + " ranks");
    reshard_options o{.host_of = hosts_in_order(m.device_count, m.devices_per_host_or(0)),
                      .nic_gbps = nic_gbps,
                      .nic_efficiency = nic_efficiency,
                      .latency_us = latency_us,
                      .timeout_s = 600};
    const std::vector<plan> plans = make_plans(m.tensors, {}, m.device_count);
    // The plain-MPI ways gather a whole tensor with int counts (MPI's): a tensor past 2^31 - 1
    // bytes failed in a vector's size, or would wrap to a small count (found by review).
    if (way != "batch" && way != "serial")
      for (std::size_t k = 0; k < plans.size(); ++k)
        if (plans[k].tensor_bytes() > std::numeric_limits<int>::max())
          throw error("tensor " + std::to_string(k) + " has " + std::to_string(plans[k].tensor_bytes()) +
                      " bytes; the way '" + way + "' counts a tensor's bytes in an int (MPI's count), at most " +
                      std::to_string(std::numeric_limits<int>::max()) + ": use --way batch or serial");
    std::vector<tensor_data> ts;
    for (std::size_t k = 0; k < plans.size(); ++k) {
      const plan& p = plans[k];
      tensor_data t{&p, {}, {}, {}, static_cast<std::size_t>(p.element_bytes)};
      const bool src = std::find(p.src_devices.begin(), p.src_devices.end(), rank_) != p.src_devices.end();
      const bool dst = std::find(p.dst_devices.begin(), p.dst_devices.end(), rank_) != p.dst_devices.end();
      if (src) t.in.resize(static_cast<std::size_t>(p.source_tile(rank_).volume()) * t.eb);
      if (dst) t.out.resize(static_cast<std::size_t>(p.destination_tile(rank_).volume()) * t.eb);
      if (!t.in.empty()) cli::reshard_detail::fill_offset(p.source_tile(rank_), p.src.shape, t.eb, k, t.in);
      ts.push_back(std::move(t));
    }
    std::optional<batch_resharder<greedy, auto_strategy>> batch;
    std::vector<std::unique_ptr<batch_resharder<greedy, auto_strategy>>> serial;
    if (way == "batch") batch.emplace(MPI_COMM_WORLD, m.tensors, o);
    if (way == "serial")
      for (const auto& t : m.tensors) serial.push_back(std::make_unique<batch_resharder<greedy, auto_strategy>>(
                                          MPI_COMM_WORLD, std::vector<tensor_layouts>{t}, o));
    auto spans = [&](std::size_t from, std::size_t to) {
      std::vector<std::span<const std::byte>> in;
      std::vector<std::span<std::byte>> out;
      for (std::size_t k = from; k < to; ++k) in.emplace_back(ts[k].in), out.emplace_back(ts[k].out);
      return std::pair{in, out};
    };
    double best = 0;
    // Barriers that poll and sleep (bounded_barrier) rather than MPI_Barrier, which spins: with
    // more ranks than cores (the emulated cluster runs 16 on 2), ranks spinning in a barrier take
    // the cores from those still moving bytes (measured: 0.72 s instead of 0.63 s for the batch).
    for (int r = 0; r < repeat; ++r) {
      bounded_barrier(MPI_COMM_WORLD, 600);
      const auto t0 = std::chrono::steady_clock::now();
      if (way == "allgather") way_allgather(ts);
      else if (way == "broadcast") way_broadcast(ts);
      else if (way == "owner") way_owner(ts);
      else if (way == "serial")
        for (std::size_t k = 0; k < ts.size(); ++k) {
          auto [in, out] = spans(k, k + 1);
          (*serial[k])(in, out);
        }
      else if (way == "batch") {
        auto [in, out] = spans(0, ts.size());
        (*batch)(in, out);
      } else
        throw error("unknown way '" + way + "' (allgather, broadcast, owner, serial or batch)");
      bounded_barrier(MPI_COMM_WORLD, 600);
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = r == 0 ? t : std::min(best, t);
      for (auto& t : ts) std::vector<std::byte>().swap(t.whole);  // frameworks free the whole tensor too
    }
    std::uint64_t wrong = 0;
    for (std::size_t k = 0; k < ts.size(); ++k)
      if (!ts[k].out.empty())
        wrong += cli::reshard_detail::count_wrong_offset(plans[k].destination_tile(rank_), plans[k].src.shape, ts[k].eb, k, ts[k].out);
    std::uint64_t all_wrong = 0, rss = cli::reshard_detail::peak_rss_bytes(), max_rss = 0;
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rss, &max_rss, 1, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    index_t bytes = 0;
    for (const plan& p : plans) bytes += p.tensor_bytes();
    // meshcast's own ways: the prediction of the schedules that ran (serial: their sum).
    double predicted = 0;
    if (batch) predicted = batch->schedule().makespan_s;
    for (const auto& one : serial) predicted += one->schedule().makespan_s;
    if (rank_ == 0) {
      std::printf("{\"way\":\"%s\",\"seconds\":%.6f,\"wrong_elements\":%llu,\"peak_rss_bytes\":%llu,\"bytes\":%lld,\"ranks\":%d,"
                  "\"way_predicted_s\":%.6f}\n",
                  way.c_str(), best, static_cast<unsigned long long>(all_wrong), static_cast<unsigned long long>(max_rss),
                  static_cast<long long>(bytes), size, predicted);
      std::fflush(stdout);
    }
    status = all_wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meshcast-bench-weight-sync (rank %d): error: %s\n", rank_, e.what());
    meshcast::cli::end_job(2);
  }
  MPI_Finalize();
  return status;
}

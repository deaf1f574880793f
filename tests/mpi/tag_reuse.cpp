// Tags repeat: transfer i's messages carry tag i % 32768 (transfer_tags), so a batch of more than
// 32768 transfers sends several messages with one tag between one pair of ranks. MPI matches them
// in posting order, so each side must post them in schedule order: the concurrent executor never
// posts a step before an earlier waiting step of its tag (a forward waits for its inputs), the
// ordered one takes its steps in order. This test makes such a batch (thousands of small tensors
// in place, S0 -> R; their shard lengths differ from tensor to tensor, so a message matched to
// the wrong receive is a truncation error or wrong data) and checks every element in both modes,
// with point-to-point only and with forwards inside hosts (send_recv_allgather, 2 devices a host).
// Buckets are off (reshard_options::buckets), so that each tensor's messages stay messages of their own.
// Run with an even number of ranks (2, 4).
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include <meshcast/mpi.hpp>

#include "rank_checks.hpp"

using namespace meshcast;
using namespace meshcast_test;

namespace {

// Tensor k: a vector of size * (1 + k % 7) elements, element i holding k * 1000 + i.
index_t length(std::size_t k) { return static_cast<index_t>(size) * static_cast<index_t>(1 + k % 7); }
std::int32_t value(std::size_t k, index_t i) { return static_cast<std::int32_t>(k * 1000 + static_cast<std::size_t>(i)); }

template <class Strategy>
void check(std::size_t tensors, execution mode, index_t devices_per_host, const std::string& name) {
  std::vector<tensor_layouts> batch;
  for (std::size_t k = 0; k < tensors; ++k) {
    const dynamic_layout src(parse_mesh(std::to_string(size)), dynamic_spec("S0"), dynamic_shape{length(k)});
    const dynamic_layout dst(parse_mesh(std::to_string(size)), dynamic_spec("R"), dynamic_shape{length(k)});
    batch.push_back({src.value(), dst.value(), sizeof(std::int32_t)});
  }
  try {
    const double t0 = MPI_Wtime();
    batch_resharder<greedy, Strategy> r(MPI_COMM_WORLD, batch,
                                        {.devices = device_map::same(), .devices_per_host = devices_per_host, .mode = mode,
                                         .time_limit_s = 5, .timeout_s = 300, .buckets = false});
    const std::size_t transfers = r.schedule().transfers.size();
    expect(transfers > 32768, name + ": only " + std::to_string(transfers) + " transfers: tags do not repeat");
    std::vector<std::vector<std::int32_t>> in(tensors), out(tensors);
    std::vector<std::span<const std::byte>> ins;
    std::vector<std::span<std::byte>> outs;
    for (std::size_t k = 0; k < tensors; ++k) {
      const box t = batch[k].src.tile(rank);
      for (index_t i = t.dims[0].lo; i < t.dims[0].hi; ++i) in[k].push_back(value(k, i));
      out[k].assign(r.destination_elements(k), -1);
      ins.push_back(std::as_bytes(std::span<const std::int32_t>(in[k])));
      outs.push_back(std::as_writable_bytes(std::span<std::int32_t>(out[k])));
    }
    const double t1 = MPI_Wtime();
    for (int rep = 0; rep < 2; ++rep) {
      r(ins, outs);
      std::size_t wrong = 0;
      for (std::size_t k = 0; k < tensors; ++k)
        for (index_t i = 0; i < length(k); ++i) wrong += out[k][static_cast<std::size_t>(i)] != value(k, i);
      expect(wrong == 0, name + ": " + std::to_string(wrong) + " wrong elements in run " + std::to_string(rep));
      for (auto& o : out) std::fill(o.begin(), o.end(), -1);
    }
    if (rank == 0)
      std::printf("%s: %zu tensors, %zu transfers: built in %.2f s, 2 runs in %.2f s\n", name.c_str(), tensors, transfers, t1 - t0,
                  MPI_Wtime() - t1);
  } catch (const error& e) {
    expect(false, name + ": " + e.what());
  }
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size % 2 != 0) {
    if (rank == 0) std::fprintf(stderr, "run with an even number of ranks\n");
    MPI_Finalize();
    return 2;
  }
  // S0 -> R in place moves each shard to every other device and copies it locally: size * size
  // transfers a tensor with send_recv; enough tensors for 33,000 or more.
  const std::size_t per_tensor = static_cast<std::size_t>(size) * static_cast<std::size_t>(size);
  const std::size_t tensors = 33000 / per_tensor + 1;
  for (execution mode : {execution::concurrent, execution::ordered}) {
    const std::string m = mode == execution::concurrent ? "concurrent" : "ordered";
    check<send_recv>(tensors, mode, 1, "send_recv " + m);
    // Across hosts once, then forwarded inside the host: forwards wait for their inputs.
    if (size >= 4) check<send_recv_allgather>(tensors, mode, 2, "send_recv_allgather " + m);
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf(total == 0 ? "tag reuse: every element right\n" : "tag reuse: %d failure(s)\n", total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}

// One device waiting twice for the same earlier transfer's NIC token (found by review): in ordered
// mode a device that holds both directions of its host's NIC in one transfer hands each direction
// to the next transfer on it; when both next transfers are one device's, that device waited for two
// tokens and the earlier device, counting one, sent one. Valid input then timed out on some ranks
// while the others returned success. Run at 8 ranks (the one call) and 6 (a batch); every element
// is checked.
#include <mpi.h>

#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include <meshcast/mpi.hpp>

#include "rank_checks.hpp"

using namespace meshcast;
using namespace meshcast_test;

namespace {
// Element (i, j) of a rows x cols tensor holds i * cols + j.
std::vector<int> numbered(const box& tile, index_t cols) {
  std::vector<int> v;
  for (index_t i = tile[0].lo; i < tile[0].hi; ++i)
    for (index_t j = tile[1].lo; j < tile[1].hi; ++j) v.push_back(static_cast<int>(i * cols + j));
  return v;
}

// Tensor k's 1-D tile as bytes: element i holds 100 * k + i in its first byte, the others 0, so a
// region that lands in the wrong place or the wrong tensor reads wrong.
std::vector<std::byte> numbered_bytes(const box& tile, std::size_t element_bytes, std::size_t k) {
  std::vector<std::byte> v;
  for (index_t i = tile[0].lo; i < tile[0].hi; ++i)
    for (std::size_t b = 0; b < element_bytes; ++b) v.push_back(static_cast<std::byte>(b == 0 ? 100 * k + static_cast<std::size_t>(i) : 0));
  return v;
}

// 5x9 from mesh 2x4 "S10,R" to mesh 2x2x2 "S1,R" on the same 8 devices, 3 per host: the default
// policies (greedy under auto) chain a row through device 3, which then holds host 1's egress and
// ingress before device 4 takes both.
void one_call_on_8() {
  const dynamic_layout a(dynamic_mesh{2, 4}, dynamic_spec("S10,R"), dynamic_shape{5, 9});
  const dynamic_layout b(dynamic_mesh{2, 2, 2}, dynamic_spec("S1,R"), dynamic_shape{5, 9});
  reshard_options o{.devices = device_map::same(), .devices_per_host = 3};
  o.timeout_s = 20;
  const box dt = b.tile(rank);
  const std::vector<int> in = numbered(a.tile(rank), 9), expected = numbered(dt, 9);
  std::vector<int> out(expected.size(), -1);
  try {
    reshard(MPI_COMM_WORLD, a, b, std::span<const int>(in), std::span<int>(out), o);
    expect(out == expected, "the one call delivered wrong elements");
  } catch (const std::exception& e) {
    expect(false, std::string("the one call failed: ") + e.what());
  }
}

// Two tensors in one schedule on 6 devices, 2 per host, every transfer a broadcast: the same
// shape of links through the chains.
void batch_on_6() {
  std::vector<tensor_layouts> ts(2);
  ts[0] = {dynamic_layout(dynamic_mesh{6}, dynamic_spec("S0"), dynamic_shape{9}).value(),
           dynamic_layout(dynamic_mesh{3, 2}, dynamic_spec("S1"), dynamic_shape{9}).value(), 4};
  ts[1] = {dynamic_layout(dynamic_mesh{6}, dynamic_spec("R"), dynamic_shape{7}).value(),
           dynamic_layout(dynamic_mesh{2, 1, 3}, dynamic_spec("S21"), dynamic_shape{7}).value(), 8};
  reshard_options o{.devices = device_map::same(), .devices_per_host = 2};
  o.buckets = false;
  o.split_replicas = true;
  o.timeout_s = 20;
  for (std::size_t first : {0, 1}) {
    // The first tensor alone, then both.
    std::vector<tensor_layouts> chosen(ts.begin(), ts.begin() + static_cast<std::ptrdiff_t>(first + 1));
    try {
      batch_resharder<greedy, broadcast> r(MPI_COMM_WORLD, chosen, o);
      std::vector<std::vector<std::byte>> in(chosen.size()), out(chosen.size());
      std::vector<std::span<const std::byte>> ins;
      std::vector<std::span<std::byte>> outs;
      for (std::size_t k = 0; k < chosen.size(); ++k) {  // the same devices: device d is rank d on both meshes
        in[k] = numbered_bytes(chosen[k].src.tile(rank), chosen[k].element_bytes, k);
        expect(in[k].size() == r.source_elements(k) * chosen[k].element_bytes, "a source tile is not the resharder's");
        out[k].assign(r.destination_elements(k) * chosen[k].element_bytes, std::byte{0xff});
        ins.push_back(in[k]);
        outs.push_back(out[k]);
      }
      r(ins, outs);
      for (std::size_t k = 0; k < chosen.size(); ++k)
        expect(out[k] == numbered_bytes(chosen[k].dst.tile(rank), chosen[k].element_bytes, k), "the batch delivered wrong elements");
    } catch (const std::exception& e) {
      expect(false, std::string("the batch failed: ") + e.what());
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size == 8) one_call_on_8();
  else if (size == 6) batch_on_6();
  else expect(false, "run at 6 or 8 ranks");
  return finish("shared tokens", "every device got every token it waited for");
}

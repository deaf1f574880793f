// A bucket runs as the model times it (schedule/bundle_messages.hpp): over a transport with eager
// messages, the ordered executor waits for the receiver's acknowledgement after a step whose
// smallest message goes eagerly, and the model must call that bucket eager. Two tensors from
// rank 0 to rank 1 (one host each), bucketed into one message, eager limit 4 KiB; rank 1's
// acknowledgements recorded. A bucket of 1 KiB and 16 KiB sent in place (a message per piece) was
// modelled by its 17 KiB total, rendezvous, while it ran acknowledged.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <meshcast/mpi.hpp>

#include "rank_checks.hpp"
#include "wrapped_mpi_backend.hpp"

using namespace meshcast;
using namespace meshcast_test;

namespace {
constexpr std::size_t eager_limit = 4096;

class recording_backend : public wrapped_mpi_backend {
 public:
  recording_backend(MPI_Comm comm, std::shared_ptr<std::vector<int>> acknowledged)
      : wrapped_mpi_backend(mpi_backend(comm, 60, chain_chunk_bytes, eager_limit)), acknowledged_(std::move(acknowledged)) {}
  request send(const std::byte* data, std::size_t n, index_t peer, int tag) {
    if (tag / transfer_tags == static_cast<int>(message_kind::acknowledgement)) acknowledged_->push_back(tag % transfer_tags);
    return inner_.send(data, n, peer, tag);
  }

 private:
  std::shared_ptr<std::vector<int>> acknowledged_;
};
static_assert(backend<recording_backend>);

struct bucket_case {
  const char* name;
  index_t first_rows, second_rows;  // of 64 int32 columns (256 bytes a row)
  const char* first_destination;    // "R,R": the whole tensor to rank 1, in place; "R,S0": a strided half
  bool eager;                       // what the model must say, and the executor do
};
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    expect(size == 2, "the test runs on 2 ranks");
    const auto net = std::make_shared<const network>(
        network::uniform({0, 1}, network::gbit_per_s(10), 100e9, 10e-6, 1).with_eager_bytes(eager_limit));
    for (const bucket_case& c : {bucket_case{"1 KiB + 1 KiB in place", 4, 4, "R,R", true},
                                 bucket_case{"1 KiB + 16 KiB in place", 4, 64, "R,R", true},
                                 bucket_case{"8 KiB + 16 KiB in place", 32, 64, "R,R", false},
                                 bucket_case{"512 B strided + 16 KiB, packed", 4, 64, "R,S0", false}}) {
      const std::string what = std::string(c.name) + ": ";
      std::vector<plan> plans;
      const bool split = std::string(c.first_destination) == "R,S0";
      plans.push_back(make_plan(dynamic_layout(dynamic_mesh{1}, dynamic_spec("R,R"), dynamic_shape{c.first_rows, 64}),
                                dynamic_layout(dynamic_mesh{split ? 2 : 1}, dynamic_spec(c.first_destination),
                                               dynamic_shape{c.first_rows, 64}),
                                {.element_bytes = 4, .devices = device_map::listed(split ? std::vector<index_t>{0, 1}
                                                                                        : std::vector<index_t>{1}),
                                 .device_count = 2}));
      plans.push_back(make_plan(dynamic_layout(dynamic_mesh{1}, dynamic_spec("R,R"), dynamic_shape{c.second_rows, 64}),
                                dynamic_layout(dynamic_mesh{1}, dynamic_spec("R,R"), dynamic_shape{c.second_rows, 64}),
                                {.element_bytes = 4, .devices = device_map::listed({1}), .device_count = 2}));
      std::vector<std::shared_ptr<const plan>> shared;
      for (const plan& p : plans) shared.push_back(std::make_shared<const plan>(p));
      greedy g;
      g.search_limit_s = 0;  // the same schedule on every rank
      const schedule whole = solve_batch(shared, net, send_recv{}, g, {.mode = execution::ordered, .bucket_bytes = 0});
      const schedule s = bucketed(whole, *net, std::size_t{1} << 20, shared);
      std::size_t bucket = s.transfers.size();
      for (std::size_t i = 0; i < s.transfers.size(); ++i)
        if (!s.transfers[i].parts.empty()) bucket = i;
      expect(bucket < s.transfers.size(), what + "no bucket");
      if (bucket == s.transfers.size()) continue;
      expect(s.model[bucket].eager == c.eager, what + "the model calls the bucket " + (s.model[bucket].eager ? "eager" : "rendezvous"));

      auto acknowledged = std::make_shared<std::vector<int>>();
      executor<recording_backend> ex(recording_backend(MPI_COMM_WORLD, acknowledged), plans, s);
      std::vector<std::vector<std::int32_t>> in(2), out(2);
      for (std::size_t k = 0; k < 2; ++k) {
        const std::size_t n = static_cast<std::size_t>(k == 0 ? c.first_rows : c.second_rows) * 64;
        if (rank == 0) {
          in[k].resize(n);
          for (std::size_t i = 0; i < n; ++i) in[k][i] = static_cast<std::int32_t>(k * 1000003 + i * 7 + 3);
        }
        const std::size_t mine = static_cast<std::size_t>(plans[k].destination_tile(rank).volume());
        out[k].assign(plans[k].destination_tile(rank).empty() ? 0 : mine, -1);
      }
      std::vector<std::span<const std::byte>> sources;
      std::vector<std::span<std::byte>> destinations;
      for (std::size_t k = 0; k < 2; ++k) {
        sources.push_back(std::as_bytes(std::span(in[k])));
        destinations.push_back(std::as_writable_bytes(std::span(out[k])));
      }
      ex.run(sources, destinations);
      if (rank == 1) {
        for (std::size_t k = 0; k < 2; ++k) {
          const box tile = plans[k].destination_tile(1);
          std::size_t at = 0, wrong = 0;
          for (index_t r = tile[0].lo; r < tile[0].hi; ++r)
            for (index_t col = tile[1].lo; col < tile[1].hi; ++col, ++at)
              wrong += out[k][at] != static_cast<std::int32_t>(k * 1000003 + static_cast<std::size_t>(r * 64 + col) * 7 + 3);
          expect(wrong == 0, what + "tensor " + std::to_string(k) + ": " + std::to_string(wrong) + " wrong elements");
        }
        const bool acked = std::find(acknowledged->begin(), acknowledged->end(),
                                     static_cast<int>(bucket % transfer_tags)) != acknowledged->end();
        expect(acked == s.model[bucket].eager, what + "the executor " + (acked ? "acknowledged" : "did not acknowledge") +
                                                   " the bucket the model calls " +
                                                   (s.model[bucket].eager ? "eager" : "rendezvous"));
      }
    }
  } catch (const std::exception& e) {
    expect(false, std::string("threw: ") + e.what());
  }
  return finish("bundle messages", "every bucket runs as the model times it");
}

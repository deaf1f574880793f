// Chains cut as the schedule says (issue 20, point 4): the model chooses each chain's piece size
// from the message, the chain's length and its slowest link (chain_piece_bytes), the schedule
// carries it (transfer::piece_bytes), the executor hands it to the backend and the MPI backend
// cuts the message into exactly those pieces. 4 MiB replicated from rank 0 to ranks 1-3, one rank
// per host, over three networks; every element checked.
#include <mpi.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <meshcast/mpi.hpp>

#include "rank_checks.hpp"
#include "wrapped_mpi_backend.hpp"

using namespace meshcast;
using namespace meshcast_test;

namespace {
// What the executor asked of the chains, and what the MPI backend made of it.
struct chain_record {
  std::vector<std::size_t> pieces_asked, pieces_cut;
};

class recording_backend : public wrapped_mpi_backend {
 public:
  recording_backend(MPI_Comm comm, std::shared_ptr<chain_record> record)
      : wrapped_mpi_backend(mpi_backend(comm, 60)), record_(std::move(record)) {}
  request chain(std::byte* data, std::size_t n, group& g, int tag, std::size_t piece) {
    request r = inner_.chain(data, n, g, tag, piece);
    record_->pieces_asked.push_back(piece);
    record_->pieces_cut.push_back(inner_.chain_pieces(r));
    return r;
  }

 private:
  std::shared_ptr<chain_record> record_;
};
static_assert(backend<recording_backend>);
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    expect(size == 4, "the test runs on 4 ranks");
    const dynamic_layout src(dynamic_mesh{1}, dynamic_spec("R,R"), dynamic_shape{1024, 1024});
    const dynamic_layout dst(dynamic_mesh{3}, dynamic_spec("R,R"), dynamic_shape{1024, 1024});
    const plan p = make_plan(src, dst, {.element_bytes = 4, .devices = device_map::listed({1, 2, 3}), .device_count = 4});
    std::vector<std::int32_t> in(rank == 0 ? 1024 * 1024 : 0), out(rank == 0 ? 0 : 1024 * 1024, -1);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::int32_t>(i * 7 + 3);
    struct link {
      double gbps, latency_s;
      std::size_t piece;  // what the rule gives for 4 MiB down a chain of 4 devices
    };
    // 400 Gbit/s, 10 us: a piece crosses the link in at least one latency (500 kB); 1 Gbit/s: a
    // 24th of the message (8 per hop); 0.2 Gbit/s, 100 us: the same (2.5 kB is below 16 KiB).
    for (const link& l : {link{400, 10e-6, 500000}, link{1, 10e-6, 174763}, link{0.2, 100e-6, 174763}}) {
      const std::string what = std::to_string(l.gbps) + " Gbit/s: ";
      const network net = network::uniform({0, 1, 2, 3}, network::gbit_per_s(l.gbps), 100e9, l.latency_s, 1);
      greedy g;
      g.search_limit_s = 0;  // the same schedule on every rank
      const schedule s = solve(make_instance(p, net, broadcast{}), g);
      expect(s.transfers.size() == 1 && s.transfers[0].kind == transfer_kind::chain, what + "not one chain");
      const index_t piece = s.transfers[0].piece_bytes;
      expect(piece == static_cast<index_t>(l.piece), what + "the schedule's piece is " + std::to_string(piece));
      expect(static_cast<std::size_t>(piece) == chain_piece_bytes(std::size_t{4} << 20, 4, net.egress_bps(0), l.latency_s),
             what + "the schedule's piece is not chain_piece_bytes'");
      auto record = std::make_shared<chain_record>();
      executor<recording_backend> ex(recording_backend(MPI_COMM_WORLD, record), p, s);
      std::fill(out.begin(), out.end(), -1);
      ex.run(std::as_bytes(std::span(in)), std::as_writable_bytes(std::span(out)));
      if (rank != 0)
        for (std::size_t i = 0; i < out.size(); ++i)
          if (out[i] != static_cast<std::int32_t>(i * 7 + 3)) {
            expect(false, what + "element " + std::to_string(i) + " is wrong");
            break;
          }
      const std::size_t expected_pieces = ((std::size_t{4} << 20) + static_cast<std::size_t>(piece) - 1) / static_cast<std::size_t>(piece);
      expect(record->pieces_asked == std::vector<std::size_t>{static_cast<std::size_t>(piece)},
             what + "the executor did not pass the schedule's piece on");
      expect(record->pieces_cut == std::vector<std::size_t>{expected_pieces},
             what + "the backend cut " + (record->pieces_cut.empty() ? std::string("nothing") : std::to_string(record->pieces_cut[0])) +
                 " pieces, not " + std::to_string(expected_pieces));
    }
  } catch (const std::exception& e) {
    expect(false, std::string("threw: ") + e.what());
  }
  return finish("chain pieces", "as the schedule says");
}

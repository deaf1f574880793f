// Misuse of the MPI executor is a meshcast::error on every rank, never an MPI abort or a hang.
// Run with 4 ranks.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>
#include <meshcast/mpi.hpp>
#include <meshcast/exec/backend/mpi.hpp>
#if __has_include(<meshcast/api/mpi/channel.hpp>)  // the layered tree; single_include/'s mpi.hpp holds it
#include <meshcast/api/mpi/channel.hpp>  // in compiled mode too, for a channel of the test's own
#endif

#include "wrapped_mpi_backend.hpp"

using namespace meshcast;

// MPI's profiling interface: this program's MPI_Comm_free counts its calls and frees through
// PMPI_Comm_free, so the test sees whether a resharder freed its communicator (header-only and
// compiled mode alike: libmeshcast is static, its calls resolve here).
namespace {
int comm_frees = 0;
}
extern "C" int MPI_Comm_free(MPI_Comm* comm) {
  ++comm_frees;
  return PMPI_Comm_free(comm);
}

namespace {
int failures = 0;
void expect_error(const char* what, auto&& f, const char* needle) {
  try {
    f();
    std::fprintf(stderr, "%s: no error\n", what);
    ++failures;
  } catch (const error& e) {
    if (std::string(e.what()).find(needle) == std::string::npos) {
      std::fprintf(stderr, "%s: unexpected message: %s\n", what, e.what());
      ++failures;
    }
  }
}

// Wraps the MPI backend; on device 1, the first wait or test after `fail_once` is set throws, as
// a transport error inside a run would.
bool fail_once = false;
class failing_backend : public wrapped_mpi_backend {
 public:
  failing_backend(MPI_Comm comm, double timeout_s) : wrapped_mpi_backend(mpi_backend(comm, timeout_s)) {}
  void wait(request& r) {
    injected();
    inner_.wait(r);
  }
  bool test(request& r) {
    injected();
    return inner_.test(r);
  }

 private:
  void injected() {
    if (fail_once && inner_.device() == 1) {
      fail_once = false;
      throw error("device 1: an injected transport failure");
    }
  }
};
struct failing_channel : detail::mpi_channel {
  using backend_type = failing_backend;
  failing_backend make_backend() const { return failing_backend(comm, timeout_s); }
};
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // A plan of 8 devices on a 4-rank communicator (was "Invalid rank" inside MPI).
  plan eight = make_plan(dynamic_layout(parse_mesh("4"), dynamic_spec("S0"), dynamic_shape{16}),
                         dynamic_layout(parse_mesh("4"), dynamic_spec("R"), dynamic_shape{16}));
  schedule s8 = solve(make_instance(eight, network::alpa_testbed(default_hosts(8, 4, 4)), send_recv{}), greedy{});
  expect_error("8-device plan on 4 ranks", [&] { executor<mpi_backend> e(mpi_backend(MPI_COMM_WORLD, 5), eight, s8); },
               "communicator has 4 ranks");
  // Buffers smaller than the tiles.
  plan four = make_plan(dynamic_layout(parse_mesh("4"), dynamic_spec("S0"), dynamic_shape{16}),
                        dynamic_layout(parse_mesh("4"), dynamic_spec("R"), dynamic_shape{16}), {.devices = device_map::same()});
  schedule s4 = solve(make_instance(four, network::alpa_testbed(default_hosts(4, 4, 2)), send_recv{}), greedy{});
  executor<mpi_backend> e(mpi_backend(MPI_COMM_WORLD, 5), four, s4);
  std::vector<std::byte> small(4), out(e.destination_bytes());
  expect_error("short source buffer", [&] { e.run(small, out); }, "smaller than its tiles");
  // Made with connect_later: no run before connect(), connect() once, then it runs.
  {
    executor<mpi_backend> later(mpi_backend(MPI_COMM_WORLD, 5), four, s4, 0, connect_later);
    std::vector<std::byte> in(later.source_bytes()), got(later.destination_bytes());
    expect_error("a run before connect()", [&] { later.run(in, got); }, "run before connect()");
    later.connect();
    expect_error("connect() twice", [&] { later.connect(); }, "connected already");
    later.run(in, got);
  }
  // A schedule made for another plan: ops that name devices the plan does not have.
  expect_error("a schedule from another plan", [&] { executor<mpi_backend> x(mpi_backend(MPI_COMM_WORLD, 5), four, s8); },
               "another plan");
  // A message past MPI's int count (3 GiB of bytes, no staging cap): refused when the executor is
  // built, on every rank alike (it failed mid-run on the message's two ranks, the others timed
  // out). No buffer of that size is ever made.
  plan big = make_plan(dynamic_layout(parse_mesh("1"), dynamic_spec("R"), dynamic_shape{index_t{3} << 30}),
                       dynamic_layout(parse_mesh("1"), dynamic_spec("R"), dynamic_shape{index_t{3} << 30}));
  schedule sbig = solve(make_instance(big, network::alpa_testbed(default_hosts(2, 1, 1)), send_recv{}), greedy{});
  expect_error("a 3 GiB message", [&] { executor<mpi_backend> x(mpi_backend(MPI_COMM_WORLD, 5), big, sbig); },
               "this transport's messages carry");
  expect_error("a 3 GiB message in the one call's resharder", [&] {
    const dynamic_layout half(dynamic_mesh{size / 2}, dynamic_spec("R"), dynamic_shape{index_t{3} << 30});
    resharder<> r(MPI_COMM_WORLD, half, half, 1, reshard_options{.timeout_s = 20, .max_staging_bytes = 0});
  }, "staging cap");
  // The timeout itself is checked.
  expect_error("a NaN timeout", [&] { mpi_backend b(MPI_COMM_WORLD, std::numeric_limits<double>::quiet_NaN()); }, "timeout");
  // A barrier among members names the member that did not come, within its deadline; the same
  // barrier guards make_group's MPI_Comm_create_group. Rank 2 comes late: it finds the tokens of
  // 0 and 1 and its own match their abandoned receives, so nothing is left pending.
  {
    MPI_Comm own = bounded_dup(MPI_COMM_WORLD, 30);
    const std::vector<int> three{0, 1, 2};
    if (rank < 2) {
      expect_error("a barrier with member 2 absent", [&] { bounded_barrier(own, three, 2, 901, "the test's barrier"); },
                   "2 did not reach the test's barrier within 2 s");
      mpi_backend b(own, 2);
      const std::vector<index_t> group_of_three{0, 1, 2};
      expect_error("make_group with member 2 absent", [&] { b.make_group(group_of_three, 902); },
                   "2 did not reach the setup of a broadcast group");
    }
    bounded_barrier(MPI_COMM_WORLD, 30);  // 0 and 1 have given up
    if (rank == 2) {
      bounded_barrier(own, three, 30, 901);  // late
      bounded_barrier(own, three, 30, 902);  // make_group's tokens, late
    }
    // Timeout 0 waits without bound, as mpi_backend does; 1 and 3 meet.
    const std::vector<int> odd{1, 3};
    if (rank % 2 == 1) bounded_barrier(own, odd, 0, 903);
    expect_error("a negative barrier timeout", [&] { bounded_barrier(own, three, -1, 904); }, "timeout");
    bounded_barrier(own, 30);
    MPI_Comm_free(&own);
  }
  // A run that fails leaves nothing that writes into the destination later. Rank 0 comes late:
  // ranks 1-3 time out waiting for its piece, refill their destinations with a sentinel, and after
  // rank 0 has run (its messages reach them), the sentinel must be intact and the late message
  // must still be unreceived on the communicator (its receive was withdrawn, not left to land).
  {
    MPI_Comm own = bounded_dup(MPI_COMM_WORLD, 30);
    plan gather = make_plan(dynamic_layout(parse_mesh("4"), dynamic_spec("S0"), dynamic_shape{64}),
                            dynamic_layout(parse_mesh("4"), dynamic_spec("R"), dynamic_shape{64}),
                            {.element_bytes = 4, .devices = device_map::same()});
    schedule sg = solve(make_instance(gather, network::alpa_testbed(default_hosts(4, 4, 2)), send_recv{},
                                      {.mode = execution::concurrent}),
                        greedy{});
    std::vector<std::byte> in(256, std::byte{1}), out(256, std::byte{0});
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::byte>(rank * 16 + static_cast<int>(i % 16));
    if (rank != 0) {
      executor<mpi_backend> e(mpi_backend(own, 2), gather, sg);
      expect_error("a run with device 0 late", [&] { e.run(in, out); }, "waiting on device(s) 0");  // 0 comes first in the list
      expect_error("a second run after a failed one", [&] { e.run(in, out); }, "make a new executor");
      std::fill(out.begin(), out.end(), std::byte{0x5a});
    }
    bounded_barrier(MPI_COMM_WORLD, 30);  // 1-3 gave up
    if (rank == 0) {
      executor<mpi_backend> e(mpi_backend(own, 30), gather, sg);
      e.run(in, out);  // its pieces go out; the others' are already here
    }
    bounded_barrier(MPI_COMM_WORLD, 30);
    if (rank != 0) {
      // Progress, then look: rank 0's message must be waiting unreceived, the sentinel untouched.
      int found = 0;
      MPI_Status st;
      const detail::deadline stop(10);
      while (!found && !stop.expired()) MPI_Iprobe(0, MPI_ANY_TAG, own, &found, &st);
      if (!found) std::fprintf(stderr, "rank %d: rank 0's late message never arrived\n", rank), ++failures;
      if (found) {
        int n = 0;
        MPI_Get_count(&st, MPI_BYTE, &n);
        std::vector<std::byte> drain(static_cast<std::size_t>(n));
        MPI_Recv(drain.data(), n, MPI_BYTE, 0, st.MPI_TAG, own, MPI_STATUS_IGNORE);
      }
      for (std::byte b : out)
        if (b != std::byte{0x5a}) {
          std::fprintf(stderr, "rank %d: a failed run's receive wrote into the destination later\n", rank);
          ++failures;
          break;
        }
    }
    bounded_barrier(MPI_COMM_WORLD, 30);
    MPI_Comm_free(&own);
  }
  // The front end after a run failed on one rank: the next run fails on every rank alike, at
  // the agreement, instead of the others waiting out their timeout for that rank.
  {
    MPI_Comm own = bounded_dup(MPI_COMM_WORLD, 30);
    std::vector<tensor_layouts> t{{dynamic_layout(parse_mesh("4"), dynamic_spec("S0"), dynamic_shape{64}).value(),
                                   dynamic_layout(parse_mesh("4"), dynamic_spec("R"), dynamic_shape{64}).value(), 4}};
    detail::front_end<failing_channel> fe(failing_channel{{own, 2, 0}}, t,
                                          reshard_options{.devices = device_map::same(), .timeout_s = 2},
                                          detail::erase_policies<greedy, auto_strategy>());
    std::vector<std::byte> in(64), out(256);
    const std::span<const std::byte> from(in);
    const std::span<std::byte> to(out);
    const auto run = [&] {
      fe.run(std::span<const std::span<const std::byte>>(&from, 1), std::span<const std::span<std::byte>>(&to, 1), {});
    };
    run();  // a good run first
    fail_once = true;
    if (rank == 1) expect_error("a run with an injected failure", run, "an injected transport failure");
    else {
      try {
        run();  // the others may finish (device 1's sends went out) or time out waiting for it
      } catch (const error&) {
      }
    }
    bounded_barrier(MPI_COMM_WORLD, 30);  // the others have finished or timed out
    expect_error("the front end's next run", run, "an earlier run failed here");
    bounded_barrier(MPI_COMM_WORLD, 30);
    // `own` is not freed: the failed run's late messages may still come, and MPI would hand its
    // context to the next communicator, whose receives would take them (as batch_core keeps its own).
  }
  // MPI_COMM_NULL and a root outside the communicator are meshcast errors before MPI sees them
  // (MPI's own handler ended the job).
  {
    const dynamic_layout s0(parse_mesh("4"), dynamic_spec("S0"), dynamic_shape{64}), r(parse_mesh("4"), dynamic_spec("R"),
                                                                                       dynamic_shape{64});
    const reshard_options same{.devices = device_map::same(), .timeout_s = 20};
    expect_error("a resharder on MPI_COMM_NULL", [&] { resharder<> x(MPI_COMM_NULL, s0, r, 4, same); },
                 "the communicator is MPI_COMM_NULL");
    expect_error("mpi_backend on MPI_COMM_NULL", [&] { mpi_backend b(MPI_COMM_NULL, 5); }, "the communicator is MPI_COMM_NULL");
    expect_error("discover_hosts on MPI_COMM_NULL", [&] { discover_hosts(MPI_COMM_NULL, 5); }, "MPI_COMM_NULL");
    expect_error("agree_or_throw on MPI_COMM_NULL", [&] { agree_or_throw(MPI_COMM_NULL, "", 5); }, "MPI_COMM_NULL");
    for (int root : {-1, -7, size}) {
      schedule c = s4;
      expect_error("share_schedule with a root outside the communicator",
                   [&] { share_schedule(MPI_COMM_WORLD, four, c, root, 5); },
                   ("root " + std::to_string(root) + " is not a rank of the communicator (0..3)").c_str());
    }
    // A moved-from resharder is an error, not a null dereference; a tensor index past the batch too.
    std::vector<float> in(16, static_cast<float>(rank)), out(64);
    resharder<> a(MPI_COMM_WORLD, s0, r, 4, same);
    resharder<> b(std::move(a));
    expect_error("a moved-from resharder's call", [&] { a(in, out); }, "was moved from");
    expect_error("a moved-from resharder's plan", [&] { (void)a.plan(); }, "was moved from");
    b(in, out);  // the one moved to works
    for (int k = 0; k < 64; ++k)
      if (out[static_cast<std::size_t>(k)] != static_cast<float>(k / 16)) {
        std::fprintf(stderr, "rank %d: the moved-to resharder left element %d at %g\n", rank, k, out[static_cast<std::size_t>(k)]);
        ++failures;
        break;
      }
    batch_resharder<> one(MPI_COMM_WORLD, {{s0.value(), r.value(), 4}}, same);
    expect_error("source_elements(1) of a batch of one", [&] { (void)one.source_elements(1); },
                 "tensor 1 asked of a resharder of 1 tensors");
    expect_error("destination_elements(9) of a batch of one", [&] { (void)one.destination_elements(9); }, "tensor 9");
    batch_resharder<> two(MPI_COMM_WORLD, {{r.value(), s0.value(), 4}}, same);
    two = std::move(one);
    expect_error("a moved-from batch_resharder's size", [&] { (void)one.size(); }, "was moved from");
    if (two.source_elements(0) != 16)  // now the S0 -> R batch
      std::fprintf(stderr, "rank %d: a move-assigned batch has %zu source elements\n", rank, two.source_elements(0)), ++failures;
    // A destination that shares memory with a source is refused on every rank before anything
    // moves (it resharded silently wrong); so by the executor itself.
    resharder<> ident(MPI_COMM_WORLD, s0, s0, 4, same);
    std::vector<float> both(16);
    expect_error("a destination that is the source", [&] { ident(both, both); }, "shares memory with the source shard");
    executor<mpi_backend> e4(mpi_backend(MPI_COMM_WORLD, 5), four, s4);
    std::vector<std::byte> buffer(e4.source_bytes() + e4.destination_bytes());
    expect_error("an executor's destination inside its source", [&] {
      e4.run(std::span<const std::byte>(buffer), std::span<std::byte>(buffer).subspan(e4.source_bytes() / 2, e4.destination_bytes()));
    }, "the destination shard shares memory with the source shard");
  }
  // A resharder whose run failed keeps its communicator: MPI gives a freed one's context to the
  // next, and the dead run's late messages matched the new resharder's receives (it read their
  // data, silently). Rank 0 comes late; the others time out agreeing; rank 0's run then sends
  // to ranks that gave up. A new resharder must receive this run's data.
  {
    const dynamic_layout s0(parse_mesh("4"), dynamic_spec("S0"), dynamic_shape{64}), r(parse_mesh("4"), dynamic_spec("R"),
                                                                                       dynamic_shape{64});
    // Whether the destruction frees the communicator is counted through MPI_Comm_free above: the
    // data check below alone passes without the kept communicator (the dead run's kept requests
    // already hold it), the count does not.
    std::vector<float> stale(16, -7.0f), out(64);
    {
      std::optional<resharder<>> dead(std::in_place, MPI_COMM_WORLD, s0, r, 4,
                                      reshard_options{.devices = device_map::same(), .timeout_s = 2});
      if (rank != 0) expect_error("a run with rank 0 late", [&] { (*dead)(stale, out); }, "no answer from the other ranks");
      bounded_barrier(MPI_COMM_WORLD, 30);
      if (rank == 0) expect_error("the late rank's run", [&] { (*dead)(stale, out); }, "no progress for 2 s");
      bounded_barrier(MPI_COMM_WORLD, 30);
      const int before = comm_frees;
      dead.reset();
      if (comm_frees != before)
        std::fprintf(stderr, "rank %d: a resharder whose run failed freed its communicator (%d MPI_Comm_free calls)\n", rank,
                     comm_frees - before),
            ++failures;
    }
    std::vector<float> in(16, static_cast<float>(rank));
    std::optional<resharder<>> next(std::in_place, MPI_COMM_WORLD, s0, r, 4,
                                    reshard_options{.devices = device_map::same(), .timeout_s = 20});
    (*next)(in, out);
    for (int k = 0; k < 64; ++k)
      if (out[static_cast<std::size_t>(k)] != static_cast<float>(k / 16)) {
        std::fprintf(stderr, "rank %d: a new resharder read element %d as %g (a dead run's message)\n", rank, k,
                     out[static_cast<std::size_t>(k)]);
        ++failures;
        break;
      }
    // A healthy resharder frees its own (the count above is live, not a check that cannot fail).
    const int before = comm_frees;
    next.reset();
    if (comm_frees == before)
      std::fprintf(stderr, "rank %d: a healthy resharder did not free its communicator\n", rank), ++failures;
  }
  // Everyone still agrees at the end (bounded): no rank was left behind.
  const bool all = all_ok(MPI_COMM_WORLD, failures == 0, 30, "collecting results");
  if (rank == 0) std::printf("mpi misuse: %s\n", all ? "all checks passed" : "FAILED");
  MPI_Finalize();
  return all ? 0 : 1;
}

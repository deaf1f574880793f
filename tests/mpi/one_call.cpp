// The one-call API (<meshcast/mpi.hpp>): meshcast::reshard and meshcast::resharder on static,
// mixed and dynamic layouts, in place and across meshes, every element checked; and every misuse
// (communicator size, shard sizes, element size, ranks that disagree) a meshcast::error on every
// rank. Run with an even number of ranks (2, 4, 6).
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <meshcast/mpi.hpp>
#include <meshcast/meshcast.hpp>  // a solver of the test's own (policies_impl.hpp), also in compiled mode
#include <meshcast/exec/backend/mpi_bounded.hpp>

#include <thread>

#include "cli/fill.hpp"

#include "rank_checks.hpp"

using namespace meshcast;
using namespace meshcast_test;

namespace {

// The shard of `l` on device `device` filled with each element's global row-major index.
template <class T>
std::vector<T> shard(const layout_value& l, const std::vector<index_t>& ids, index_t device) {
  box t;
  t.rank = l.shape.rank;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == device) t = l.tile(static_cast<index_t>(i));
  std::vector<T> v;
  cli::for_each_tile_element(t, l.shape, sizeof(T), [&](std::size_t, std::uint64_t linear) { v.push_back(static_cast<T>(linear)); });
  return v;
}

std::vector<index_t> iota(index_t from, index_t n) {
  std::vector<index_t> v;
  for (index_t i = 0; i < n; ++i) v.push_back(from + i);
  return v;
}

template <class T, class Src, class Dst>
void check_reshard(const Src& src, const Dst& dst, reshard_options o, const std::string& name) {
  const layout_value s = src.value(), d = dst.value();
  const index_t n = s.device_count();
  const auto dst_ids = o.devices.how == device_map::kind::same ? iota(0, n) : iota(n, d.device_count());
  const auto in = shard<T>(s, iota(0, n), rank);
  std::vector<T> out(shard<T>(d, dst_ids, rank).size(), T(-1));
  try {
    reshard(MPI_COMM_WORLD, src, dst, std::span<const T>(in), std::span<T>(out), o);
    expect(out == shard<T>(d, dst_ids, rank), name + ": wrong elements");
  } catch (const error& e) {
    expect(false, name + ": " + e.what());
  }
}

// Greedy after 5 s of "search": a solver within an 8 s time limit that outlasts a 4 s timeout
// (margins wide enough for ranks oversubscribed under sanitizers).
struct slow_greedy {
  static constexpr std::string_view name = "slow_greedy";
  const char* supports(const instance& in) const { return greedy{}.supports(in); }
  solver_result solve(const instance& in, const solver_options& o) const {
    std::this_thread::sleep_for(std::chrono::seconds(5));
    return greedy{}.solve(in, o);
  }
};

template <class F>
void expect_error_everywhere(F&& f, const std::string& needle, const std::string& name) {
  std::string message;
  try {
    f();
  } catch (const error& e) {
    message = e.what();
  }
  expect(!message.empty(), name + ": no error");
  expect(message.find(needle) != std::string::npos, name + ": message '" + message + "' lacks '" + needle + "'");
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const index_t half = size / 2;
  const reshard_options in_place{.devices = device_map::same(), .timeout_s = 30};
  const reshard_options across{.timeout_s = 30};
  // In place on all ranks: static shapes, mixed mesh, dynamic layouts; float, double, int64.
  check_reshard<float>(layout(mesh<dyn>{size}, spec<S<0>, R>{}, shape<37, 11>{}), layout(mesh<dyn>{size}, spec<R, S<0>>{}, shape<37, 11>{}),
                       in_place, "in place, mixed");
  check_reshard<double>(dynamic_layout(dynamic_mesh{half, 2}, dynamic_spec("S0,S1"), dynamic_shape{13, 7}),
                        dynamic_layout(dynamic_mesh{half, 2}, dynamic_spec("S1,S0"), dynamic_shape{13, 7}), in_place,
                        "in place, dynamic 2-d");
  // Across two meshes of half the ranks each (disjoint devices, the default).
  check_reshard<std::int64_t>(dynamic_layout(dynamic_mesh{half}, dynamic_spec("R,S0"), dynamic_shape{9, 10}),
                              dynamic_layout(dynamic_mesh{half}, dynamic_spec("S0,R"), dynamic_shape{9, 10}), across,
                              "across meshes");
  for (execution m : {execution::ordered, execution::concurrent}) {
    reshard_options o = in_place;
    o.mode = m;
    check_reshard<float>(dynamic_layout(dynamic_mesh{size}, dynamic_spec("R"), dynamic_shape{100}),
                         dynamic_layout(dynamic_mesh{size}, dynamic_spec("S0"), dynamic_shape{100}), o,
                         std::string("replicated to sharded, ") + std::string(to_string(m)));
  }
  // A resharder kept for several steps.
  {
    dynamic_layout a(dynamic_mesh{size}, dynamic_spec("S0,R"), dynamic_shape{20, 4}),
        b(dynamic_mesh{size}, dynamic_spec("R,S0"), dynamic_shape{20, 4});
    resharder<> r(MPI_COMM_WORLD, a, b, sizeof(float), in_place);
    const auto in = shard<float>(a.value(), iota(0, size), rank);
    std::vector<float> out(r.destination_elements());
    for (int step = 0; step < 3; ++step) {
      r(in, out);
      expect(out == shard<float>(b.value(), iota(0, size), rank), "resharder: wrong elements");
    }
    expect(r.schedule().transfers.size() > 0 || size == 1, "resharder: empty schedule");
  }
  // A batch of three tensors of different layouts and element types, in one schedule.
  {
    dynamic_layout a1(dynamic_mesh{size}, dynamic_spec("S0,R"), dynamic_shape{17, 5}), b1(dynamic_mesh{size}, dynamic_spec("R,S0"), dynamic_shape{17, 5});
    dynamic_layout a2(dynamic_mesh{half, 2}, dynamic_spec("R,S01"), dynamic_shape{3, 40}), b2(dynamic_mesh{half, 2}, dynamic_spec("S1,S0"), dynamic_shape{3, 40});
    dynamic_layout a3(dynamic_mesh{size}, dynamic_spec("R"), dynamic_shape{9}), b3(dynamic_mesh{size}, dynamic_spec("S0"), dynamic_shape{9});
    const auto ids = iota(0, size);
    const auto in1 = shard<float>(a1.value(), ids, rank);
    const auto in2 = shard<double>(a2.value(), ids, rank);
    const auto in3 = shard<std::int64_t>(a3.value(), ids, rank);
    std::vector<float> out1(shard<float>(b1.value(), ids, rank).size());
    std::vector<double> out2(shard<double>(b2.value(), ids, rank).size());
    std::vector<std::int64_t> out3(shard<std::int64_t>(b3.value(), ids, rank).size());
    for (execution m : {execution::ordered, execution::concurrent}) {
      reshard_options o = in_place;
      o.mode = m;
      try {
        reshard(MPI_COMM_WORLD, batch().add(a1, b1, in1, out1).add(a2, b2, in2, out2).add(a3, b3, in3, out3), o);
        expect(out1 == shard<float>(b1.value(), ids, rank) && out2 == shard<double>(b2.value(), ids, rank) &&
                   out3 == shard<std::int64_t>(b3.value(), ids, rank),
               "batch: wrong elements");
      } catch (const error& e) {
        expect(false, std::string("batch: ") + e.what());
      }
    }
    std::vector<float> short1(rank == 0 ? out1.size() + 1 : out1.size());  // one element too many on rank 0
    expect_error_everywhere([&] { reshard(MPI_COMM_WORLD, batch().add(a1, b1, in1, short1).add(a3, b3, in3, out3), in_place); },
                            "of tensor 0", "batch shard size");
  }
  // Misuse: the layouts need more devices than the communicator has.
  dynamic_layout a(dynamic_mesh{size}, dynamic_spec("S0"), dynamic_shape{16}), b(dynamic_mesh{size}, dynamic_spec("R"), dynamic_shape{16});
  std::vector<float> in = shard<float>(a.value(), iota(0, size), rank), out(16);
  expect_error_everywhere([&] { reshard(MPI_COMM_WORLD, a, b, in, out, across); }, "ranks", "communicator size");
  // The application's own pending receive (any source, any tag) on the same communicator: the
  // one call's messages travel on a communicator of its own, so it neither takes nor is taken by
  // them (it once got a meshcast message, or MPI aborted on a truncated one).
  {
    int mine = -1;
    MPI_Request app = MPI_REQUEST_NULL;
    if (rank == 0) MPI_Irecv(&mine, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &app);
    check_reshard<float>(a, b, in_place, "beside a pending MPI_ANY_TAG receive of the application");
    int done = 0;
    MPI_Status st{};
    if (rank == 0) MPI_Test(&app, &done, &st);
    expect(done == 0, "the application's receive completed during the reshard: from rank " + std::to_string(st.MPI_SOURCE) +
                          ", tag " + std::to_string(st.MPI_TAG));
    // Only once rank 0 has looked does the last rank send the message that receive waits for.
    const int value = 4242;
    int go = 1;
    if (rank == 0 && size > 1) MPI_Send(&go, 1, MPI_INT, size - 1, 78, MPI_COMM_WORLD);
    if (rank == size - 1 && size > 1) MPI_Recv(&go, 1, MPI_INT, 0, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == size - 1) MPI_Send(&value, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
    if (rank == 0) {
      MPI_Wait(&app, MPI_STATUS_IGNORE);
      expect(mine == value, "the application's receive got " + std::to_string(mine));
    }
  }
  // Misuse: ranks that disagree on the network model (rank 0's values once won silently).
  expect_error_everywhere(
      [&] {
        reshard_options o = in_place;
        if (rank == size - 1) o.nic_gbps = 1;
        reshard(MPI_COMM_WORLD, a, b, in, out, o);
      },
      "different", "ranks that disagree on nic_gbps");
  // Misuse: a bad timeout on one rank: every rank fails at once naming it (the others waited out
  // their own timeout, then named no input).
  {
    const auto t0 = std::chrono::steady_clock::now();
    expect_error_everywhere(
        [&] {
          reshard_options o = in_place;
          o.timeout_s = rank == size - 1 ? std::numeric_limits<double>::quiet_NaN() : 20;
          reshard(MPI_COMM_WORLD, a, b, in, out, o);
        },
        "timeout_s (nan s)", "a NaN timeout on one rank");
    expect(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15), "a NaN timeout on one rank: the others waited");
  }
  // Misuse: every host_of entry negative (was "cannot create std::vector larger than max_size()").
  expect_error_everywhere(
      [&] {
        reshard_options o = in_place;
        o.host_of.assign(static_cast<std::size_t>(size), -5);
        reshard(MPI_COMM_WORLD, a, b, in, out, o);
      },
      "is on host -5", "negative hosts");
  // Misuse: a negative devices_per_host (was taken as 0, "ask the communicator").
  expect_error_everywhere(
      [&] {
        reshard_options o = in_place;
        o.devices_per_host = -5;
        reshard(MPI_COMM_WORLD, a, b, in, out, o);
      },
      "devices_per_host is -5", "negative devices_per_host");
  // Misuse: one rank's destination shard is too small: every rank fails.
  std::vector<float> small(rank == 0 ? 3 : 16);
  expect_error_everywhere([&] { reshard(MPI_COMM_WORLD, a, b, in, small, in_place); }, "elements", "shard size");
  // Misuse: element size differs from the set-up one.
  expect_error_everywhere(
      [&] {
        resharder<> r(MPI_COMM_WORLD, a, b, sizeof(double), in_place);
        r(in, out);
      },
      "byte elements", "element size");
  // Misuse: the ranks disagree (rank 0 another element type).
  expect_error_everywhere(
      [&] {
        if (rank == 0) {
          std::vector<double> in2(in.begin(), in.end()), out2(16);
          reshard(MPI_COMM_WORLD, a, b, in2, out2, in_place);
        } else {
          reshard(MPI_COMM_WORLD, a, b, in, out, in_place);
        }
      },
      "different", "ranks that disagree");
  // A timeout of 0 s: every wait would expire at once (it failed "within 0 s while setting up a
  // communicator"); now an error naming it, on every rank, whether all or one rank gave it.
  for (bool all : {true, false})
    expect_error_everywhere(
        [&] {
          reshard_options o = in_place;
          if (all || rank == 0) o.timeout_s = 0;
          reshard(MPI_COMM_WORLD, a, b, in, out, o);
        },
        "timeout_s is 0 s", all ? "a zero timeout" : "a zero timeout on rank 0");
  // Rank 0 solves for 5 s within an 8 s time limit; the others wait for it under a 4 s timeout
  // (they failed with a timeout though no rank had stopped): the solver's limit extends that wait.
  {
    reshard_options o = in_place;
    o.timeout_s = 4;
    o.time_limit_s = 8;
    const layout_value s = a.value(), d = b.value();
    std::vector<float> got(out.size(), -1.0f);
    try {
      reshard<slow_greedy, send_recv>(MPI_COMM_WORLD, a, b, std::span<const float>(in), std::span<float>(got), o);
      expect(got == shard<float>(d, iota(0, s.device_count()), rank), "a solve longer than the timeout: wrong elements");
    } catch (const error& e) {
      expect(false, std::string("a solve longer than the timeout, within the time limit: ") + e.what());
    }
  }
  // The largest timeout and time limit the options take (the wait for rank 0's solve added them and
  // passed the deadline's 1e6 s cap: every rank failed).
  {
    reshard_options o = in_place;
    o.timeout_s = 1e6;
    o.time_limit_s = 1e6;
    check_reshard<float>(a, b, o, "a timeout and time limit of 1e6 s");
  }
  // Everyone is still in step: a last correct reshard.
  check_reshard<float>(a, b, in_place, "after the misuses");
  const bool all = all_ok(MPI_COMM_WORLD, failures == 0, 30, "collecting results");
  if (rank == 0) std::printf("one-call reshard, %d ranks: %s\n", size, all ? "all checks passed" : "FAILED");
  MPI_Finalize();
  return all ? 0 : 1;
}

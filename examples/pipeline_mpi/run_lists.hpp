// One run of one policy's lists on this rank: its stage's entries in list order, on one thread
// (shared streams) or a compute and a communication thread (separate), each entry timestamped.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <meshcast/pipeline.hpp>

#include "clock.hpp"
#include "collectives.hpp"
#include "compute.hpp"
#include "runners.hpp"

namespace pipeline_mpi {
using namespace meshcast;
namespace pl = meshcast::pipeline;

struct rank_times {
  double origin = 0;               // when this rank left the common barrier
  std::vector<double> start, end;  // per entry of this rank's stage list
};  // seconds on rank 0's clock; rank 0 then counts them from the earliest origin

inline rank_times run_lists(const pl::graph& g, const pl::stage_list& list, const std::vector<pl::graph::id>& ids,
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

}  // namespace pipeline_mpi

// meshcast-reshard's --exec-trace: every rank's measured steps of the last run, gathered on rank 0
// and written beside the model's times as a Chrome trace.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>  // detail::failure_of
#include <meshcast/mpi.hpp>

#include "json_writer.hpp"

namespace meshcast::cli::reshard_detail {

// Rank 0 gathers every rank's step times (bounded in time) and writes them, with the model's
// times of the same transfers, as a Chrome trace: process 0 = measured, process 1 = model; one
// track per device.
template <class Executor>
void gather_trace(const Executor& exec, const meshcast::schedule& s, const std::string& path, double timeout_s) {
  using namespace meshcast;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Each step that allocates is agreed on before the next gather: one rank out of memory alone
  // stops every rank, where the others waited out the timeout in the gather.
  auto agree = [&](auto&& step) {
    agree_or_throw(MPI_COMM_WORLD, detail::failure_of(step, "gathering the trace"), timeout_s);
  };
  // Per step: transfer, wait, start, end, and when the rank's run began on its steady clock.
  std::vector<double> mine;
  // bounded_wait keeps these vectors' storage should it give up (a late rank may still write it).
  std::vector<int> sent, counts, offsets;
  agree([&] {
    for (const auto& t : exec.times())
      mine.insert(mine.end(), {static_cast<double>(t.transfer), t.wait, t.start, t.end, exec.run_began_s()});
    sent.assign(1, static_cast<int>(mine.size()));
    counts.resize(static_cast<std::size_t>(size));
    offsets.resize(static_cast<std::size_t>(size));
  });
  const int count = sent[0];
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Igather(sent.data(), 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &r), "MPI_Igather");
  bounded_wait(r, timeout_s, "gathering the trace's sizes", sent, counts);
  int total = 0;
  for (int k = 0; k < size; ++k) offsets[static_cast<std::size_t>(k)] = total, total += counts[static_cast<std::size_t>(k)];
  std::vector<double> all;
  agree([&] {
    if (rank == 0) all.resize(static_cast<std::size_t>(std::max(total, 1)));
  });
  detail::mpi_check(MPI_Igatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0,
                                 MPI_COMM_WORLD, &r), "MPI_Igatherv");
  bounded_wait(r, timeout_s, "gathering the trace", mine, all, counts, offsets);
  if (rank != 0) return;
  cli::json_writer j;
  j.begin_object().key("displayTimeUnit").value("ms").key("traceEvents").begin_array();
  // Every event names its transfer, that transfer's sender and its bytes in "args", for programs that read the trace.
  // Every measured event also gives, in "began_s", when its rank's run began on that rank's steady
  // clock: ranks on one machine (the emulated cluster) share it, and line their times up by it.
  auto event = [&](const std::string& name, long long pid, long long tid, double a, double b, const char* cat,
                   std::size_t i, double began = -1) {
    j.begin_object().key("ph").value("X").key("cat").value(cat).key("name").value(name);
    j.key("pid").value(pid).key("tid").value(tid).key("ts").value(a * 1e6).key("dur").value((b - a) * 1e6);
    j.key("args").begin_object().key("transfer").value(static_cast<long long>(i));
    j.key("sender").value(static_cast<long long>(s.transfers[i].sender));
    j.key("bytes").value(static_cast<long long>(s.transfers[i].bytes));
    if (began >= 0) j.key("began_s").value(began);
    j.end_object().end_object();
  };
  for (int d = 0; d < size; ++d)
    for (int k = offsets[static_cast<std::size_t>(d)]; k + 4 < offsets[static_cast<std::size_t>(d)] + counts[static_cast<std::size_t>(d)]; k += 5) {
      const auto at = [&](int q) { return all[static_cast<std::size_t>(k + q)]; };
      const auto i = static_cast<std::size_t>(at(0));
      const std::string name = std::string(to_string(s.transfers[i].kind)) + " " + std::to_string(i);
      if (at(2) > at(1)) event("wait " + std::to_string(i), 0, d, at(1), at(2), "wait", i, at(4));
      event(name, 0, d, at(2), at(3), "measured", i, at(4));
    }
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const std::string name = std::string(to_string(s.transfers[i].kind)) + " " + std::to_string(i);
    event(name, 1, s.transfers[i].sender, s.model[i].start, s.model[i].end, "model", i);
    for (index_t rcv : s.transfers[i].receivers)
      if (rcv != s.transfers[i].sender) event(name, 1, rcv, s.model[i].start, s.model[i].end, "model", i);
  }
  j.end_array().end_object();
  cli::write_file(path, j.str() + "\n", "execution trace");
}

}  // namespace meshcast::cli::reshard_detail

// meshcast-reshard's failures: what went wrong on a rank (an input error or the rank's own),
// reporting it, and ending the whole job when a peer is gone or stopped.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <meshcast/mpi.hpp>

#include "end_job.hpp"

namespace meshcast::cli::reshard_detail {

// What went wrong on this rank, if anything, and whether it is a rank's own failure (reported by
// that rank) or an input error (the same on every rank: reported by rank 0).
struct failure {
  std::string message;
  bool own = false;
  explicit operator bool() const { return !message.empty(); }
};

inline failure describe(const std::exception& e, bool own) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return {"out of memory (shards or schedule too large for this machine)", true};
  return {e.what(), own};
}

inline int g_rank = 0;

inline void report(const failure& f) {
  if (!f) return;
  if (f.own) std::fprintf(stderr, "meshcast-reshard (rank %d): error: %s\n", g_rank, f.message.c_str());
  else if (g_rank == 0) std::fprintf(stderr, "meshcast-reshard: error: %s\n", f.message.c_str());
  std::fflush(stderr);
}

// A peer is gone or stopped: nothing collective can finish. Report, give the other ranks a moment
// to report what they see, then end the whole job (within a bound: end_job.hpp).
[[noreturn]] inline void abort_job(const failure& f) {
  failure shown = f;
  shown.own = true;
  report(shown);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  end_job(2);
}

// "device 5 (host 1)" for messages.
inline std::string device_and_host(int d, const std::vector<meshcast::index_t>& host_of) {
  std::string s = "device " + std::to_string(d);
  if (d >= 0 && static_cast<std::size_t>(d) < host_of.size()) s += " (host " + std::to_string(host_of[d]) + ")";
  return s;
}

inline failure timeout_failure(const meshcast::timeout_error& e, const std::vector<meshcast::index_t>& host_of) {
  std::string m = e.what();
  if (!e.missing().empty()) {
    m += "; unreachable: ";
    for (std::size_t i = 0; i < e.missing().size() && i < 16; ++i)
      m += (i ? ", " : "") + device_and_host(e.missing()[i], host_of);
  }
  return {m, true};
}
/// The same where this rank had failed on its own before the agreement that timed out: its own
/// failure first, which the timeout would otherwise hide.
inline failure timeout_failure(const meshcast::timeout_error& e, const std::vector<meshcast::index_t>& host_of, const failure& here) {
  failure f = timeout_failure(e, host_of);
  if (here) f.message = here.message + "; then, telling the other ranks: " + f.message;
  return f;
}

}  // namespace meshcast::cli::reshard_detail

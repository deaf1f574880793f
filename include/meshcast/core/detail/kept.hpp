// Memory a transport may still write after meshcast gave up waiting for it. A wait that expires
// leaves its operation pending (a rank that arrives late can still complete it), and what that
// operation writes into must not be freed: it is kept here for the life of the process, past the
// destruction of statics (an MPI_Finalize registered with atexit still makes progress then).
// Reachable from a static pointer, so leak checkers do not count it; small, since only failed
// waits leave anything.
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace meshcast::detail {

/// Keeps `what` alive for the rest of the process; never freed.
inline void keep_until_exit(std::shared_ptr<void> what) {
  static auto* guard = new std::mutex;
  static auto* kept = new std::vector<std::shared_ptr<void>>;
  const std::lock_guard<std::mutex> lock(*guard);
  kept->push_back(std::move(what));
}

}  // namespace meshcast::detail

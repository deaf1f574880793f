// Giving the core away while a wait polls: a sleep and a yield without <thread>, which would cost
// every includer of <meshcast/mpi.hpp> a fifth of a second to parse for these two calls.
#pragma once

#include <chrono>

#if defined(_WIN32)
#include <thread>
#else
#include <cerrno>
#include <sched.h>
#include <time.h>
#endif

namespace meshcast::detail {

/// Sleeps for at least `d` (longer if the system is busy), resuming after a signal.
inline void sleep_for(std::chrono::microseconds d) noexcept {
  if (d.count() <= 0) return;
#if defined(_WIN32)
  std::this_thread::sleep_for(d);
#else
  timespec left{static_cast<time_t>(d.count() / 1000000), static_cast<long>(d.count() % 1000000) * 1000};
  while (nanosleep(&left, &left) == -1 && errno == EINTR) {
  }
#endif
}

/// Lets another runnable thread or process have this core.
inline void yield_core() noexcept {
#if defined(_WIN32)
  std::this_thread::yield();
#else
  sched_yield();
#endif
}

}  // namespace meshcast::detail

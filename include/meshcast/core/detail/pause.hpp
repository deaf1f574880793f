// Giving the core away while a wait polls: the back-off between polls that every wait uses, and
// a sleep and a yield without <thread>, which would cost every includer of <meshcast/mpi.hpp> a
// fifth of a second to parse for these two calls.
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

/// The pause between two polls of a wait, called after each poll that found nothing. The first 64
/// return at once (a reply that is nearly there costs no sleep); then sleeps of 5 us, doubling up
/// to 100 us: ranks that share cores (more ranks than cores, or a busy host) leave them to the
/// ranks that have work, at a cost of at most one sleep of latency per wait.
class backoff {
 public:
  void operator()() noexcept {
    if (spins_ < 64) {
      ++spins_;
      return;
    }
    sleep_for(pause_);
    pause_ = pause_ * 2 < longest ? pause_ * 2 : longest;
  }

 private:
  static constexpr std::chrono::microseconds longest{100};
  int spins_ = 0;
  std::chrono::microseconds pause_{5};
};

}  // namespace meshcast::detail

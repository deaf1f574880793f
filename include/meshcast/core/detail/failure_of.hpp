// What a step throws, as the sentence a rank tells the others when they agree on success: the
// collectives that agree (share_schedule, a benchmark's buffers) catch it the same way.
#pragma once

#include <exception>
#include <new>
#include <string>

namespace meshcast::detail {

/// "" when `step()` returns; else what it threw: "out of memory while <what>" for std::bad_alloc,
/// the exception's own message for any other std::exception.
template <class Step>
std::string failure_of(Step&& step, const char* what) {
  try {
    step();
  } catch (const std::bad_alloc&) {
    return std::string("out of memory while ") + what;
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace meshcast::detail

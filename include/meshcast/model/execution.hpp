// Execution modes: the ways an executor can issue a schedule. Each has a model (simulate.hpp)
// and a lower bound (lower_bound.hpp) that hold for it, and solvers optimise the model of the
// mode that will run.
#pragma once

#include <string>
#include <string_view>

#include "../core/error.hpp"

namespace meshcast {

enum class execution {
  /// Every device and every NIC direction carries one transfer at a time, in schedule order
  /// (Alpa's workers, a single NCCL stream). The executor enforces it: a device runs its
  /// transfers one after another, and devices that share a NIC pass it on in schedule order.
  ordered,
  /// Every transfer is posted at once (a forward as soon as what it forwards has arrived); flows
  /// that share a NIC direction share its bandwidth fairly.
  concurrent,
};

constexpr std::string_view to_string(execution m) noexcept { return m == execution::ordered ? "ordered" : "concurrent"; }

/// `m` itself, unless it holds a value outside the enum (a cast from a number): then an error
/// naming `what`, the option at fault.
inline execution checked_execution(execution m, const char* what) {
  if (m != execution::ordered && m != execution::concurrent)
    throw error(std::string(what) + " holds " + std::to_string(static_cast<int>(m)) +
                ", which is not execution::ordered or execution::concurrent");
  return m;
}

inline execution parse_execution(std::string_view name) {
  if (name == "ordered") return execution::ordered;
  if (name == "concurrent") return execution::concurrent;
  throw error("execution mode '" + detail::printable(name) + "' is not ordered or concurrent");
}

}  // namespace meshcast

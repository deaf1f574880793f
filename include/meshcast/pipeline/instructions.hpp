// Instruction lists: each stage executes its own ordered list of instructions. `F` / `B` compute
// one microbatch; `send` / `recv` carry one transfer of one edge for one microbatch, in the
// forward or the backward pass. Plain data, so that an executor can run the lists as they are.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "../core/config.hpp"

namespace meshcast::pipeline {

enum class op_kind : std::uint8_t { forward, backward, send, recv };
enum class pass_kind : std::uint8_t { forward, backward };

/// "F", "B", "send", "recv" (the names of the JSON output).
inline constexpr std::string_view to_string(op_kind k) noexcept {
  switch (k) {
    case op_kind::forward: return "F";
    case op_kind::backward: return "B";
    case op_kind::send: return "send";
    case op_kind::recv: return "recv";
  }
  return "?";
}
inline constexpr std::string_view to_string(pass_kind p) noexcept {
  return p == pass_kind::forward ? "forward" : "backward";
}

struct instruction {
  op_kind op = op_kind::forward;
  index_t mb = 0;
  index_t edge = -1;  ///< send / recv: index into description::edges
  pass_kind pass = pass_kind::forward;
  index_t peer = -1;  ///< send / recv: the other stage
  double start = 0;   ///< set by the simulator
  double end = 0;

  bool is_compute() const noexcept { return op == op_kind::forward || op == op_kind::backward; }
  bool is_transfer() const noexcept { return !is_compute(); }

  static instruction compute(op_kind k, index_t mb) noexcept { return {k, mb, -1, pass_kind::forward, -1, 0, 0}; }
  static instruction transfer(op_kind k, index_t edge, pass_kind p, index_t mb, index_t peer) noexcept {
    return {k, mb, edge, p, peer, 0, 0};
  }
};

using stage_list = std::vector<instruction>;
/// One list per stage, stage 0 first.
using lists = std::vector<stage_list>;

}  // namespace meshcast::pipeline

// The operations of a pipeline and their dependencies, numbered densely for the policies and the
// simulator. Computes come first: stage s's k-th compute in schedule order is s * K + k (K computes
// per stage); then transfers: C + (edge * passes + pass) * m + mb.
//
// Dependencies (what "respects dependencies" means): a forward transfer of edge (a, b) for
// microbatch j carries what F_a(j) produced and is consumed by F_b(j); the backward transfer
// carries what B_b(j) produced and is consumed by B_a(j). On each stage, computes run in the
// schedule's order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "description.hpp"
#include "instructions.hpp"

namespace meshcast::pipeline {

/// The compute order the schedule fixes on stage `s` (each entry an `F` or `B` instruction).
inline std::vector<instruction> compute_order(const description& d, index_t s) {
  const index_t m = d.microbatches, n = d.stage_count();
  std::vector<instruction> out;
  out.reserve(static_cast<std::size_t>(m * d.passes()));
  auto F = [&](index_t j) { out.push_back(instruction::compute(op_kind::forward, j)); };
  auto B = [&](index_t j) { out.push_back(instruction::compute(op_kind::backward, j)); };
  switch (d.schedule) {
    case schedule_kind::forward_only:
      for (index_t j = 0; j < m; ++j) F(j);
      break;
    case schedule_kind::gpipe:
      for (index_t j = 0; j < m; ++j) F(j);
      for (index_t j = 0; j < m; ++j) B(j);
      break;
    case schedule_kind::one_f_one_b:
    case schedule_kind::eager_1f1b: {
      const index_t warm = std::min(m, d.schedule == schedule_kind::one_f_one_b ? n - s : 2 * (n - s) - 1);
      for (index_t j = 0; j < warm; ++j) F(j);
      for (index_t j = 0; j < m; ++j) {
        B(j);
        if (warm + j < m) F(warm + j);
      }
      break;
    }
  }
  return out;
}

class graph {
 public:
  using id = index_t;

  explicit graph(const description& d) : d_(&d) {
    validate(d);
    n_ = d.stage_count();
    m_ = d.microbatches;
    passes_ = d.passes();
    per_stage_ = m_ * passes_;
    computes_ = n_ * per_stage_;
    transfers_ = static_cast<index_t>(d.edges.size()) * passes_ * m_;
    kind_.resize(static_cast<std::size_t>(computes_));
    mb_.resize(static_cast<std::size_t>(computes_));
    position_.assign(static_cast<std::size_t>(computes_), 0);
    for (index_t s = 0; s < n_; ++s) {
      std::vector<instruction> order = compute_order(d, s);
      for (index_t k = 0; k < per_stage_; ++k) {
        const id c = s * per_stage_ + k;
        kind_[c] = order[k].op;
        mb_[c] = order[k].mb;
        position_[s * per_stage_ + (order[k].op == op_kind::backward ? m_ : 0) + order[k].mb] = k;
      }
    }
    // Per transfer: its stages and computes; per operation: its duration (the hot loops of the
    // simulator and the policies read these).
    links_.resize(static_cast<std::size_t>(transfers_));
    for (id t = computes_; t < computes_ + transfers_; ++t) {
      const edge& e = d.edges[edge_of(t)];
      const bool fwd = pass_of(t) == pass_kind::forward;
      const op_kind k = fwd ? op_kind::forward : op_kind::backward;
      link& l = links_[t - computes_];
      l.sender = static_cast<std::int32_t>(fwd ? e.from : e.to);
      l.receiver = static_cast<std::int32_t>(fwd ? e.to : e.from);
      l.producer = compute_of(l.sender, k, mb(t));
      l.consumer = compute_of(l.receiver, k, mb(t));
    }
    duration_.resize(static_cast<std::size_t>(computes_ + transfers_));
    for (id c = 0; c < computes_; ++c)
      duration_[c] = kind_[c] == op_kind::forward ? d.stages[stage_of(c)].forward : d.stages[stage_of(c)].backward;
    for (id t = computes_; t < computes_ + transfers_; ++t)
      duration_[t] = pass_of(t) == pass_kind::forward ? d.edges[edge_of(t)].time : d.edges[edge_of(t)].back();
    in_edges_.resize(static_cast<std::size_t>(n_));
    out_edges_.resize(static_cast<std::size_t>(n_));
    for (std::size_t e = 0; e < d.edges.size(); ++e) {
      out_edges_[d.edges[e].from].push_back(static_cast<index_t>(e));
      in_edges_[d.edges[e].to].push_back(static_cast<index_t>(e));
    }
  }

  const description& source() const noexcept { return *d_; }
  index_t stages() const noexcept { return n_; }
  index_t microbatches() const noexcept { return m_; }
  index_t passes() const noexcept { return passes_; }
  index_t computes_per_stage() const noexcept { return per_stage_; }
  index_t compute_count() const noexcept { return computes_; }
  index_t transfer_count() const noexcept { return transfers_; }
  index_t size() const noexcept { return computes_ + transfers_; }
  bool is_compute(id o) const noexcept { return o < computes_; }

  // --- computes
  id compute(index_t stage, index_t k) const noexcept { return stage * per_stage_ + k; }
  /// The compute of kind `k` (forward / backward) for microbatch `mb` on `stage`.
  id compute_of(index_t stage, op_kind k, index_t mb) const noexcept {
    return stage * per_stage_ + position_[stage * per_stage_ + (k == op_kind::backward ? m_ : 0) + mb];
  }
  index_t stage_of(id c) const noexcept { return c / per_stage_; }
  index_t position(id c) const noexcept { return c % per_stage_; }
  op_kind kind(id c) const noexcept { return kind_[c]; }
  index_t mb(id o) const noexcept { return is_compute(o) ? mb_[o] : (o - computes_) % m_; }

  // --- transfers
  id transfer(index_t edge, pass_kind p, index_t mb) const noexcept {
    return computes_ + (edge * passes_ + (p == pass_kind::backward ? 1 : 0)) * m_ + mb;
  }
  index_t edge_of(id t) const noexcept { return (t - computes_) / m_ / passes_; }
  pass_kind pass_of(id t) const noexcept {
    return ((t - computes_) / m_) % passes_ == 1 ? pass_kind::backward : pass_kind::forward;
  }
  index_t sender(id t) const noexcept { return links_[t - computes_].sender; }
  index_t receiver(id t) const noexcept { return links_[t - computes_].receiver; }
  /// The compute that produced the data of transfer `t` (on its sender).
  id producer(id t) const noexcept { return links_[t - computes_].producer; }
  /// The compute that consumes it (on its receiver).
  id consumer(id t) const noexcept { return links_[t - computes_].consumer; }

  double duration(id o) const noexcept { return duration_[o]; }
  /// Gives operation `o` its own duration (e.g. one measured in a run), in place of the one the
  /// description gives its stage or edge: `simulate` then re-simulates lists with it.
  void set_duration(id o, double t) {
    detail::check_time(t, "the duration of an operation");
    duration_[o] = t;
  }

  /// Calls f(t) for every transfer compute `c` consumes.
  template <class F>
  void for_each_input(id c, F&& f) const {
    const index_t s = stage_of(c), j = mb_[c];
    if (kind_[c] == op_kind::forward)
      for (index_t e : in_edges_[s]) f(transfer(e, pass_kind::forward, j));
    else
      for (index_t e : out_edges_[s]) f(transfer(e, pass_kind::backward, j));
  }
  /// Calls f(t) for every transfer that carries what compute `c` produced.
  template <class F>
  void for_each_output(id c, F&& f) const {
    const index_t s = stage_of(c), j = mb_[c];
    if (kind_[c] == op_kind::forward)
      for (index_t e : out_edges_[s]) f(transfer(e, pass_kind::forward, j));
    else
      for (index_t e : in_edges_[s]) f(transfer(e, pass_kind::backward, j));
  }
  index_t input_count(id c) const noexcept {
    const index_t s = stage_of(c);
    return static_cast<index_t>(kind_[c] == op_kind::forward ? in_edges_[s].size() : out_edges_[s].size());
  }
  /// Calls f(successor) for every operation that must come after `o`: the next compute on its
  /// stage and the transfers it feeds (a compute), or its consumer (a transfer).
  template <class F>
  void for_each_successor(id o, F&& f) const {
    if (!is_compute(o)) return f(consumer(o));
    if (position(o) + 1 < per_stage_) f(o + 1);
    for_each_output(o, f);
  }
  template <class F>
  void for_each_predecessor(id o, F&& f) const {
    if (!is_compute(o)) return f(producer(o));
    if (position(o) > 0) f(o - 1);
    for_each_input(o, f);
  }

  /// The list entry of `o` as seen from `stage` (a transfer appears on its sender as a send and
  /// on its receiver as a recv).
  instruction entry(id o, index_t stage) const noexcept {
    if (is_compute(o)) return instruction::compute(kind_[o], mb_[o]);
    const bool sends = sender(o) == stage;
    return instruction::transfer(sends ? op_kind::send : op_kind::recv, edge_of(o), pass_of(o), mb(o),
                                 sends ? receiver(o) : sender(o));
  }

  /// The stages' lists of a global order of all operations: each stage's list is the order
  /// restricted to its own operations (a transfer goes to its sender and its receiver). Lists
  /// made this way from an order that respects the dependencies cannot deadlock: running the
  /// operations one at a time in that order is a valid execution.
  lists project(const std::vector<id>& order) const {
    lists out(static_cast<std::size_t>(n_));
    std::vector<index_t> count(static_cast<std::size_t>(n_), 0);
    for (id o : order) {
      if (is_compute(o)) {
        ++count[stage_of(o)];
      } else {
        ++count[sender(o)];
        ++count[receiver(o)];
      }
    }
    for (index_t s = 0; s < n_; ++s) out[s].reserve(static_cast<std::size_t>(count[s]));
    for (id o : order) {
      if (is_compute(o)) {
        out[stage_of(o)].push_back(entry(o, stage_of(o)));
      } else {
        out[sender(o)].push_back(entry(o, sender(o)));
        out[receiver(o)].push_back(entry(o, receiver(o)));
      }
    }
    return out;
  }

  /// Operations in an order that respects every dependency (Kahn's algorithm, no recursion).
  std::vector<id> topological_order() const {
    std::vector<index_t> missing(static_cast<std::size_t>(size()), 0);
    for (id o = 0; o < size(); ++o) for_each_successor(o, [&](id x) { ++missing[x]; });
    std::vector<id> order;
    order.reserve(static_cast<std::size_t>(size()));
    for (id o = 0; o < size(); ++o)
      if (missing[o] == 0) order.push_back(o);
    for (std::size_t i = 0; i < order.size(); ++i)
      for_each_successor(order[i], [&](id x) {
        if (--missing[x] == 0) order.push_back(x);
      });
    if (static_cast<index_t>(order.size()) != size())
      throw error("the schedule '" + std::string(to_string(d_->schedule)) +
                  "' has a dependency cycle on this pipeline");  // cannot happen for edges from < to
    return order;
  }

  /// Longest path from the beginning to the start of `o` over the dependencies alone: no
  /// operation can start earlier.
  std::vector<double> heads() const {
    std::vector<double> head(static_cast<std::size_t>(size()), 0);
    for (id o : topological_order()) {
      double h = 0;
      for_each_predecessor(o, [&](id p) { h = std::max(h, head[p] + duration(p)); });
      head[o] = h;
    }
    return head;
  }

  /// Longest path from the start of `o` to the end of everything (its duration included), over
  /// the dependencies alone.
  std::vector<double> tails() const {
    std::vector<id> order = topological_order();
    std::vector<double> tail(static_cast<std::size_t>(size()), 0);
    for (std::size_t i = order.size(); i-- > 0;) {
      const id o = order[i];
      double after = 0;
      for_each_successor(o, [&](id x) { after = std::max(after, tail[x]); });
      tail[o] = duration(o) + after;
    }
    return tail;
  }

 private:
  const description* d_;
  index_t n_ = 0, m_ = 0, passes_ = 1, per_stage_ = 0, computes_ = 0, transfers_ = 0;
  std::vector<op_kind> kind_;
  std::vector<index_t> mb_;
  std::vector<index_t> position_;  // [stage][F..., B...][mb] -> position in the stage's order
  std::vector<std::vector<index_t>> in_edges_, out_edges_;
  struct link {
    std::int32_t sender = 0, receiver = 0;
    id producer = 0, consumer = 0;
  };
  std::vector<link> links_;
  std::vector<double> duration_;
};

}  // namespace meshcast::pipeline

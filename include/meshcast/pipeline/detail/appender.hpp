// Building lists by appending operations one at a time, each to the end of its stage's list (a
// transfer to both its stages' lists), with the times the pinned semantics give them.
//
// An operation may be appended once everything it depends on has been: the next compute of a
// stage once its inputs have been received, a transfer once its data was computed. The order of
// appends then respects every dependency, so the projected lists cannot deadlock, and an
// operation's start is the same as the simulator will compute: the latest of the ends of what
// comes before it on its stream(s) and of the operations it waits for. `undo` takes the last
// append back (for branch and bound).
#pragma once

#include <algorithm>
#include <vector>

#include "../graph.hpp"

namespace meshcast::pipeline::detail {

class appender {
 public:
  using id = graph::id;

  explicit appender(const graph& g)
      : g_(&g), separate_(g.source().streams == stream_mode::separate) {
    resources_ = separate_ ? 2 * g.stages() : g.stages();
    const std::size_t n = static_cast<std::size_t>(g.size());
    end_.assign(n, 0);
    appended_.assign(n, 0);
    pos_.assign(n, -1);
    missing_.assign(static_cast<std::size_t>(g.compute_count()), 0);
    for (id c = 0; c < g.compute_count(); ++c) missing_[c] = g.input_count(c);
    ready_.assign(static_cast<std::size_t>(g.compute_count()), 0);
    free_.assign(static_cast<std::size_t>(resources_), 0);
    next_.assign(static_cast<std::size_t>(g.stages()), 0);
    order_.reserve(n);
    for (index_t s = 0; s < g.stages(); ++s)
      if (g.computes_per_stage() > 0 && missing_[g.compute(s, 0)] == 0) add(g.compute(s, 0));
  }

  const graph& source() const noexcept { return *g_; }
  index_t resource_count() const noexcept { return resources_; }
  /// The resources (streams) an operation occupies: one for a compute, two for a transfer.
  index_t resource_a(id o) const noexcept {
    if (g_->is_compute(o)) return separate_ ? 2 * g_->stage_of(o) : g_->stage_of(o);
    return separate_ ? 2 * g_->sender(o) + 1 : g_->sender(o);
  }
  index_t resource_b(id o) const noexcept {
    if (g_->is_compute(o)) return -1;
    return separate_ ? 2 * g_->receiver(o) + 1 : g_->receiver(o);
  }

  const std::vector<id>& candidates() const noexcept { return cand_; }
  bool appended(id o) const noexcept { return appended_[o] != 0; }
  bool complete() const noexcept { return order_.size() == static_cast<std::size_t>(g_->size()); }
  const std::vector<id>& order() const noexcept { return order_; }
  double makespan() const noexcept { return makespan_; }
  double end(id o) const noexcept { return end_[o]; }
  double free_at(index_t r) const noexcept { return free_[r]; }
  /// Max end of the appended inputs of compute `c` (0 if none).
  double ready(id c) const noexcept { return ready_[c]; }

  /// Earliest start of a candidate if it were appended now.
  double est(id o) const noexcept {
    if (g_->is_compute(o)) return std::max(free_[resource_a(o)], ready_[o]);
    return std::max({free_[resource_a(o)], free_[resource_b(o)], end_[g_->producer(o)]});
  }
  double ect(id o) const noexcept { return est(o) + g_->duration(o); }

  /// Appends candidate `o`; returns its end.
  double append(id o) {
    log_entry e;
    e.o = o;
    e.cand_index = pos_[o];
    e.makespan = makespan_;
    const double start = est(o), finish = start + g_->duration(o);
    const index_t ra = resource_a(o), rb = resource_b(o);
    e.free_a = free_[ra];
    e.free_b = rb >= 0 ? free_[rb] : 0;
    remove(o);
    const std::size_t before = cand_.size();
    end_[o] = finish;
    appended_[o] = 1;
    order_.push_back(o);
    makespan_ = std::max(makespan_, finish);
    free_[ra] = finish;
    if (rb >= 0) free_[rb] = finish;
    if (g_->is_compute(o)) {
      const index_t s = g_->stage_of(o);
      ++next_[s];
      g_->for_each_output(o, [&](id t) { add(t); });
      if (g_->position(o) + 1 < g_->computes_per_stage() && missing_[o + 1] == 0) add(o + 1);
    } else {
      const id c = g_->consumer(o);
      e.ready = ready_[c];
      --missing_[c];
      ready_[c] = std::max(ready_[c], finish);
      if (missing_[c] == 0 && g_->position(c) == next_[g_->stage_of(c)]) add(c);
    }
    e.added = cand_.size() - before;
    if (logging_) log_.push_back(e);
    return finish;
  }

  /// Takes back the last append (only while logging).
  void undo() {
    const log_entry e = log_.back();
    log_.pop_back();
    const id o = e.o;
    for (std::size_t k = 0; k < e.added; ++k) {
      pos_[cand_.back()] = -1;
      cand_.pop_back();
    }
    if (g_->is_compute(o)) {
      --next_[g_->stage_of(o)];
    } else {
      const id c = g_->consumer(o);
      ++missing_[c];
      ready_[c] = e.ready;
    }
    free_[resource_a(o)] = e.free_a;
    if (resource_b(o) >= 0) free_[resource_b(o)] = e.free_b;
    appended_[o] = 0;
    order_.pop_back();
    makespan_ = e.makespan;
    // Reverse of the swap-remove.
    const auto idx = static_cast<std::size_t>(e.cand_index);
    if (idx == cand_.size()) {
      cand_.push_back(o);
    } else {
      const id x = cand_[idx];
      pos_[x] = static_cast<index_t>(cand_.size());
      cand_.push_back(x);
      cand_[idx] = o;
    }
    pos_[o] = static_cast<index_t>(idx);
  }
  void set_logging(bool on) { logging_ = on; }
  /// Whether candidate `d` became one through the last (logged) append.
  bool added_by_last(id d) const noexcept {
    return !log_.empty() && pos_[d] >= static_cast<index_t>(cand_.size() - log_.back().added);
  }

 private:
  struct log_entry {
    id o = 0;
    index_t cand_index = 0;
    std::size_t added = 0;
    double free_a = 0, free_b = 0, ready = 0, makespan = 0;
  };
  void add(id o) {
    pos_[o] = static_cast<index_t>(cand_.size());
    cand_.push_back(o);
  }
  void remove(id o) {
    const auto idx = static_cast<std::size_t>(pos_[o]);
    const id last = cand_.back();
    cand_[idx] = last;
    pos_[last] = static_cast<index_t>(idx);
    cand_.pop_back();
    pos_[o] = -1;
  }

  const graph* g_;
  bool separate_;
  bool logging_ = false;
  index_t resources_ = 0;
  std::vector<double> end_;
  std::vector<unsigned char> appended_;
  std::vector<index_t> pos_;      // index in cand_, or -1
  std::vector<index_t> missing_;  // per compute: inputs not yet appended
  std::vector<double> ready_;     // per compute: max end of its appended inputs
  std::vector<double> free_;      // per resource
  std::vector<index_t> next_;     // per stage: position of its next compute
  std::vector<id> cand_;
  std::vector<id> order_;
  std::vector<log_entry> log_;
  double makespan_ = 0;
};

}  // namespace meshcast::pipeline::detail

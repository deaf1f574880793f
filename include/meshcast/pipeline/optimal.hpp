// optimal: exact branch and bound over every deadlock-free set of lists that keeps the schedule's
// compute order (each transfer anywhere after its data is computed on its sender and before it
// is consumed on its receiver), seeded with list_scheduling's lists (run with the same options),
// so never worse than list_scheduling or any policy in its portfolio. It proves optimality when the search finishes within the time limit.
//
// Every such set of lists is the projection of an order of appends (see detail/appender.hpp),
// so the search appends one operation at a time, depth first with an explicit stack:
// - bound: the current makespan; for every stream, when it is free (or the earliest its remaining
//   operations can start, if later) plus the work left on it plus the shortest path to the end
//   that must follow its last operation; for every candidate, its
//   earliest start plus its longest path to the end. A node whose bound reaches the best
//   makespan is cut.
// - forced moves: a candidate that can finish before any other operation on its streams could
//   start, and no later than any other candidate could finish, goes first (moving it to the front
//   of any completion delays nothing).
// - commuting appends: two candidates that share no stream and do not depend on each other give
//   the same state in either order; only the order with the smaller id first is searched.
// - dominance: states with the same appended set are kept with their stream free times (and, with
//   separate streams, the ends that pending operations wait for); a state no earlier anywhere than
//   a stored one is cut. The table is bounded (`max_table_bytes`).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../core/detail/deadline.hpp"
#include "detail/appender.hpp"
#include "list_scheduling.hpp"
#include "lower_bound.hpp"
#include "policy.hpp"

namespace meshcast::pipeline {

struct optimal {
  static constexpr std::string_view name = "optimal";
  /// Forced moves, commuting appends and dominance (tests turn them off to check them).
  bool reductions = true;
  /// The most time the search itself may take after the seed (negative: until the time limit).
  /// The seed gets the whole limit, as list_scheduling alone would; a caller that wants
  /// list_scheduling's result reproduced exactly gives a generous limit and bounds the search here.
  double search_limit_s = -1;
  /// Memory the dominance table may use.
  std::size_t max_table_bytes = std::size_t{64} << 20;
  /// Largest pipeline (in operations) the search runs on; beyond, `order` returns its seed.
  index_t max_search_operations = 20000;

  policy_result order(const graph& g, const policy_options& options = {}) const {
    using deadline_t = meshcast::detail::deadline;
    const auto deadline = deadline_t(options.time_limit_s, "policy_options::time_limit_s").at();
    const bool own_search_limit = !(search_limit_s < 0);  // negative: none; NaN is refused, not taken as none
    if (own_search_limit) (void)meshcast::detail::checked_seconds(search_limit_s, "optimal::search_limit_s");
    // The seed gets the same options as list_scheduling alone (it stops by its iteration count
    // long before the limit except on very large pipelines), so optimal is never worse than it.
    policy_result best = list_scheduling{}.order(g, options);
    if (g.size() > max_search_operations) return best;
    double best_makespan = simulate_or_throw(g, best.stages);
    const double root_bound = lower_bound(g);
    best.bound = root_bound;
    if (best_makespan <= root_bound * (1 + 1e-12)) {
      best.proven_optimal = true;
      best.bound = best_makespan;
      return best;
    }
    auto search_deadline = deadline;
    if (own_search_limit)
      search_deadline = std::min(deadline, deadline_t(search_limit_s, "optimal::search_limit_s").at());
    if (deadline_t::clock::now() >= search_deadline) return best;
    search s(*this, g, search_deadline);
    std::vector<graph::id> order;
    const bool finished = s.run(best_makespan, order);
    if (!order.empty()) best.stages = g.project(order);
    if (finished) {
      best.proven_optimal = true;
      best.bound = best_makespan;
    }
    return best;
  }

 private:
  class search {
   public:
    using id = graph::id;
    search(const optimal& self, const graph& g, std::chrono::steady_clock::time_point deadline)
        : self_(self), g_(g), a_(g), deadline_(deadline) {
      a_.set_logging(true);
      const std::size_t n = static_cast<std::size_t>(g.size());
      tail_ = g.tails();
      const index_t R = a_.resource_count();
      rem_.assign(static_cast<std::size_t>(R), 0);
      by_tail_.resize(static_cast<std::size_t>(R));
      for (id o = 0; o < g.size(); ++o) {
        rem_[a_.resource_a(o)] += g.duration(o);
        by_tail_[a_.resource_a(o)].push_back(o);
        if (a_.resource_b(o) >= 0) {
          rem_[a_.resource_b(o)] += g.duration(o);
          by_tail_[a_.resource_b(o)].push_back(o);
        }
      }
      head_ = g.heads();
      by_head_ = by_tail_;
      for (auto& v : by_tail_)
        std::sort(v.begin(), v.end(), [&](id x, id y) { return after(x) < after(y); });
      for (auto& v : by_head_)
        std::sort(v.begin(), v.end(), [&](id x, id y) { return head_[x] < head_[y]; });
      ptr_.assign(static_cast<std::size_t>(R), 0);
      hptr_.assign(static_cast<std::size_t>(R), 0);
      meshcast::detail::mt19937_64 rng(0x9e3779b97f4a7c15ULL);
      zobrist_.resize(n);
      for (auto& z : zobrist_) z = rng();
      words_ = (n + 63) / 64;
      bits_.assign(words_, 0);
      // A node costs O(operations); look at the clock often enough on larger pipelines.
      check_mask_ = n > 4096 ? 15 : n > 512 ? 63 : 255;
    }

    /// Improves `best` (and fills `order`) if some lists finish sooner; true if the search
    /// finished (then `best` is optimal).
    bool run(double& best, std::vector<id>& order) {
      struct frame {
        std::vector<id> children;
        std::size_t next = 0;
        bool forced = false;
      };
      std::vector<frame> stack;
      stack.push_back({children(false), 0, forced_});
      std::uint64_t nodes = 0;
      while (!stack.empty()) {
        frame& f = stack.back();
        if (f.next == f.children.size()) {
          stack.pop_back();
          if (!stack.empty()) pop();
          continue;
        }
        const id c = f.children[f.next++];
        const bool parent_forced = f.forced;
        push(c);
        if ((++nodes & check_mask_) == 0 && std::chrono::steady_clock::now() > deadline_) return false;
        const double eps = 1e-9 * best;  // relative: times come in any unit (1e-9 s made 8.6e-9 "proven")
        if (a_.complete()) {
          if (a_.makespan() < best - eps) {
            best = a_.makespan();
            order = a_.order();
          }
          pop();
          continue;
        }
        if (bound() >= best - eps || (self_.reductions && dominated())) {
          pop();
          continue;
        }
        std::vector<id> next = children(parent_forced);
        if (next.empty()) {
          pop();
          continue;
        }
        stack.push_back({std::move(next), 0, forced_});
      }
      return true;
    }

   private:
    double after(id o) const { return tail_[o] - g_.duration(o); }

    void push(id o) {
      const index_t ra = a_.resource_a(o), rb = a_.resource_b(o);
      saved_.push_back({ptr_[ra], rb >= 0 ? ptr_[rb] : 0});
      hsaved_.push_back({hptr_[ra], rb >= 0 ? hptr_[rb] : 0});
      a_.append(o);
      hash_ ^= zobrist_[o];
      bits_[static_cast<std::size_t>(o) / 64] |= std::uint64_t{1} << (o % 64);
      rem_[ra] -= g_.duration(o);
      advance(ra);
      if (rb >= 0) {
        rem_[rb] -= g_.duration(o);
        advance(rb);
      }
    }
    void pop() {
      const id o = a_.order().back();
      const index_t ra = a_.resource_a(o), rb = a_.resource_b(o);
      a_.undo();
      hash_ ^= zobrist_[o];
      bits_[static_cast<std::size_t>(o) / 64] &= ~(std::uint64_t{1} << (o % 64));
      rem_[ra] += g_.duration(o);
      ptr_[ra] = saved_.back().first;
      hptr_[ra] = hsaved_.back().first;
      if (rb >= 0) {
        rem_[rb] += g_.duration(o);
        ptr_[rb] = saved_.back().second;
        hptr_[rb] = hsaved_.back().second;
      }
      saved_.pop_back();
      hsaved_.pop_back();
    }
    void advance(index_t r) {
      while (ptr_[r] < by_tail_[r].size() && a_.appended(by_tail_[r][ptr_[r]])) ++ptr_[r];
      while (hptr_[r] < by_head_[r].size() && a_.appended(by_head_[r][hptr_[r]])) ++hptr_[r];
    }

    double bound() const {
      double lb = a_.makespan();
      for (index_t r = 0; r < a_.resource_count(); ++r)
        if (ptr_[r] < by_tail_[r].size())
          lb = std::max(lb, std::max(a_.free_at(r), head_[by_head_[r][hptr_[r]]]) + rem_[r] + after(by_tail_[r][ptr_[r]]));
      for (id c : a_.candidates()) lb = std::max(lb, a_.est(c) + tail_[c]);
      return lb;
    }

    bool shares(id x, id y) const {
      const index_t x1 = a_.resource_a(x), x2 = a_.resource_b(x), y1 = a_.resource_a(y), y2 = a_.resource_b(y);
      return x1 == y1 || x1 == y2 || (x2 >= 0 && (x2 == y1 || x2 == y2));
    }

    /// The children of the current node, best first; sets forced_.
    std::vector<id> children(bool parent_forced) {
      const std::vector<id>& cand = a_.candidates();
      forced_ = false;
      if (self_.reductions) {
        double min_ect = std::numeric_limits<double>::infinity();
        for (id c : cand) min_ect = std::min(min_ect, a_.ect(c));
        for (id x : cand) {
          const double ex = a_.ect(x);
          if (ex > min_ect) continue;
          bool ok = true;
          for (id d : cand)
            if (d != x && (a_.ect(d) < ex || (shares(x, d) && a_.est(d) < ex))) {
              ok = false;
              break;
            }
          if (ok) {
            forced_ = true;
            return {x};
          }
        }
      }
      std::vector<id> out;
      out.reserve(cand.size());
      const bool commute = self_.reductions && !parent_forced && !a_.order().empty();
      const id last = commute ? a_.order().back() : -1;
      for (id d : cand) {
        if (commute && d < last && !a_.added_by_last(d) && !shares(d, last)) continue;
        out.push_back(d);
      }
      std::sort(out.begin(), out.end(), [&](id x, id y) {
        const double ex = a_.est(x), ey = a_.est(y);
        if (ex != ey) return ex < ey;
        if (tail_[x] != tail_[y]) return tail_[x] > tail_[y];
        return x < y;
      });
      return out;
    }

    /// Whether a stored state with the same appended set is no later anywhere; stores this one
    /// otherwise (while the table has room).
    bool dominated() {
      profile_.clear();
      for (index_t r = 0; r < a_.resource_count(); ++r) profile_.push_back(a_.free_at(r));
      if (g_.source().streams == stream_mode::separate) {
        for (id c = 0; c < g_.compute_count(); ++c)
          if (!a_.appended(c)) profile_.push_back(a_.ready(c));
        for (id t = g_.compute_count(); t < g_.size(); ++t)
          if (!a_.appended(t) && a_.appended(g_.producer(t))) profile_.push_back(a_.end(g_.producer(t)));
      }
      auto& bucket = table_[hash_];
      for (std::size_t e : bucket) {
        if (!std::equal(bits_.begin(), bits_.end(), keys_.begin() + static_cast<std::ptrdiff_t>(e * words_))) continue;
        const double* p = values_.data() + stored_[e];
        bool no_later = true;
        for (std::size_t k = 0; k < profile_.size() && no_later; ++k) no_later = p[k] <= profile_[k];
        if (no_later) return true;
      }
      const std::size_t bytes = 8 * (values_.size() + profile_.size() + keys_.size() + words_) + 16 * stored_.size();
      if (bytes <= self_.max_table_bytes) {
        // Entries of one appended set have equal profile lengths; index by entry number.
        const std::size_t entry = stored_.size();
        stored_.push_back(values_.size());
        keys_.insert(keys_.end(), bits_.begin(), bits_.end());
        values_.insert(values_.end(), profile_.begin(), profile_.end());
        bucket.push_back(entry);
      }
      return false;
    }

    const optimal& self_;
    const graph& g_;
    detail::appender a_;
    std::chrono::steady_clock::time_point deadline_;
    std::vector<double> tail_, rem_;
    std::vector<double> head_;
    std::vector<std::vector<id>> by_tail_, by_head_;
    std::vector<std::size_t> ptr_, hptr_;
    std::vector<std::pair<std::size_t, std::size_t>> saved_, hsaved_;
    std::vector<std::uint64_t> zobrist_;
    std::uint64_t hash_ = 0;
    std::size_t words_ = 0;
    std::vector<std::uint64_t> bits_;
    bool forced_ = false;
    std::uint64_t check_mask_ = 255;
    std::vector<double> profile_;
    std::unordered_map<std::uint64_t, std::vector<std::size_t>> table_;
    std::vector<std::uint64_t> keys_;
    std::vector<double> values_;
    std::vector<std::size_t> stored_;  // offset of each entry's profile in values_
  };
};

}  // namespace meshcast::pipeline

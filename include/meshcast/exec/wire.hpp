// The wire form of a whole schedule (transfers, their models, mode, names and figures) as 64-bit
// words, to hand one rank's schedule to the others; `from_wire(to_wire(s)) == s`. A message from
// elsewhere is checked word by word: a truncated or malformed one is an error, never a crash.
// A fingerprint over plan and schedule lets all ranks check that they run the same thing.
#pragma once

#include <bit>
#include <limits>
#include <span>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../plan/plan.hpp"
#include "../model/schedule.hpp"

namespace meshcast {

namespace detail {
inline constexpr std::int64_t wire_magic = 0x6d63617374310007;  // "mcast1", version 7

class wire_writer {
 public:
  void word(std::int64_t v) { w_.push_back(v); }
  void real(double v) { w_.push_back(std::bit_cast<std::int64_t>(v)); }
  void text(const std::string& s) {
    word(static_cast<std::int64_t>(s.size()));
    for (char c : s) word(static_cast<unsigned char>(c));
  }
  template <class Range>
  void list(const Range& r) {
    word(static_cast<std::int64_t>(r.size()));
    for (auto v : r) word(static_cast<std::int64_t>(v));
  }
  void region(const box& b) {
    word(b.rank);
    for (int d = 0; d < b.rank; ++d) word(b[d].lo), word(b[d].hi);
  }
  std::vector<std::int64_t>&& done() { return std::move(w_); }

 private:
  std::vector<std::int64_t> w_;
};

class wire_reader {
 public:
  explicit wire_reader(const std::vector<std::int64_t>& w) : w_(w) {}
  std::int64_t word() {
    if (at_ >= w_.size()) throw error("a schedule message is truncated");
    return w_[at_++];
  }
  double real() { return std::bit_cast<double>(word()); }
  /// A count that the rest of the message can hold (each item takes at least `per_item` words).
  std::size_t count(std::size_t per_item = 1) {
    const std::int64_t n = word();
    if (n < 0 || static_cast<std::uint64_t>(n) > (w_.size() - at_) / per_item) throw error("a schedule message has a bad count");
    return static_cast<std::size_t>(n);
  }
  std::string text() {
    std::string s(count(), '\0');
    for (char& c : s) {
      const std::int64_t v = word();
      if (v < 0 || v > 255) throw error("a schedule message has a bad character");
      c = static_cast<char>(v);
    }
    return s;
  }
  template <class T>
  std::vector<T> list() {
    std::vector<T> v(count());
    for (T& x : v) {
      const std::int64_t raw = word();
      if (!std::in_range<T>(raw)) throw error("a schedule message has a value out of range");
      x = static_cast<T>(raw);
    }
    return v;
  }
  box region() {
    box b;
    const std::int64_t rank = word();
    if (rank < 0 || rank > max_rank) throw error("a schedule message has a bad rank");
    b.rank = static_cast<int>(rank);
    for (int d = 0; d < b.rank; ++d) b[d].lo = word(), b[d].hi = word();
    return b;
  }
  bool at_end() const noexcept { return at_ == w_.size(); }

 private:
  const std::vector<std::int64_t>& w_;
  std::size_t at_ = 0;
};
}  // namespace detail

inline std::vector<std::int64_t> to_wire(const schedule& s) {
  detail::wire_writer w;
  w.word(detail::wire_magic);
  w.word(static_cast<std::int64_t>(s.mode));
  w.word(s.proven_optimal ? 1 : 0);
  for (double v : {s.makespan_s, s.lower_bound_s, s.physical_bound_s, s.solve_ms, s.solver_bound_s}) w.real(v);
  w.text(s.solver);
  w.text(s.strategy);
  w.word(static_cast<std::int64_t>(s.transfers.size()));
  for (const transfer& t : s.transfers) {
    w.word(static_cast<std::int64_t>(t.kind));
    w.word(t.tensor);
    w.word(t.task);
    w.region(t.region);
    w.word(t.bytes);
    w.word(t.sender);
    w.list(t.receivers);
    w.list(t.waits_for);
    w.word(t.piece_bytes);
    w.word(static_cast<std::int64_t>(t.parts.size()));
    for (const transfer_part& q : t.parts) {
      w.word(q.tensor);
      w.word(q.task);
      w.region(q.region);
      w.word(q.bytes);
    }
  }
  w.word(static_cast<std::int64_t>(s.model.size()));
  for (const transfer_model& m : s.model) {
    w.list(m.resources);
    w.list(m.holders);
    w.list(m.egress_hosts);
    w.list(m.ingress_hosts);
    for (double v : {m.latency_s, m.duration, m.start, m.end}) w.real(v);
    w.word(static_cast<std::int64_t>(m.hold_from.size()));
    for (std::size_t k = 0; k < m.hold_from.size(); ++k) w.real(m.hold_from[k]), w.real(m.hold_until[k]);
    w.word(m.connection);
    w.word(m.eager ? 1 : 0);
  }
  return w.done();
}

inline schedule from_wire(const std::vector<std::int64_t>& words) {
  detail::wire_reader r(words);
  if (r.word() != detail::wire_magic) throw error("a schedule message has the wrong format or version");
  schedule s;
  const std::int64_t mode = r.word();
  if (mode != static_cast<std::int64_t>(execution::ordered) && mode != static_cast<std::int64_t>(execution::concurrent))
    throw error("a schedule message has a bad execution mode");
  s.mode = static_cast<execution>(mode);
  s.proven_optimal = r.word() != 0;
  for (double* v : {&s.makespan_s, &s.lower_bound_s, &s.physical_bound_s, &s.solve_ms, &s.solver_bound_s}) *v = r.real();
  s.solver = r.text();
  s.strategy = r.text();
  s.transfers.resize(r.count(8));
  for (transfer& t : s.transfers) {
    const std::int64_t kind = r.word();
    if (kind < 0 || kind > static_cast<std::int64_t>(transfer_kind::chain)) throw error("a schedule message has a bad transfer kind");
    t.kind = static_cast<transfer_kind>(kind);
    const std::int64_t tensor = r.word();
    if (tensor < 0 || tensor > std::numeric_limits<std::int32_t>::max()) throw error("a schedule message has a bad tensor");
    t.tensor = static_cast<std::int32_t>(tensor);
    t.task = r.word();
    t.region = r.region();
    t.bytes = r.word();
    t.sender = r.word();
    t.receivers = r.list<index_t>();
    t.waits_for = r.list<std::int32_t>();
    t.piece_bytes = r.word();
    std::vector<transfer_part> parts(r.count(4));
    for (transfer_part& q : parts) {
      const std::int64_t part_tensor = r.word();
      if (part_tensor < 0 || part_tensor > std::numeric_limits<std::int32_t>::max()) throw error("a schedule message has a bad tensor");
      q.tensor = static_cast<std::int32_t>(part_tensor);
      q.task = r.word();
      q.region = r.region();
      q.bytes = r.word();
    }
    t.parts.assign(parts.begin(), parts.end());
  }
  s.model.resize(r.count(8));
  for (transfer_model& m : s.model) {
    m.resources = r.list<int>();
    m.holders = r.list<index_t>();
    m.egress_hosts = r.list<index_t>();
    m.ingress_hosts = r.list<index_t>();
    for (double* v : {&m.latency_s, &m.duration, &m.start, &m.end}) *v = r.real();
    const std::size_t holds = r.count(2);
    if (holds != 0 && holds != m.resources.size()) throw error("a schedule message gives holds for other resources than a transfer's");
    for (std::size_t k = 0; k < holds; ++k) {
      m.hold_from.push_back(r.real());
      m.hold_until.push_back(r.real());
      if (!(0 <= m.hold_from[k] && m.hold_from[k] <= m.hold_until[k] && m.hold_until[k] <= m.duration))
        throw error("a schedule message holds a resource outside a transfer's time");
    }
    const std::int64_t connection = r.word();
    if (connection < -1 || connection > std::numeric_limits<int>::max()) throw error("a schedule message has a bad connection slot");
    m.connection = static_cast<int>(connection);
    m.eager = r.word() != 0;
  }
  if (!r.at_end()) throw error("a schedule message has trailing words");
  return s;
}

/// FNV-1a over the plans' layouts, element sizes, devices and the schedule's wire form.
inline std::uint64_t fingerprint(std::span<const plan> plans, const schedule& s) {
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&](std::int64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ static_cast<std::uint8_t>(v >> (8 * i))) * 1099511628211ULL;
  };
  for (const plan& p : plans) {
  for (const layout_value* l : {&p.src, &p.dst}) {
    for (int d = 0; d < l->mesh.rank; ++d) mix(l->mesh[d]);
    for (int d = 0; d < l->shape.rank; ++d) mix(l->shape[d]);
    for (int d = 0; d < l->spec.rank; ++d) {
      mix(-1 - l->spec.dims[d].axis_count);
      for (int a = 0; a < l->spec.dims[d].axis_count; ++a) mix(l->spec.dims[d].axes[a]);
    }
  }
  mix(p.element_bytes);
  for (index_t d : p.dst_devices) mix(d);
  }
  for (std::int64_t v : to_wire(s)) mix(v);
  return h;
}
inline std::uint64_t fingerprint(const plan& p, const schedule& s) { return fingerprint(std::span<const plan>(&p, 1), s); }

}  // namespace meshcast

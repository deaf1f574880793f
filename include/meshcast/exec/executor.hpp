// The generic executor: runs any schedule on one rank, in the schedule's execution mode. The
// backend is a template parameter, so every call below resolves at compile time: no virtual
// calls, no tables. Each transfer says what it is (its kind), so no strategy is needed here.
//
// The constructor keeps only this rank's part of the schedule, as a list of steps with their
// message buffers, so that `run` does what a hand-written loop would.
//
// ordered: the rank takes its steps in schedule order on two lanes, one for what it sends and one
//   for what it receives (a device is full duplex); a step starts when the previous step of each
//   of its lanes is complete. A send is complete when the receiver has the data: over
//   tag-matched transports the receiver answers with a one-byte acknowledgement each message
//   that the backend may complete before delivery (an eager send is done once its bytes are
//   buffered, a synchronous one once its first fragment matched; a rendezvous send once its data
//   has gone, so it needs none: an acknowledgement crosses the receiver's NIC, where it can queue
//   behind data). Such a send of more than 64 KiB also waits for its receiver's clearance, sent
//   when the receive step starts: eager data would otherwise flow as soon as it is sent, into a
//   NIC still busy with the transfer before it in schedule order (a rendezvous is held back by
//   its handshake). Over NCCL a send holds its stream until received. Before a step the rank waits for a token from
//   each device that used one of the step's NIC directions last (devices of one host share their NIC: tokens
//   go between devices of one host, never across a NIC where they would queue behind data), and
//   when it completes it passes tokens on. Every NIC direction and every lane then carries one
//   transfer at a time in schedule order, as the ordered model assumes. While it waits, a rank
//   completes whatever else it has posted, so tokens never wait on it. Between two devices, a
//   transfer that the model does not start with the last one the other way (connections.hpp)
//   waits for it to complete.
//   A send to a peer and a receive from the same peer that the model starts at one time (the two
//   directions of an exchange) are posted together, the rendezvous send first. Over a transport
//   with one connection per pair of devices (UCX over TCP), the handshake of a transfer travels
//   against the other direction's data: posted apart, one end's receive lets the reverse data
//   flow first, and the handshake of its own send then waits behind all of it (a transfer took
//   twice its time). Posted together, both handshakes go before either direction's data.
// concurrent: every step is posted at once, a forward when the receives it passes on are complete
//   (over NCCL, whose calls go in one order on every rank, steps are posted in list order).
// Every transfer a rank waits for comes earlier in the schedule, so no cycle of waits can form in
// either mode.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "backend_traits.hpp"
#include "executor/step.hpp"
#include "message_tags.hpp"
#include "../plan/plan.hpp"
#include "../schedule/bundle_messages.hpp"
#include "../model/schedule.hpp"
#include "../core/detail/shared_memory.hpp"
#include "../core/error.hpp"
#include "../core/detail/kept.hpp"
#include "../core/detail/pause.hpp"
#include "../core/detail/number_text.hpp"
#include "pack.hpp"
#include "schedule_fits.hpp"
#include "staging_arena.hpp"

namespace meshcast {

/// Tag of the executor's constructor that leaves the network alone: `connect()` then makes the
/// groups. For a caller that agrees with the other ranks in between (api/front_end.hpp), so that
/// one rank failing to set up (out of memory) does not leave the others waiting in a group's setup.
struct connect_later_t {
  explicit connect_later_t() = default;
};
inline constexpr connect_later_t connect_later{};

template <class Backend>
class executor {
  static_assert(backend<Backend>,
                "The executor's transport must model meshcast::backend (exec/backend.hpp): memory_type, request, group, "
                "send, recv, make_group, broadcast, chain, wait, test, cancel (noexcept), rounds, flush, device, size and "
                "timeout_s.");
  static_assert(sizeof(backend_traits<Backend>) > 0);  // instantiates the protocol's checks

 public:
  /// `s` is the schedule, the same on every rank. The executor keeps its own copy of the backend
  /// (a handle: communicator, stream), so it never refers to a temporary. Throws
  /// `meshcast::error` when the communicator has fewer ranks than the plan has devices or the
  /// schedule does not fit the plan.
  /// `max_staging_bytes` caps the message buffers this rank holds at once (0: no cap); see
  /// `plan_staging`.
  executor(Backend b, const plan& p, const schedule& s, std::size_t max_staging_bytes = 0)
      : executor(std::move(b), std::span<const plan>(&p, 1), s, max_staging_bytes) {}
  executor(Backend b, const plan& p, const schedule& s, std::size_t max_staging_bytes, connect_later_t later)
      : executor(std::move(b), std::span<const plan>(&p, 1), s, max_staging_bytes, later) {}

  /// A batch: `plans[k]` is the plan of tensor k; the schedule's transfers name their tensor.
  executor(Backend b, std::span<const plan> plans, const schedule& s, std::size_t max_staging_bytes = 0)
      : executor(std::move(b), plans, s, max_staging_bytes, connect_later) {
    connect();
  }
  /// Everything the constructor above does on this rank alone (it throws what that one throws),
  /// then nothing on the network: `connect()` must follow before `run`.
  executor(Backend b, std::span<const plan> plans, const schedule& s, std::size_t max_staging_bytes, connect_later_t);
  /// Makes the broadcast and chain groups this rank is a member of, in schedule order: a
  /// collective over each group's members, bounded by the backend's timeout. Once.
  void connect();
  bool connected() const noexcept { return connected_; }

  /// What one step of the last run did, in seconds from the start of `run` (kept only after
  /// `record_times(true)`): waiting for tokens from `wait`, moving bytes from `start` to `end`.
  struct step_time {
    std::size_t transfer;
    double wait, start, end;
  };
  void record_times(bool on) { record_ = on; }
  const std::vector<step_time>& times() const noexcept { return times_; }
  /// When the last run started, on this process's steady clock (seconds since its epoch): ranks
  /// that share a machine, and so that clock, line their times up by it.
  double run_began_s() const noexcept { return std::chrono::duration<double>(began_.time_since_epoch()).count(); }

  /// Bytes this rank's source and destination shards of tensor `k` must have (row-major over
  /// their tiles).
  std::size_t source_bytes(std::size_t k = 0) const noexcept { return tensors_[k].source_bytes; }
  std::size_t destination_bytes(std::size_t k = 0) const noexcept { return tensors_[k].destination_bytes; }
  std::size_t tensors() const noexcept { return tensors_.size(); }
  execution mode() const noexcept { return mode_; }
  /// Whether a run failed: the executor then runs no more (exec/executor/run.hpp).
  bool failed() const noexcept { return failed_; }
  /// Bytes of message buffers this rank holds (packing, receiving, forwarding), beyond its shards:
  /// one block, allocated at construction and never above the staging cap; 0 while released.
  std::size_t staging_bytes() const noexcept { return block_ ? arena_.capacity() : 0; }
  /// Frees the message buffers until `acquire_staging` or the next run makes them again, so that
  /// an executor kept between uses (weight sync between RL steps, a benchmark's other sizes)
  /// holds only its steps, groups and token bytes. A run makes them on this rank alone, with no
  /// agreement: the front ends agree on it first. A failed executor has already handed them to
  /// keep_until_exit. Over CUDA the memory is cudaFree's, which waits for the device's work.
  void release_staging() noexcept { block_.reset(); }
  /// Makes the message buffers again after `release_staging` (nothing while they are held). Local:
  /// a front end calls it before agreeing on a run, so that one rank out of memory fails all.
  void acquire_staging() {
    if (!block_ && arena_.capacity() > 0) block_ = b_.memory().allocate(arena_.capacity());
  }
  /// Whether the cap binds here: the steps' buffers then share the block as they run.
  bool staging_shared() const noexcept { return shared_staging_; }

  /// Reshards: reads `source` (never written), fills `destination`. May be called repeatedly.
  void run(std::span<const std::byte> source, std::span<std::byte> destination) {
    run(std::span<const std::span<const std::byte>>(&source, 1), std::span<const std::span<std::byte>>(&destination, 1));
  }
  /// Reshards a batch: `sources[k]` and `destinations[k]` are this rank's shards of tensor k.
  void run(std::span<const std::span<const std::byte>> sources, std::span<const std::span<std::byte>> destinations);

 private:
  static constexpr std::size_t none = static_cast<std::size_t>(-1);
  using request = typename Backend::request;
  using step = detail::step<request>;  // what the schedule fixes, ordered links, per-run state

  void check_message_sizes(std::span<const plan> plans, const schedule& s);
  void index_groups(const schedule& s);  // which transfers share a group, and its members

  void plan_steps(const schedule& s, std::span<const plan> plans);

  // A bundle sent point to point whose every piece is contiguous in the sender's shard (its source
  // shard, or for a forward its destination shard) and in each receiver's destination shard goes
  // as one message per piece, from and into the shards: no message buffer. Its messages leave back
  // to back, so they pay about one latency, as the model charges the bundle. Every rank decides
  // alike from the plans, so both ends of a message agree on its pieces; the model applies the
  // same rule (schedule/bundle_messages.hpp).
  static bool in_place(std::span<const plan> plans, const transfer& t);
  // Each piece's offset in this rank's source (or destination) shard; in_place said they fit.
  std::vector<std::size_t> offsets_in(const std::vector<transfer_part>& parts, bool source) const;

  // Message buffers under the staging cap `cap` (0: none). Where every step's buffer fits in the
  // cap together, each keeps its own piece of the block for good (a repeated run allocates
  // nothing). Otherwise the cap binds, a forward packs what it passes on from the destination
  // shard (so a receive's buffer is free once unpacked), and
  // - ordered mode: a lane carries one step at a time, so a rank needs two buffers at once at most,
  //   one per lane. Each lane gets one slot, as large as its largest step; plans cut to half the
  //   cap (cut_for_staging) make both fit, and the run waits for nothing the model does not know.
  // - concurrent mode: steps take their buffers from the block in list order as room allows and
  //   give them back when complete. The earliest unfinished transfer of the schedule then always
  //   finds room at both ends: every earlier one gave its buffer back, no later one took one first.
  void plan_staging(std::size_t cap);
  // Shared staging: the steps from next_to_take_ on take their buffers, in list order, while the
  // block has room.
  void take_buffers();
  bool has_buffer(const step& x) const noexcept { return !shared_staging_ || !x.staged || x.buffer != none; }
  void release(step& x) {
    if (shared_staging_ && x.staged && x.buffer != none) arena_.give(x.buffer), x.buffer = none;
  }
  // Before a run: every step's per-run state afresh, the shared block empty.
  void reset_steps();
  void abandon_run() noexcept;  // a run failed: withdraw what can be, keep the buffers (run.hpp)

  // Ordered mode: each step's lanes and the step before it on each.
  void plan_lanes(const schedule& s);

  // Ordered mode: pairs a send to one peer with the receive from that peer that the model starts
  // at the same time (exactly: one model time, on every rank). Posting one waits until the other
  // may start too. They are paired only where everything either waits on (the steps before it on
  // its lanes, the receives it passes on, the transfers whose tokens it takes) starts earlier in
  // the model: then every wait points to an earlier model time, or to the partner at the same
  // time that itself waits only on earlier ones, and no cycle of waits can form. That holds where
  // the model's times follow the schedule's order (as `simulate` sets them); a schedule whose
  // times do not (one read from elsewhere) is run without pairing.
  static bool times_follow_order(const schedule& s);
  void plan_exchanges(const schedule& s);

  // Ordered mode: who passes each NIC direction (or any other resource two devices share) on to
  // whom, in schedule order.
  void plan_tokens(const schedule& s);
  // Ordered mode over tag-matched transports: a send that the backend may complete before
  // delivery waits for its receivers' acknowledgements (both ends decide alike: same size).
  bool acknowledged() const noexcept { return mode_ == execution::ordered && backend_traits<Backend>::port_tokens; }
  bool acknowledged(const step& x) const noexcept {
    if (!acknowledged()) return false;
    if constexpr (backend_traits<Backend>::sends == send_completion::early_by_size)
      return b_.send_completes_early(smallest_message(x));
    else return backend_traits<Backend>::sends == send_completion::early_always;
  }
  // The smallest message a step sends (a bundle in place sends one per piece).
  static std::size_t smallest_message(const step& x) noexcept {
    std::size_t least = x.bytes;
    for (std::size_t k = 0; k < x.part_at.size(); ++k) least = std::min(least, static_cast<std::size_t>(x.parts[k].bytes));
    return least;
  }
  void plan_acknowledgements();
  static int ack_tag(const step& x) noexcept { return message_tag(message_kind::acknowledgement, static_cast<std::size_t>(x.tag)); }
  static int clear_tag(const step& x) noexcept { return message_tag(message_kind::clearance, static_cast<std::size_t>(x.tag)); }
  // An acknowledged message longer than this waits for its receiver's clearance (shorter ones
  // would hardly share a NIC, and would pay a round trip each).
  static constexpr std::size_t cleared_above = std::size_t{64} << 10;
  bool cleared(const step& x) const noexcept { return x.bytes > cleared_above && acknowledged(x); }
  static void add_token(std::vector<std::pair<index_t, int>>& list, index_t device, int tag) {
    if (std::find(list.begin(), list.end(), std::pair{device, tag}) == list.end()) list.push_back({device, tag});
  }

  std::byte* buffer(std::size_t offset) { return block_->data() + offset; }
  double clock() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count(); }
  void mark(step& x, double step_time::*field) {
    if (!record_) return;
    step_time& t = times_[static_cast<std::size_t>(&x - steps_.data())];
    t.transfer = x.transfer;
    t.*field = clock();
  }

  std::byte* token() { return scratch_->data(); }
  std::byte* token_in(std::size_t slot) { return scratch_->data() + 1 + slot; }

  // Ordered mode: whether a posted step is complete, without blocking.
  bool completed(step& x);
  // Ordered mode: a step is complete: unpack, pass the NIC tokens on.
  void finish(step& x);
  void progress();
  // Polls until `ready()`, completing what is in flight meanwhile; gives up after the backend's
  // timeout without progress, naming the devices this rank waits on.
  template <class Ready>
  void await(Ready&& ready);
  [[noreturn]] void stalled(double limit) {
    std::vector<int> peers;
    for (std::size_t k : in_flight_) {
      const step& x = steps_[k];
      for (index_t d : x.peers) peers.push_back(static_cast<int>(d));
      // A collective has no peers of its own: a chain waits on its neighbours, a broadcast on its group.
      if (x.how == step::collective && x.group != none && groups_[x.group]) {
        const auto& m = groups_[x.group]->members;
        const auto at = static_cast<std::size_t>(std::find(m.begin(), m.end(), me_) - m.begin());
        for (std::size_t j = 0; j < m.size(); ++j)
          if (j != at && (x.what != transfer_kind::chain || j + 1 == at || j == at + 1)) peers.push_back(static_cast<int>(m[j]));
      }
    }
    // Ordered mode, nothing in flight: the next steps of the lanes wait for NIC tokens.
    if (peers.empty())
      for (step& x : steps_)
        if (!x.posted && (x.prev_send == none || steps_[x.prev_send].done) &&
            (x.prev_receive == none || steps_[x.prev_receive].done))
          for (std::size_t t = 0; t < x.token_reqs.size(); ++t)
            if (!b_.test(x.token_reqs[t])) peers.push_back(static_cast<int>(x.tokens_in[t].first));
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    std::string who;
    for (std::size_t i = 0; i < peers.size() && i < 16; ++i) who += (i ? ", " : "") + std::to_string(peers[i]);
    throw timeout_error("device " + std::to_string(me_) + ": no progress for " + detail::number(limit) +
                            " s waiting on device(s) " + (who.empty() ? std::string("?") : who) +
                            " (unreachable, stopped or gone)",
                        peers);
  }

  // A step may start: the previous steps of its lanes are complete, so are the receives it
  // passes on, and the tokens of its NIC directions have arrived.
  bool may_start(step& x);

  // The two lanes advance independently: each starts its next step as soon as it may, so a
  // device receives while a send of its waits for a token, and no step waits behind a step of
  // the other lane that comes earlier in the schedule.
  // Ordered mode on a backend whose sends hold its stream until matched (NCCL): a device's
  // transfers that the model starts at one time form one group (a round: its sends and receives
  // progress together, so a device sends while it receives), rounds in the model's time order.
  // Both ends of a transfer put it in the round of its start time, so the rounds of all devices
  // line up and none waits for a later one.
  void run_ordered_in_rounds();
  void plan_rounds();  // round_order_, made in the setup: a run allocates nothing for it

  void run_ordered();
  // Posts a step's transfer (a send packs first; a forward sends what arrived).
  void post_step(step& x);

  // A bundle's pieces, one after another in its buffer (a forward's from what it received).
  void pack_parts(step& x);

  // Sends a posted step's message to each receiver (and, acknowledged, waits for their answers).
  void send_data(step& x);

  // Everything is posted at once; a forward is posted when the receives it passes on are
  // complete. While it waits, the rank keeps every posted transfer moving (a chain's first member
  // passes its chunks on only when asked), so no wait of one rank holds up another's.
  void run_concurrent();
  void post_concurrent(step& x, std::size_t k);
  bool inputs_arrived(const step& x) const;
  // Tag-matched transports (MPI): every step that can go is posted at once, a forward as soon as
  // its inputs are in, so no receive or send behind a waiting forward is posted late (its sender
  // would stall in the rendezvous meanwhile; the concurrent model starts it at time 0). Messages
  // of one tag between one pair match in posting order, so a step is never posted before an
  // earlier step of its tag (tags repeat beyond `transfer_tags` transfers): both ends then post
  // them in list order. Such a step waits only for earlier ones, so no cycle of waits forms.
  void run_concurrent_eager();
  // Transports whose operations must be issued in one order on every rank (NCCL): list order; a
  // forward first completes the receives it passes on.
  void run_concurrent_in_list_order();

  // Which bounded group a transfer's operations go in, where the backend bounds its groups (NCCL):
  // transfers [g * L, (g + 1) * L) of the schedule. Every rank closes its groups at the same
  // transfer indices and issues them in that order, so each group's peers are in the matching one.
  std::size_t group_of_transfer(std::size_t transfer) const noexcept {
    if constexpr (requires(const Backend& b) { { b.max_group_transfers() } -> std::convertible_to<std::size_t>; })
      return transfer / b_.max_group_transfers();
    else
      return 0;
  }

  Backend b_;
  execution mode_;
  bool record_ = false;
  std::chrono::steady_clock::time_point began_;
  std::vector<step_time> times_;
  index_t me_ = -1;
  struct tensor_state {  // one per tensor of the batch: this rank's tiles and the run's buffers
    std::size_t eb = 1;
    box src_tile{}, dst_tile{};
    std::size_t source_bytes = 0, destination_bytes = 0;
    const std::byte* src = nullptr;
    std::byte* dst = nullptr;
  };
  std::vector<tensor_state> tensors_;
  std::vector<detail::shard_range> shard_ranges_;  // the shared-memory check's, kept between runs
  std::vector<step> steps_;
  std::vector<std::size_t> step_of_;  // transfer -> my step (none: not mine)
  std::optional<typename Backend::memory_type::buffer> block_;  // the message buffers (staging)
  detail::staging_arena arena_;    // where each step's buffer lies in block_
  bool shared_staging_ = false;    // concurrent mode under a binding cap: taken and given back as steps run
  std::size_t next_to_take_ = 0;   // shared staging: steps take their buffers in list order, from here
  std::optional<typename Backend::memory_type::buffer> scratch_;  // the token byte
  std::optional<typename Backend::memory_type::buffer> acks_;     // acknowledgement bytes
  std::optional<typename Backend::memory_type::buffer> clears_;   // clearance bytes
  std::vector<std::size_t> in_flight_;  // ordered mode: posted steps not yet complete
  std::size_t finished_ = 0;            // steps finished so far: await's sign of progress
  std::vector<std::size_t> waiting_, still_;  // concurrent mode over tag-matched transports: steps not yet posted
  std::vector<unsigned char> held_;           // and their tags (run_concurrent_eager)
  bool held_clear_ = false;                   // held_ is sized and all zero (the last pass did not throw)
  std::size_t first_send_ = none, first_receive_ = none;  // ordered mode: each lane's first step
  std::vector<std::size_t> round_order_;  // ordered mode in rounds: the steps by model start time
  std::vector<request> tokens_sent_;
  bool failed_ = false;  // a run failed: this executor runs no more
  std::vector<std::optional<typename Backend::group>> groups_;  // made by connect()
  std::vector<std::vector<index_t>> group_members_;  // each group's, sender first; empty: not mine
  std::vector<std::size_t> group_of_;  // transfer -> its group (none: not a collective)
  bool connected_ = false;
};

}  // namespace meshcast

// The member functions, one file per part (each includes this one).
#include "executor/setup.hpp"
#include "executor/run.hpp"
#include "executor/staging.hpp"
#include "executor/ordering.hpp"
#include "executor/steps.hpp"
#include "executor/ordered.hpp"
#include "executor/concurrent.hpp"

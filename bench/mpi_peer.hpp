// The job of a reshard done the way an MPI user would without meshcast: the one MPI collective
// that fits, its data packed, moved and unpacked by hand and checked like meshcast's.
//   same devices, destination whole on every device:  MPI_Allgatherv of one holder per tile
//   same devices, anything else:                       MPI_Alltoallv of every piece
//   destination whole on devices that hold nothing:    MPI_Bcast of each tile from one holder,
//                                                      over a communicator of it and the receivers
//   otherwise:                                         MPI_Isend/MPI_Irecv of every piece at once
// Every collective is the non-blocking form waited on with a deadline, like meshcast's own waits.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <meshcast/benchmark.hpp>
#include <meshcast/core/detail/kept.hpp>
#include <meshcast/exec/pack.hpp>

namespace meshcast::bench {

/// One piece of the job: `region` goes from `holder` to `receiver`.
struct peer_piece {
  int holder, receiver;
  box region;
};

enum class peer_kind { allgatherv, alltoallv, bcast, isend };

inline const char* peer_name(peer_kind k) {
  switch (k) {
    case peer_kind::allgatherv: return "MPI_Allgatherv";
    case peer_kind::alltoallv: return "MPI_Alltoallv";
    case peer_kind::bcast: return "MPI_Bcast";
    case peer_kind::isend: return "MPI_Isend";
  }
  return "?";
}

/// The collective that fits the plan (see the file's comment).
inline peer_kind peer_for(const plan& p) {
  std::vector<index_t> s = p.src_devices, d = p.dst_devices;
  std::sort(s.begin(), s.end()), std::sort(d.begin(), d.end());
  const box whole = p.src.whole();
  bool dst_whole = true;
  for (index_t r : p.dst_devices) dst_whole = dst_whole && p.destination_tile(r) == whole;
  bool overlap = false;
  for (index_t r : d) overlap = overlap || std::binary_search(s.begin(), s.end(), r);
  if (s == d) return dst_whole ? peer_kind::allgatherv : peer_kind::alltoallv;
  if (dst_whole && !overlap) return peer_kind::bcast;
  return peer_kind::isend;
}

/// Every piece: for each receiver and each distinct source tile it overlaps, the part it needs,
/// sent by the receiver itself when it holds that tile, else by a holder chosen round-robin over
/// the receivers (so replicated sources share the sending, as a careful MPI user would).
inline std::vector<peer_piece> peer_pieces(const plan& p) {
  std::vector<peer_piece> out;
  for (index_t r : p.dst_devices) {
    const box want = p.destination_tile(r);
    for (std::size_t g = 0; g + 1 < p.src_groups.offsets.size(); ++g) {
      const auto holders = p.src_groups[static_cast<index_t>(g)];
      if (holders.empty()) continue;
      const box region = intersect(p.source_tile(holders[0]), want);
      if (region.empty()) continue;
      index_t h = holders[static_cast<std::size_t>(r) % holders.size()];
      for (index_t x : holders) h = x == r ? r : h;
      out.push_back({static_cast<int>(h), static_cast<int>(r), region});
    }
  }
  return out;
}

namespace detail_peer {
struct peer_state;
// On a timeout the operations stay pending, and a late peer may still complete them: the state
// holding their buffers (`st`, and `also` where the operation has buffers of its own) is kept for
// the rest of the process instead of freed under MPI.
template <class... Also>
void wait_all(std::vector<MPI_Request>& rs, const std::shared_ptr<peer_state>& st, double timeout_s, const char* what,
              const std::shared_ptr<Also>&... also) {
  const detail::deadline stop(timeout_s, "the MPI peer's timeout");
  for (MPI_Request& r : rs)
    if (!detail::wait_until(r, stop)) {
      detail::keep_until_exit(st);
      (detail::keep_until_exit(also), ...);
      throw timeout_error(std::string("the MPI peer's ") + what + " did not finish in time", {});
    }
}
inline int as_int(std::size_t v, const char* what) {
  if (v > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw error(std::string(what) + " of " + std::to_string(v) + " bytes is past what one MPI count holds");
  return static_cast<int>(v);
}

struct peer_state {
  const plan p;
  MPI_Comm comm;
  int me;
  double timeout_s;
  detail::checked_buffers data;
  std::vector<peer_piece> pieces;
  std::vector<MPI_Comm> groups;                  // bcast: one communicator per source tile
  std::vector<int> group_root;                    // bcast: the root's rank in it (-1: not a member)
  std::vector<std::vector<std::byte>> staging;    // bcast/allgatherv/alltoallv/isend buffers
  peer_state(const plan& pl, MPI_Comm c, int rank, std::size_t src_elems, std::size_t dst_elems, double t)
      : p(pl), comm(c), me(rank), timeout_s(t), data(pl, rank, src_elems, dst_elems) {}
  ~peer_state() {
    for (MPI_Comm& g : groups)
      if (g != MPI_COMM_NULL) MPI_Comm_free(&g);
  }
  std::size_t eb() const { return static_cast<std::size_t>(p.element_bytes); }
  box src_tile() const { return p.source_tile(me); }
  box dst_tile() const { return p.destination_tile(me); }
};

inline std::size_t bytes_of(const box& b, std::size_t eb) { return tile_bytes(b, eb); }

// MPI_Alltoallv: each rank packs its pieces by receiver, receives by holder, unpacks.
inline std::function<void()> alltoallv(std::shared_ptr<peer_state> st) {
  struct plan_a2a {
    std::vector<peer_piece> sends, recvs;
    std::vector<int> scount, sdispl, rcount, rdispl;
    std::vector<std::byte> sbuf, rbuf;
  };
  auto a = std::make_shared<plan_a2a>();
  int n = 0;
  MPI_Comm_size(st->comm, &n);
  a->scount.assign(static_cast<std::size_t>(n), 0), a->rcount = a->scount;
  for (const peer_piece& x : st->pieces) {
    if (x.holder == st->me) a->sends.push_back(x);
    if (x.receiver == st->me) a->recvs.push_back(x);
  }
  std::stable_sort(a->sends.begin(), a->sends.end(), [](auto& l, auto& r) { return l.receiver < r.receiver; });
  std::stable_sort(a->recvs.begin(), a->recvs.end(), [](auto& l, auto& r) { return l.holder < r.holder; });
  std::size_t at = 0;
  for (const peer_piece& x : a->sends) a->scount[static_cast<std::size_t>(x.receiver)] += as_int(bytes_of(x.region, st->eb()), "a piece");
  for (const peer_piece& x : a->recvs) a->rcount[static_cast<std::size_t>(x.holder)] += as_int(bytes_of(x.region, st->eb()), "a piece");
  for (auto* v : {&a->scount, &a->rcount}) {
    auto& displ = v == &a->scount ? a->sdispl : a->rdispl;
    at = 0;
    for (int c : *v) displ.push_back(as_int(at, "a rank's message")), at += static_cast<std::size_t>(c);
    (v == &a->scount ? a->sbuf : a->rbuf).resize(at);
  }
  return [st, a] {
    std::size_t at = 0;
    for (const peer_piece& x : a->sends)
      pack(st->src_tile(), st->data.in, x.region, st->eb(), std::span(a->sbuf).subspan(at)), at += bytes_of(x.region, st->eb());
    std::vector<MPI_Request> r(1);
    detail::mpi_check(MPI_Ialltoallv(a->sbuf.data(), a->scount.data(), a->sdispl.data(), MPI_BYTE, a->rbuf.data(), a->rcount.data(),
                             a->rdispl.data(), MPI_BYTE, st->comm, r.data()), "MPI_Ialltoallv");
    wait_all(r, st, st->timeout_s, "MPI_Ialltoallv", a);
    at = 0;
    for (const peer_piece& x : a->recvs)
      unpack(std::span<const std::byte>(a->rbuf).subspan(at), st->dst_tile(), st->data.out, x.region, st->eb()),
          at += bytes_of(x.region, st->eb());
  };
}

// MPI_Allgatherv: the first holder of each tile gives it, every rank unpacks every tile.
inline std::function<void()> allgatherv(std::shared_ptr<peer_state> st) {
  int n = 0;
  MPI_Comm_size(st->comm, &n);
  auto counts = std::make_shared<std::vector<int>>(static_cast<std::size_t>(n), 0);
  auto displs = std::make_shared<std::vector<int>>();
  for (std::size_t g = 0; g + 1 < st->p.src_groups.offsets.size(); ++g) {
    const auto holders = st->p.src_groups[static_cast<index_t>(g)];
    if (!holders.empty()) (*counts)[static_cast<std::size_t>(holders[0])] = as_int(bytes_of(st->p.source_tile(holders[0]), st->eb()), "a tile");
  }
  std::size_t at = 0;
  for (int c : *counts) displs->push_back(as_int(at, "the whole tensor")), at += static_cast<std::size_t>(c);
  st->staging.assign(1, std::vector<std::byte>(at));
  return [st, counts, displs] {
    std::vector<MPI_Request> r(1);
    const int mine = (*counts)[static_cast<std::size_t>(st->me)];
    detail::mpi_check(MPI_Iallgatherv(st->data.in.data(), mine, MPI_BYTE, st->staging[0].data(), counts->data(), displs->data(), MPI_BYTE,
                              st->comm, r.data()), "MPI_Iallgatherv");
    wait_all(r, st, st->timeout_s, "MPI_Iallgatherv", counts, displs);
    for (std::size_t k = 0; k < counts->size(); ++k)
      if ((*counts)[k] > 0)
        unpack(std::span<const std::byte>(st->staging[0]).subspan(static_cast<std::size_t>((*displs)[k])), st->dst_tile(), st->data.out,
               st->p.source_tile(static_cast<index_t>(k)), st->eb());
  };
}

// MPI_Bcast: per source tile, its first holder broadcasts it over a communicator of itself and
// every receiver (made once, outside the timing); all broadcasts are in flight together. This
// makes the buffers; bcast_groups, the communicators, once every rank holds its buffers.
inline std::function<void()> bcast(std::shared_ptr<peer_state> st) {
  const bool receiver = !st->dst_tile().empty();
  std::vector<box> tiles;
  for (std::size_t g = 0; g + 1 < st->p.src_groups.offsets.size(); ++g) {
    const auto holders = st->p.src_groups[static_cast<index_t>(g)];
    if (holders.empty()) continue;
    st->group_root.push_back(holders[0] == st->me ? 1 : 0);
    tiles.push_back(st->p.source_tile(holders[0]));
    (void)as_int(bytes_of(tiles.back(), st->eb()), "a tile");  // refused here, before any rank splits
    st->staging.emplace_back(receiver && tiles.back() != st->dst_tile() ? bytes_of(tiles.back(), st->eb()) : 0);
  }
  st->groups.reserve(tiles.size());
  return [st, tiles] {
    std::vector<MPI_Request> r;
    for (std::size_t g = 0; g < tiles.size(); ++g) {
      if (st->groups[g] == MPI_COMM_NULL) continue;
      const int count = as_int(bytes_of(tiles[g], st->eb()), "a tile");
      std::byte* at = st->group_root[g] ? st->data.in.data() : st->staging[g].empty() ? st->data.out.data() : st->staging[g].data();
      r.push_back(MPI_REQUEST_NULL);
      detail::mpi_check(MPI_Ibcast(at, count, MPI_BYTE, 0, st->groups[g], &r.back()), "MPI_Ibcast");
    }
    wait_all(r, st, st->timeout_s, "MPI_Ibcast");
    for (std::size_t g = 0; g < tiles.size(); ++g)
      if (st->groups[g] != MPI_COMM_NULL && !st->group_root[g] && !st->staging[g].empty())
        unpack(std::span<const std::byte>(st->staging[g]), st->dst_tile(), st->data.out, tiles[g], st->eb());
  };
}

// bcast's communicators, one MPI_Comm_split per source tile (collective).
inline void bcast_groups(peer_state& st) {
  const bool receiver = !st.dst_tile().empty();
  for (const int root : st.group_root) {
    MPI_Comm c = MPI_COMM_NULL;
    detail::mpi_check(MPI_Comm_split(st.comm, root || receiver ? 0 : MPI_UNDEFINED, root ? 0 : st.me + 1, &c), "MPI_Comm_split");
    st.groups.push_back(c);  // reserved by bcast: no allocation between two splits
  }
}

// MPI_Isend/MPI_Irecv of every piece at once (pieces between one pair match in order).
inline std::function<void()> isend(std::shared_ptr<peer_state> st) {
  std::vector<std::size_t> sends, recvs, local;
  for (std::size_t i = 0; i < st->pieces.size(); ++i) {
    const peer_piece& x = st->pieces[i];
    if (x.holder == st->me && x.receiver == st->me) local.push_back(i);
    else if (x.holder == st->me) sends.push_back(i);
    else if (x.receiver == st->me) recvs.push_back(i);
  }
  for (std::size_t i : sends) st->staging.emplace_back(bytes_of(st->pieces[i].region, st->eb()));
  for (std::size_t i : recvs) st->staging.emplace_back(bytes_of(st->pieces[i].region, st->eb()));
  return [st, sends, recvs, local] {
    std::vector<MPI_Request> r(sends.size() + recvs.size(), MPI_REQUEST_NULL);
    for (std::size_t k = 0; k < recvs.size(); ++k) {
      auto& buf = st->staging[sends.size() + k];
      detail::mpi_check(MPI_Irecv(buf.data(), as_int(buf.size(), "a piece"), MPI_BYTE, st->pieces[recvs[k]].holder, 0, st->comm, &r[sends.size() + k]),
                "MPI_Irecv");
    }
    for (std::size_t k = 0; k < sends.size(); ++k) {
      auto& buf = st->staging[k];
      pack(st->src_tile(), st->data.in, st->pieces[sends[k]].region, st->eb(), buf);
      detail::mpi_check(MPI_Isend(buf.data(), as_int(buf.size(), "a piece"), MPI_BYTE, st->pieces[sends[k]].receiver, 0, st->comm, &r[k]), "MPI_Isend");
    }
    for (std::size_t i : local) copy_region(st->src_tile(), st->data.in, st->dst_tile(), st->data.out, st->pieces[i].region, st->eb());
    wait_all(r, st, st->timeout_s, "MPI_Isend/MPI_Irecv");
    for (std::size_t k = 0; k < recvs.size(); ++k)
      unpack(std::span<const std::byte>(st->staging[sends.size() + k]), st->dst_tile(), st->data.out, st->pieces[recvs[k]].region, st->eb());
  };
}
}  // namespace detail_peer

/// The MPI peer's job for plan `p` on `comm` (one rank per device, device d = rank d), data checked
/// like meshcast's; its buffers and communicators are made (collectively) before its first run. `bound_s` is the
/// physical bound of the same job, for the counters.
inline timed_job mpi_peer_job(const plan& p, MPI_Comm comm, double bound_s, double timeout_s, peer_kind* kind_out = nullptr) {
  int me = 0, n = 0;
  MPI_Comm_rank(comm, &me), MPI_Comm_size(comm, &n);
  if (n != p.device_count)
    throw error("the MPI peer needs " + std::to_string(p.device_count) + " ranks, one per device, and runs on " + std::to_string(n));
  const std::size_t eb = static_cast<std::size_t>(p.element_bytes);
  const std::vector<peer_piece> pieces = peer_pieces(p);
  const peer_kind k = peer_for(p);
  if (kind_out) *kind_out = k;
  // The buffers and communicators are made when the session first runs the job and freed when it
  // moves on (timed_job::acquire), as meshcast's own jobs do. Everything a rank makes alone (its
  // buffers, the checks of its counts) comes before the ranks agree; the communicators after.
  struct made_job {
    std::shared_ptr<detail_peer::peer_state> st;
    std::function<void()> run;
  };
  struct slot {
    std::shared_ptr<made_job> made;
  };
  auto h = std::make_shared<slot>();
  auto acquire = [h, p, comm, me, timeout_s, pieces, k] {
    if (h->made) return;
    std::shared_ptr<made_job> m;
    detail::acquire_on_every_rank(comm, m, timeout_s, [&] {
      auto made = std::make_shared<made_job>();
      made->st = std::make_shared<detail_peer::peer_state>(p, comm, me, static_cast<std::size_t>(p.source_tile(me).volume()),
                                                           static_cast<std::size_t>(p.destination_tile(me).volume()), timeout_s);
      made->st->pieces = pieces;
      made->st->data.clear();  // poisoned, so that an element a run leaves unwritten counts as wrong
      made->run = k == peer_kind::allgatherv ? detail_peer::allgatherv(made->st)
                : k == peer_kind::alltoallv  ? detail_peer::alltoallv(made->st)
                : k == peer_kind::bcast      ? detail_peer::bcast(made->st)
                                             : detail_peer::isend(made->st);
      return made;
    });
    if (k == peer_kind::bcast) detail_peer::bcast_groups(*m->st);
    h->made = std::move(m);
  };
  timed_job job;
  job.acquire = acquire;
  job.run = [h, acquire] {
    acquire();
    h->made->run();
  };
  job.clear = [h] {
    if (h->made) h->made->st->data.clear();
  };
  job.wrong = [h]() -> std::size_t {
    if (!h->made) throw error("the MPI peer's job has no buffers (it was released, or has not run)");
    return h->made->st->data.wrong();
  };
  job.release = [h] { h->made.reset(); };  // a state a timed-out run left is kept (wait_all)
  job.bytes = static_cast<double>(p.tensor_bytes());
  std::vector<double> in(static_cast<std::size_t>(n), 0.0);
  if (k == peer_kind::allgatherv || k == peer_kind::bcast) {  // every receiver takes every tile it lacks
    for (index_t r : p.dst_devices)
      for (std::size_t g = 0; g + 1 < p.src_groups.offsets.size(); ++g) {
        const auto holders = p.src_groups[static_cast<index_t>(g)];
        if (!holders.empty() && holders[0] != r) in[static_cast<std::size_t>(r)] += static_cast<double>(tile_bytes(p.source_tile(holders[0]), eb));
      }
  } else {
    for (const peer_piece& x : pieces)
      if (x.holder != x.receiver) in[static_cast<std::size_t>(x.receiver)] += static_cast<double>(tile_bytes(x.region, eb));
  }
  job.busiest_bytes = *std::max_element(in.begin(), in.end());
  job.bound_s = bound_s;
  job.timeout_s = timeout_s;
  job.label = peer_name(k);
  return job;
}

}  // namespace meshcast::bench

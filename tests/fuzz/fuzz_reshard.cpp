// Fuzzes plan + instance + solve + schedule check on small random layouts: every solver's
// answer that `solve` accepts must deliver every destination element exactly once, from a device
// that holds it (checked element by element by the independent checker of the unit tests). Only
// the plan and the network may refuse their input (meshcast::error); once both stand, building the
// instance and solving it must succeed: `solve` reports a built-in solver's invalid schedule as
// meshcast::error, which here is a finding, not a refusal. Then, at times, the answer with parts of
// its model changed, as a hand-made schedule: simulate refuses it or gives a finite makespan.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>

#include "provider.hpp"
#include "support/schedule_checker.hpp"

using namespace meshcast;

namespace {
spec_value spec_from(fuzz::provider& in, int mesh_rank, int tensor_rank) {
  spec_value v;
  v.rank = tensor_rank;
  for (int a = 0; a < mesh_rank; ++a) {
    const int d = in.pick(-1, tensor_rank - 1);
    if (d >= 0) v.dims[d].axes[v.dims[d].axis_count++] = a;
  }
  return v;
}

// A value a hand-made model might hold: ordinary, or one that once broke simulate (NaN, negative,
// infinite, huge).
double odd_seconds(fuzz::provider& in) {
  switch (in.pick(0, 5)) {
    case 0: return std::numeric_limits<double>::quiet_NaN();
    case 1: return -1e-3 * in.pick(1, 100);
    case 2: return std::numeric_limits<double>::infinity();
    case 3: return 1e300;
    default: return 1e-6 * in.pick(0, 1000);
  }
}

// Hand-made schedules: the solver's answer with parts of its model changed. simulate and
// check_schedule_fits either refuse it (meshcast::error) or give a finite makespan; never a crash,
// a read out of bounds or a table as large as a slot number (the lower layers' review).
void mutate_and_simulate(fuzz::provider& in, const plan& p, const network& net, const instance& inst, schedule s) {
  if (s.model.empty()) return;
  for (int k = in.pick(1, 3); k > 0; --k) {
    transfer_model& m = s.model[static_cast<std::size_t>(in.pick(0, static_cast<int>(s.model.size()) - 1))];
    switch (in.pick(0, 5)) {
      case 0: m.duration = odd_seconds(in); break;
      case 1: m.latency_s = odd_seconds(in); break;
      case 2: m.connection = in.flag() ? std::numeric_limits<int>::max() - in.pick(0, 3) : in.pick(-3, 1 << 20); break;
      case 3:
        if (!m.resources.empty()) m.resources[0] = in.pick(-3, 1 << 20);
        break;
      case 4:
        m.hold_from.assign(m.resources.size() + static_cast<std::size_t>(in.pick(0, 1)), odd_seconds(in));
        m.hold_until.assign(m.resources.size(), odd_seconds(in));
        break;
      default: s.transfers[static_cast<std::size_t>(&m - s.model.data())].waits_for.push_back(in.pick(-2, static_cast<int>(s.model.size())));
    }
  }
  resource_space rs = inst.resources;
  if (in.pick(0, 7) == 0) rs.devices = in.flag() ? index_t{1} << in.pick(20, 40) : -in.pick(1, 5);
  try {
    const double makespan = simulate(s, net, rs);
    if (!std::isfinite(makespan) || makespan < 0) {
      std::fprintf(stderr, "simulate returned a makespan of %g\n", makespan);
      std::abort();
    }
  } catch (const error&) {
  }
  try {
    check_schedule_fits(p, s);
  } catch (const error&) {
  }
}

template <class Strategy>
void run(fuzz::provider& in, const plan& p, const std::vector<index_t>& hosts, const network& net, Strategy st) {
  const bool split = in.flag();
  instance inst = make_instance(p, net, st, {.split_replicas = split, .mode = in.flag() ? execution::concurrent : execution::ordered});
  solver_options o;
  o.time_limit_s = 0.02;
  o.seed = static_cast<std::uint64_t>(in.pick(0, 255));
  auto check = [&](auto solver) {
    if (solver.supports(inst)) return;
    schedule s = solve(inst, solver, o);
    const std::string problem = meshcast::testing::check_schedule(p, hosts, s, net.port_count() == net.host_count());
    if (!problem.empty()) {
      std::fprintf(stderr, "solver %s strategy %s: %s\n", s.solver.c_str(), s.strategy.c_str(), problem.c_str());
      std::abort();
    }
    if (in.flag()) mutate_and_simulate(in, p, net, inst, std::move(s));
  };
  switch (in.pick(0, 6)) {
    case 0: check(naive{}); break;
    case 1: check(alpa_least_loaded{}); break;
    case 2: check(alpa_greedy{}); break;
    case 3: check(alpa_dfs{}); break;
    case 4: check(greedy{}); break;
    case 5: check(branch_and_bound{}); break;
    default: check(open_shop{}); break;
  }
}

struct fuzz_case {
  plan p;
  std::vector<index_t> hosts;
  network net;
};

// The plan and network the input describes, or nothing where the library refuses it.
std::optional<fuzz_case> read_case(fuzz::provider& in) {
  try {
    const int rank = in.pick(1, 3);
    std::vector<index_t> shape(static_cast<std::size_t>(rank));
    for (auto& n : shape) n = in.pick(0, 9);
    auto mesh = [&] {
      std::vector<index_t> m(static_cast<std::size_t>(in.pick(1, 3)));
      for (auto& x : m) x = in.pick(1, 4);
      return dynamic_mesh(m);
    };
    dynamic_mesh sm = mesh(), dm = mesh();
    plan_options options;
    options.element_bytes = in.pick(1, 8);
    switch (in.pick(0, 2)) {
      case 1:
        if (sm.size() == dm.size()) options.devices = device_map::same();
        break;
      case 2: {
        std::vector<index_t> ids;
        for (index_t j = 0; j < dm.size(); ++j) ids.push_back(in.pick(0, 15));
        options.devices = device_map::listed(ids);  // repeats are refused with an error
        break;
      }
      default: break;
    }
    dynamic_shape sh{std::vector<index_t>(shape)};
    plan p = make_plan(dynamic_layout(sm, dynamic_spec(spec_from(in, sm.rank(), rank)), sh),
                       dynamic_layout(dm, dynamic_spec(spec_from(in, dm.rank(), rank)), sh), options);
    if (p.device_count > 24) return std::nullopt;  // keeps the element-by-element checker fast
    const auto hosts = default_hosts(p.device_count, static_cast<index_t>(p.src_devices.size()), in.pick(1, 4));
    const index_t host_count = hosts.empty() ? 0 : *std::max_element(hosts.begin(), hosts.end()) + 1;
    std::vector<host_nics> nics;
    for (index_t h = 0; h < host_count; ++h)
      nics.push_back({in.pick(1, 2), 1e9 * in.pick(1, 3), 1e9 * in.pick(1, 3)});
    network net(hosts, nics, 50e9, 1e-6 * in.pick(0, 2));
    return fuzz_case{std::move(p), hosts, std::move(net)};
  } catch (const error&) {
    return std::nullopt;  // bad input refused with a message
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::provider in(data, size);
  const std::optional<fuzz_case> c = read_case(in);
  if (!c) return 0;
  try {
    switch (in.pick(0, 2)) {
      case 0: run(in, c->p, c->hosts, c->net, send_recv{}); break;
      case 1: run(in, c->p, c->hosts, c->net, send_recv_allgather{}); break;
      default: run(in, c->p, c->hosts, c->net, broadcast{}); break;
    }
  } catch (const error& e) {
    std::fprintf(stderr, "a valid plan and network failed to schedule: %s\n", e.what());
    std::abort();
  }
  return 0;
}

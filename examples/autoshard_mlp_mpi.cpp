// meshcast-autoshard-mlp-mpi: runs the plan automatic sharding chose for an MLP forward pass (or
// another forward graph of 2-D matmuls and elementwise ops) on the ranks of MPI_COMM_WORLD, rank r
// being device r of the logical mesh (row-major), with real matrix products, and checks the
// result against a single-process run of the same graph (issue 11, point 6).
//
//   mpiexec -n 2 meshcast-autoshard-mlp-mpi --mesh 2 --batch 32 --hidden 512 --ffn 2048 --memory-mib 6
//   mpiexec -n 4 meshcast-autoshard-mlp-mpi --mesh 2x2 --batch 2048 --hidden 128 --ffn 512
//
// 1. The cost model is calibrated where no flag gives its values: device flops from a timed local
//    sgemm (every rank at once, the slowest rank's rate), each mesh axis's latency and bandwidth
//    from all-reduces of 4 bytes and of the largest activation on that axis's communicators.
// 2. Rank 0 runs auto_shard (or every rank reads --specs FILE.json, {"specs": {...}}) and shares
//    the specs; every rank evaluates them into the same plan.
// 3. Inputs and parameters are filled from their global indices, each rank its own tile in the
//    tensor's spec. Then `execution_order` runs: reshards through meshcast::resharder (same
//    devices; the schedule automatic sharding costs: send_recv, greedy without local search, on
//    the network derived from the mesh), compute as local products on the tiles, partial sums
//    reduced by MPI all-reduce / reduce-scatter over the communicators of the plan's mesh axes.
//    A warm-up run, then --repeat timed runs: each step between barriers (the slowest rank's
//    time), and the whole pass without barriers.
// 4. Every rank compares its tile of each graph output with the single-process result (rank 0
//    computes it, all ranks receive it): exit 0 only if the largest error is within --tolerance
//    of the output's largest magnitude. Exit 1 on a mismatch or an --expect-spec that does not
//    hold, 2 on bad input.
#include "autoshard_mlp/runner.hpp"

namespace {

int execute_and_check(const options& o, const as::graph& g, const as::sharding_plan& plan, const mesh_info& mesh,
                      const as::mesh_model& model, const calibration& how, runner& run, const std::string& solver,
                      bool proven, double solve_s, double setup_s, const std::vector<std::string>& failed_expectations);
int execute_and_check_unguarded(const options& o, const as::graph& g, const as::sharding_plan& plan,
                                 const mesh_info& mesh, const as::mesh_model& model, const calibration& how,
                                 runner& run, const std::string& solver, bool proven, double solve_s, double setup_s,
                                 const std::vector<std::string>& failed_expectations);

int run_main(int argc, char** argv) {
  // 1. Arguments, graph, mesh (every rank alike; a fault on one is a fault on all).
  options o;
  as::graph g;
  mesh_info mesh;
  std::vector<std::string> fixed_texts;
  bool help = false;
  // Each stage's fault, "out of memory while <stage>" for std::bad_alloc (detail::failure_of),
  // is agreed on before the next stage's collectives.
  std::string problem = mc::detail::failure_of([&] {
    o = parse_options(argc, argv, help);
    if (!help) {
      g = o.graph_path.empty() ? make_mlp(o) : as::graph_from_json(mc::json::parse(mc::detail::read_document(o.graph_path, "the graph file")));
      check_executable(g);
      const mc::dynamic_mesh dm = mc::parse_mesh(o.mesh_text.empty() ? std::to_string(world_size) : o.mesh_text);
      mesh.ext.rank = dm.rank();
      for (int a = 0; a < dm.rank(); ++a) mesh.ext.values[a] = dm.extent(a), mesh.sizes.push_back(dm.extent(a));
      if (mesh.ext.product() != world_size)
        throw error("--mesh " + mesh.ext.to_string() + " has " + std::to_string(mesh.ext.product()) +
                    " devices but there are " + std::to_string(world_size) + " ranks (rank r is device r)");
      if (mesh.ext.rank > as::max_mesh_axes) throw error("--mesh: at most " + std::to_string(as::max_mesh_axes) + " axes");
      mesh.coord = mc::mesh_coordinate(mesh.ext, world_rank);
      if (!o.specs_path.empty())
        fixed_texts = as::spec_texts_from_json(g, mc::json::parse(mc::detail::read_document(o.specs_path, "the spec file")));
      for (const auto& [t, s] : o.expect)
        if (g.find_tensor(t) < 0) throw error("--expect-spec: tensor '" + t + "' is not in the graph");
    }
  }, "reading the options, the graph and the mesh");
  mc::agree_or_throw(MPI_COMM_WORLD, problem, 60);
  if (help) {
    if (world_rank == 0) usage(stdout);
    return 0;
  }
#if MESHCAST_HAS_OPENBLAS
  openblas_set_num_threads(o.blas_threads);
#endif

  // 2. The model, calibrated where not given.
  axis_comms comms(mesh);
  calibration how;
  as::mesh_model model;
  problem = mc::detail::failure_of([&] { model = calibrate(o, g, mesh, comms, how); }, "calibrating the cost model");
  mc::agree_or_throw(MPI_COMM_WORLD, problem, 60);

  // 3. The plan: rank 0 solves (or every rank takes --specs); the specs are shared as text.
  as::sharding_plan plan;
  std::string solver = o.solver.empty() ?
#if MESHCAST_HAS_CBC
                                        "ilp"
#else
                                        "dp"
#endif
                                        : o.solver;
  std::string shared;
  const double solve_begin = now();
  problem = mc::detail::failure_of([&] {
    if (fixed_texts.empty() && world_rank == 0) {
      as::sharding_plan solved;
      auto solve_with = [&](const std::string& name) {
        const bool known = as::visit_sharding_solver(
            name, [&](auto s) { solved = as::auto_shard(g, model, s, {.time_limit_s = o.time_limit_s}); });
        if (!known) throw error("unknown solver '" + name + "' (expected " + as::sharding_solver_names + ")");
      };
      if (!o.solver.empty() || solver == "ilp") {
        solve_with(solver);
      } else {
        // Without CBC: the exact dp where it applies (trees, no binding memory limit), else greedy.
        try {
          solve_with("dp");
        } catch (const error& e) {
          solver = "greedy (" + std::string(e.what()) + ")";
          solve_with("greedy");
        }
      }
      for (const mc::spec_value& s : solved.report.specs) shared += s.to_string() + ";";
      shared += solved.proven_optimal ? "1" : "0";
    }
  }, "solving the sharding plan");
  mc::agree_or_throw(MPI_COMM_WORLD, problem, o.time_limit_s + 60);
  bool proven = false;
  if (fixed_texts.empty()) {
    long long n = static_cast<long long>(shared.size());
    broadcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD, "sharing the plan");
    shared.resize(static_cast<std::size_t>(n));
    broadcast(shared.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD, "sharing the plan");
    std::size_t pos = 0;
    for (std::size_t t = 0; t < g.tensors().size(); ++t) {
      const std::size_t end = shared.find(';', pos);
      fixed_texts.push_back(shared.substr(pos, end - pos));
      pos = end + 1;
    }
    proven = shared.substr(pos) == "1";
  }
  std::vector<std::string> failed_expectations;
  problem = mc::detail::failure_of([&] {
    as::cost_model cm(g, model);
    plan = as::plan_of(cm, as::parse_assignment(cm, fixed_texts));
    for (const auto& [t, texts] : o.expect) {
      const int i = g.find_tensor(t);
      bool any = false;
      for (std::size_t pos = 0; pos <= texts.size();) {  // alternatives separated by '|'
        const std::size_t end = std::min(texts.find('|', pos), texts.size());
        const mc::spec_value want = as::canonical(
            as::detail::parse_spec_for(texts.substr(pos, end - pos), g.tensors()[i].shape.size(), "--expect-spec " + t),
            model);
        any |= want == plan.report.specs[i];
        pos = end + 1;
      }
      if (!any) failed_expectations.push_back(t + " is " + plan.report.specs[i].to_string() + ", expected " + texts);
    }
  }, "evaluating the shared specs into the plan");
  mc::agree_or_throw(MPI_COMM_WORLD, problem, 60);
  const double solve_s = now() - solve_begin;

  // 4. Set up (resharders, communicators; their faults are agreed on by every rank), warm up, time.
  const double setup_begin = now();
  std::optional<runner> made;
  try {
    made.emplace(o, g, plan, mesh, comms, model);
  } catch (const std::bad_alloc&) {
    // Filling this rank's tiles may run out of memory here alone, before any agreement (the
    // resharders' faults are agreed on and reach main): it says so itself and ends the job,
    // rather than leave the others to time out on it unnamed.
    std::fprintf(stderr, "meshcast-autoshard-mlp-mpi: rank %d: error while setting up the plan: out of memory for its tiles\n",
                 world_rank);
    std::fflush(stderr);
    meshcast::cli::end_job(3);
  }
  runner& run = *made;
  const double setup_s = now() - setup_begin;
  return execute_and_check(o, g, plan, mesh, model, how, run, solver, proven, solve_s, setup_s, failed_expectations);
}

/// Steps 4 to 6; a fault here is one rank's alone (the others would wait for it): it aborts.
int execute_and_check(const options& o, const as::graph& g, const as::sharding_plan& plan, const mesh_info& mesh,
                      const as::mesh_model& model, const calibration& how, runner& run, const std::string& solver,
                      bool proven, double solve_s, double setup_s, const std::vector<std::string>& failed_expectations) {
  try {
    return execute_and_check_unguarded(o, g, plan, mesh, model, how, run, solver, proven, solve_s, setup_s,
                                       failed_expectations);
  } catch (const std::exception& e) {
    const bool no_room = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
    std::fprintf(stderr, "meshcast-autoshard-mlp-mpi: rank %d: error while running the plan: %s\n", world_rank,
                 no_room ? "out of memory" : e.what());
    meshcast::cli::end_job(3);
  }
}

int execute_and_check_unguarded(const options& o, const as::graph& g, const as::sharding_plan& plan,
                                 const mesh_info& mesh, const as::mesh_model& model, const calibration& how,
                                 runner& run, const std::string& solver, bool proven, double solve_s, double setup_s,
                                 const std::vector<std::string>& failed_expectations) {
  const std::size_t n = run.steps().size();
  run.run(nullptr);  // warm-up
  std::vector<std::vector<double>> step_times(n);
  std::vector<double> totals, whole;
  std::vector<double> local(n), worst(n);
  for (int r = 0; r < o.repeat; ++r) {
    run.run(&local);
    MPI_Request req;
    MPI_Ireduce(local.data(), worst.data(), static_cast<int>(n), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD, &req);
    wait(req, "gathering the step times");
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) step_times[i].push_back(worst[i]), sum += worst[i];
    totals.push_back(sum);
  }
  double my_run_s = 0;  // this rank's last whole run: what the wait for the reference scales by
  for (int r = 0; r < o.repeat; ++r) {
    barrier();
    const double begin = now();
    run.run(nullptr);
    double t = now() - begin;
    my_run_s = t;
    MPI_Request req;
    MPI_Ireduce(world_rank == 0 ? MPI_IN_PLACE : &t, &t, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD, &req);
    wait(req, "gathering the run times");
    whole.push_back(t);
  }

  // 5. The check against one process.
  std::vector<std::vector<float>> reference;
  double reference_s = 0;
  if (world_rank == 0) {
    const double begin = now();
    reference = single_process(g);
    reference_s = now() - begin;
  }
  const auto& ts = g.tensors();
  double worst_error = 0, largest = 0;  // over every output
  bool finite = true;
  for (std::size_t k = 0; k < g.outputs().size(); ++k) {
    const as::output_desc& out = g.outputs()[k];
    const auto& shape = ts[out.tensor].shape;
    std::vector<float> ref = world_rank == 0 ? std::move(reference[k]) : std::vector<float>(static_cast<std::size_t>(ts[out.tensor].elements));
    // Rank 0 computes the reference alone, about world_size times a rank's share of the run:
    // the others wait that (four times over) beyond the usual limit, not 300 s flat, which ended
    // the job at the check after every timed run on large models.
    const double reference_wait_s = wait_limit_s + 4.0 * world_size * my_run_s;
    for (std::size_t off = 0; off < ref.size(); off += 1 << 28)
      broadcast(ref.data() + off, static_cast<int>(std::min<std::size_t>(ref.size() - off, 1 << 28)), MPI_FLOAT, 0,
                MPI_COMM_WORLD, "sharing the reference", reference_wait_s);
    const mc::spec_value spec = plan.report.specs[out.tensor];
    const mc::spec_value final_spec = out.spec ? as::canonical(*out.spec, model) : spec;
    const std::vector<float>& mine = run.data(out.tensor, final_spec);
    const mc::box b = mesh.tile(final_spec, shape, world_rank);
    for (float x : ref) largest = std::max(largest, static_cast<double>(std::fabs(x)));
    for_each_in(b, shape, [&](index_t linear, index_t pos) {
      const double e = std::fabs(static_cast<double>(mine[pos]) - ref[linear]);
      if (!std::isfinite(mine[pos])) finite = false;
      worst_error = std::max(worst_error, e);
    });
  }
  allreduce(&worst_error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, "comparing results");
  int all_finite = finite ? 1 : 0;
  allreduce(&all_finite, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, "comparing results");
  const double relative = worst_error / std::max(largest, 1e-30);
  const bool matches = all_finite && relative <= o.tolerance;

  // 6. Report (rank 0).
  if (world_rank == 0) {
    std::string graph_text = o.graph_path.empty()
                                 ? "MLP x[" + std::to_string(o.batch) + "," + std::to_string(o.hidden) + "] -> fc1 [" +
                                       std::to_string(o.hidden) + "," + std::to_string(o.ffn) + "] -> " + o.activation +
                                       " -> fc2 [" + std::to_string(o.ffn) + "," + std::to_string(o.hidden) + "], fp32"
                                 : o.graph_path;
    std::printf("meshcast-autoshard-mlp-mpi: %d ranks, mesh %s, %s\n", world_size, mesh.ext.to_string().c_str(),
                graph_text.c_str());
#if MESHCAST_HAS_OPENBLAS
    std::printf("matrix products: %s (%s), %d thread(s) per rank\n", blas_name(), openblas_get_config(), o.blas_threads);
#else
    std::printf("matrix products: %s\n", blas_name());
#endif
    std::printf("model: device %.2f GFLOP/s (%s)\n", model.device_flops / 1e9, how.flops_how.c_str());
    for (int a = 0; a < model.rank(); ++a)
      std::printf("       axis %d (%lld devices): %.3f GB/s, %.2f us (%s)\n", a, static_cast<long long>(model.sizes[a]),
                  model.bandwidth[a] / 1e9, model.latency[a] * 1e6, how.axis_how[a].c_str());
    if (std::isfinite(model.memory_bytes)) std::printf("       memory limit %.2f MiB per device\n", model.memory_bytes / 1048576);
    std::printf("plan: %s; predicted %s ms (compute %s ms); %.3f s to plan, %.3f s to set up the reshards\n",
                o.specs_path.empty() ? ("solver " + solver + (proven ? ", proven optimal" : ", not proven optimal")).c_str()
                                     : ("specs from " + o.specs_path).c_str(),
                ms(plan.report.objective_s).c_str(), ms(plan.report.compute_s).c_str(), solve_s, setup_s);
    std::printf("specs:");
    for (std::size_t t = 0; t < ts.size(); ++t)
      std::printf(" %s %s%s", ts[t].name.c_str(), plan.report.specs[t].to_string().c_str(), t + 1 < ts.size() ? "," : "\n");
    std::printf("steps (median of %d runs; each step between barriers, the slowest rank's time):\n", o.repeat);
    std::printf("  %-88s %12s %12s %8s\n", "step", "predicted ms", "measured ms", "ratio");
    double predicted_sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double pr = predicted(plan, run.steps()[i]), me = median(step_times[i]);
      predicted_sum += pr;
      char ratio[32] = "-";
      if (pr > 0) std::snprintf(ratio, sizeof ratio, "%.2f", me / pr);
      std::printf("  %-88s %12s %12s %8s\n", step_text(g, plan, run.steps()[i], run).c_str(), ms(pr).c_str(),
                  ms(me).c_str(), ratio);
    }
    const double total = median(totals), e2e = median(whole);
    std::printf("total: predicted %s ms, measured %s ms step by step (ratio %.2f), %s ms end to end without barriers "
                "(ratio %.2f)\n",
                ms(predicted_sum).c_str(), ms(total).c_str(), total / predicted_sum, ms(e2e).c_str(),
                e2e / predicted_sum);
    std::printf("check: %s the single-process result (%.3f s on rank 0): largest error %.3g, %.3g of the largest "
                "magnitude %.3g (tolerance %.3g)\n",
                matches ? "matches" : "DOES NOT MATCH", reference_s, worst_error, relative, largest, o.tolerance);
    for (const std::string& f : failed_expectations) std::printf("expectation failed: %s\n", f.c_str());
    std::fflush(stdout);
  }
  return matches && failed_expectations.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  int status = 0;
  try {
    status = run_main(argc, argv);
  } catch (const std::bad_alloc&) {
    // Outside the agreed stages (sharing the plan's text, say): this rank's alone, so it ends the
    // job itself rather than leave the others waiting for it.
    std::fprintf(stderr, "meshcast-autoshard-mlp-mpi: rank %d: error: out of memory\n", world_rank);
    std::fflush(stderr);
    meshcast::cli::end_job(3);
  } catch (const meshcast::timeout_error& e) {
    // A rank that never answered: nothing collective (MPI_Finalize included) can finish.
    std::fprintf(stderr, "meshcast-autoshard-mlp-mpi: rank %d: error: %s\n", world_rank, e.what());
    std::fflush(stderr);
    meshcast::cli::end_job(2);
  } catch (const std::exception& e) {
    // Every other fault that reaches here was agreed on by every rank (agree_or_throw, resharder).
    if (world_rank == 0) std::fprintf(stderr, "meshcast-autoshard-mlp-mpi: error: %s\n", e.what());
    status = 2;
  }
  MPI_Finalize();
  return status;
}

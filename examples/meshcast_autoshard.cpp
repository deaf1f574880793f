// meshcast-autoshard: chooses a sharding spec for every tensor of a model graph (JSON) on a
// logical device mesh, or costs a given assignment (--evaluate).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include <meshcast/autoshard.hpp>
#include <meshcast/core/detail/read_document.hpp>

#include "cli/ignored_members.hpp"
#include "cli/json_writer.hpp"
#include "cli/flag_values.hpp"

namespace {

using namespace meshcast::autoshard;
using meshcast::error;
using meshcast_cli::axes_text;
using meshcast_cli::parse_list;
using meshcast_cli::parse_number;
namespace json = meshcast::json;

constexpr double default_gbps = 100, default_latency_us = 10, default_tflops = 100, default_time_limit_s = 60;

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: meshcast-autoshard GRAPH.json --mesh 2x4 [options]\n"
               "  --mesh AxB...            logical device mesh (1 to %d axes, at most %lld devices)\n"
               "  --axis-gbps X[,Y...]     bandwidth of each mesh axis, Gbit/s (one value: every axis; default %g)\n"
               "  --axis-latency-us X[,Y]  latency of each mesh axis, microseconds (default %g)\n"
               "  --device-tflops X        device speed, TFLOP/s (default %g)\n"
               "  --memory-gib X           memory limit per device, GiB (default: none)\n"
               "  --solver NAME            %s (default %s)\n"
               "  --time-limit S           seconds for the whole solve, cost tables included (default %g, at most 1e6)\n"
               "  --json                   print one JSON object: objective_seconds, specs, collectives,\n"
               "                           reshards, proven_optimal, solve_seconds\n"
               "  --evaluate SPECS.json    cost the assignment {\"specs\": {tensor: spec, ...}} instead of solving\n"
               "Bad input: a message on stderr, exit status 2.\n",
               max_mesh_axes, static_cast<long long>(max_mesh_devices), default_gbps, default_latency_us,
               default_tflops, sharding_solver_names,
#if MESHCAST_HAS_CBC
               "ilp",
#else
               "greedy",
#endif
               default_time_limit_s);
}


std::vector<double> per_axis(const std::string& flag, const std::vector<double>& v, int rank) {
  if (v.size() == 1) return std::vector<double>(static_cast<std::size_t>(rank), v[0]);
  if (static_cast<int>(v.size()) != rank)
    throw error(flag + " has " + std::to_string(v.size()) + " values for a mesh of " + std::to_string(rank) +
                " axes (give one, or one per axis)");
  return v;
}

void write_json(std::FILE* out, const graph& g, const sharding_plan& p, const std::vector<std::string>& spec_text) {
  meshcast::cli::json_writer j;
  j.begin_object();
  j.key("objective_seconds").precise(p.report.objective_s);
  j.key("specs").begin_object();
  for (std::size_t t = 0; t < g.tensors().size(); ++t) j.key(g.tensors()[t].name).value(spec_text[t]);
  j.end_object();
  j.key("collectives").begin_array();
  for (const op_collective& c : p.report.collectives) {
    j.begin_object();
    j.key("op").value(g.ops()[c.op].name);
    j.key("kind").value(collective_name(c.step.kind));
    j.key("axes").int_array(c.step.axes);
    j.key("bytes").value(static_cast<long long>(c.step.bytes));
    j.key("seconds").precise(c.step.seconds);
    j.end_object();
  }
  j.end_array();
  j.key("reshards").begin_array();
  for (const tensor_reshard& r : p.report.reshards) {
    j.begin_object();
    j.key("tensor").value(g.tensors()[r.tensor].name);
    j.key("from").value(r.from.to_string());
    j.key("to").value(r.to.to_string());
    j.key("seconds").precise(r.cost.seconds);
    j.end_object();
  }
  j.end_array();
  j.key("proven_optimal").boolean(p.proven_optimal);
  j.key("solve_seconds").value(p.solve_seconds);
  j.end_object();
  std::string text = j.str();
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), out);
}

void write_text(std::FILE* out, const graph& g, const sharding_plan& p, const std::vector<std::string>& spec_text,
                bool evaluated) {
  std::fprintf(out, "objective: %.9g s (compute %.9g s)%s\n", p.report.objective_s, p.report.compute_s,
               evaluated ? ", evaluated assignment" : "");
  if (!evaluated) {
    std::fprintf(out, "solver: %s, %s, %.3f s (cost tables %.3f s); %zu tensors, %zu ILP columns untied",
                 p.solver.c_str(), p.proven_optimal ? "proven optimal" : "not proven optimal", p.solve_seconds,
                 p.tables_seconds, p.full_nodes, p.full_columns);
    if (p.stats.variables)
      std::fprintf(out, "; solved %s: %d nodes, %zu variables, %zu constraints, %zu nonzeros",
                   p.stats.tied ? "tied" : "untied", p.stats.nodes, p.stats.variables, p.stats.constraints,
                   p.stats.nonzeros);
    if (!p.stats.note.empty()) std::fprintf(out, " (%s)", p.stats.note.c_str());
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "memory per device: %.0f bytes\nspecs:\n", p.report.memory_bytes);
  for (std::size_t t = 0; t < g.tensors().size(); ++t)
    std::fprintf(out, "  %-24s %-12s %s\n", g.tensors()[t].name.c_str(), spec_text[t].c_str(),
                 g.tensors()[t].parameter ? "(parameter)" : "");
  std::fprintf(out, "ops:\n");
  for (int o : g.order()) {
    const op_strategy& s = p.op_strategies[o];
    std::string split;
    for (std::size_t d = 0; d < s.iteration.size(); ++d)
    {
      if (d) split.push_back(' ');
      if (s.iteration[d].empty()) split.push_back('-');
      else split.append("S").append(axes_text(s.iteration[d]));
    }
    std::fprintf(out, "  %-24s iteration [%s], %.6g s compute\n", g.ops()[o].name.c_str(), split.c_str(), s.compute_s);
  }
  std::fprintf(out, "collectives:\n");
  for (const op_collective& c : p.report.collectives)
    std::fprintf(out, "  %-24s %-15s axes [%s] %lld bytes %.6g s%s\n", g.ops()[c.op].name.c_str(),
                 collective_name(c.step.kind), axes_text(c.step.axes).c_str(), static_cast<long long>(c.step.bytes),
                 c.step.seconds, c.backward ? " (backward)" : "");
  std::fprintf(out, "reshards:\n");
  for (const tensor_reshard& r : p.report.reshards)
    std::fprintf(out, "  %-24s %s -> %s by %s, %.6g s%s\n", g.tensors()[r.tensor].name.c_str(),
                 r.from.to_string().c_str(), r.to.to_string().c_str(), reshard_kind_name(r.cost.kind), r.cost.seconds,
                 r.backward ? " (backward)" : "");
}
}  // namespace

int main(int argc, char** argv) {
  try {
    std::string graph_path, mesh_text, evaluate_path, solver_name;
    std::vector<double> gbps{default_gbps}, latency_us{default_latency_us};
    double tflops = default_tflops, memory_gib = std::numeric_limits<double>::infinity(),
           time_limit = default_time_limit_s;
    bool json = false;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw error("flag " + meshcast::detail::printable(arg) + " needs a value");
        return argv[++i];
      };
      if (arg == "--help" || arg == "-h") {
        usage(stdout);
        if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return 0;
        std::fprintf(stderr, "meshcast-autoshard: error: cannot write the help to standard output (%s)\n", std::strerror(errno));
        return 1;
      } else if (arg == "--mesh") {
        mesh_text = meshcast_cli::parse_name(arg, next());
      } else if (arg == "--axis-gbps") {
        gbps = parse_list(arg, next());
      } else if (arg == "--axis-latency-us") {
        latency_us = parse_list(arg, next());
      } else if (arg == "--device-tflops") {
        tflops = parse_number(arg, next());
      } else if (arg == "--memory-gib") {
        memory_gib = parse_number(arg, next());
        if (!(memory_gib > 0)) throw error("--memory-gib must be positive");
      } else if (arg == "--solver") {
        solver_name = meshcast_cli::parse_name(arg, next());
      } else if (arg == "--time-limit") {
        time_limit = parse_number(arg, next());
        if (!(time_limit > 0 && time_limit <= meshcast::max_time_limit_s))  // 1e300 was taken as no limit
          throw error("--time-limit must be positive and at most " +
                      std::to_string(static_cast<long long>(meshcast::max_time_limit_s)) + " s");
      } else if (arg == "--json") {
        json = true;
      } else if (arg == "--evaluate") {
        evaluate_path = meshcast_cli::parse_name(arg, next());
      } else if (!arg.empty() && arg[0] == '-') {
        throw error("unknown flag '" + meshcast::detail::printable(arg) + "' (see --help)");
      } else if (graph_path.empty()) {
        graph_path = arg;
      } else {
        throw error("more than one graph file given ('" + meshcast::detail::printable(graph_path) + "' and '" + meshcast::detail::printable(arg) + "')");
      }
    }
    if (graph_path.empty()) throw error("no graph file given (usage: meshcast-autoshard GRAPH.json --mesh 2x4)");
    if (mesh_text.empty()) throw error("--mesh is required (e.g. --mesh 2x4)");
    if (!evaluate_path.empty() && !solver_name.empty()) throw error("--evaluate and --solver exclude each other");

    const meshcast::dynamic_mesh dm = meshcast::parse_mesh(mesh_text);
    mesh_model m;
    for (int a = 0; a < dm.rank(); ++a) m.sizes.push_back(dm.extent(a));
    if (m.sizes.size() > static_cast<std::size_t>(max_mesh_axes))
      throw error("--mesh '" + meshcast::detail::printable(mesh_text) + "' has " + std::to_string(m.sizes.size()) + " axes; at most " +
                  std::to_string(max_mesh_axes));
    for (double g : per_axis("--axis-gbps", gbps, m.rank())) {
      checked_real(g, 0, true, "--axis-gbps");
      meshcast_cli::check_axis_gbps(g);
      m.bandwidth.push_back(g * 1e9 / 8);
    }
    for (double l : per_axis("--axis-latency-us", latency_us, m.rank())) {
      checked_real(l, 0, false, "--axis-latency-us");
      meshcast_cli::check_axis_latency_us(l);
      m.latency.push_back(l * 1e-6);
    }
    checked_real(tflops, 0, true, "--device-tflops");
    m.device_flops = checked_real(tflops * 1e12, 0, true, "--device-tflops (times 1e12 flop/s)");
    if (std::isfinite(memory_gib)) m.memory_bytes = memory_gib * 1073741824.0;
    m.validate();

    // A JSON error names its file: the graph and the --evaluate file may both be at fault.
    auto in_file = [](const std::string& path, auto&& read) {
      try {
        return read();
      } catch (const error& e) {
        throw error(meshcast::detail::printable(path, 1024) + ": " + e.what());
      }
    };
    // Members the formats ignore, named on stderr: a misspelt "spec" would drop a constraint unseen.
    auto warn_ignored = [](const std::string& path, const std::vector<std::string>& members) {
      meshcast::cli::warn_ignored(stderr, "meshcast-autoshard", path, members, "meshcast reads");
    };
    const std::string graph_text = meshcast::detail::read_document(graph_path, "the graph file");
    const json::value graph_doc = in_file(graph_path, [&] { return json::parse(graph_text); });
    const graph g = in_file(graph_path, [&] { return graph_from_json(graph_doc); });
    warn_ignored(graph_path, ignored_graph_members(graph_doc));
    sharding_plan p;
    std::vector<std::string> spec_text(g.tensors().size());
    if (!evaluate_path.empty()) {
      const auto begin = std::chrono::steady_clock::now();
      const std::string spec_file = meshcast::detail::read_document(evaluate_path, "the spec file");
      const json::value spec_doc = in_file(evaluate_path, [&] { return json::parse(spec_file); });
      const std::vector<std::string> texts = in_file(evaluate_path, [&] { return spec_texts_from_json(g, spec_doc); });
      warn_ignored(evaluate_path, ignored_spec_members(spec_doc));
      cost_model cm(g, m, deadline::after(time_limit));
      p = plan_of(cm, parse_assignment(cm, texts));
      for (std::size_t t = 0; t < texts.size(); ++t) spec_text[t] = meshcast::dynamic_spec(texts[t]).to_string();
      p.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    } else {
      if (solver_name.empty())
#if MESHCAST_HAS_CBC
        solver_name = "ilp";
#else
        solver_name = "greedy";
#endif
      const bool known = visit_sharding_solver(solver_name, [&](auto s) { p = auto_shard(g, m, s, {time_limit}); });
      if (!known) throw error("unknown solver '" + meshcast::detail::printable(solver_name) + "' (expected " + sharding_solver_names + ")");
      for (std::size_t t = 0; t < g.tensors().size(); ++t)
        spec_text[t] = g.tensors()[t].spec ? g.tensors()[t].spec->to_string() : p.report.specs[t].to_string();
    }
    if (json) write_json(stdout, g, p, spec_text);
    else write_text(stdout, g, p, spec_text, !evaluate_path.empty());
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::fprintf(stderr, "meshcast-autoshard: error: writing the output failed: %s\n", std::strerror(errno));
      return 1;
    }
    return 0;
  } catch (const meshcast::error& e) {
    std::fprintf(stderr, "meshcast-autoshard: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "meshcast-autoshard: error: out of memory\n");
    return 2;  // an input too large for this machine, like meshcast-plan's
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meshcast-autoshard: error: %s\n", e.what());
    return 2;
  }
}

// meshcast-pipeline's main, generic over the list of policies it accepts, so that a program with
// a policy of its own is this main with that policy appended:
//
//   int main(int argc, char** argv) {
//     using mine = meshcast::pipeline::with_policies<meshcast::pipeline::builtin_policies, my_policy>;
//     return meshcast::cli::pipeline_main<mine>(argc, argv);
//   }
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include <meshcast/pipeline.hpp>

#include "flag_values.hpp"
#include "ignored_members.hpp"
#include "json_writer.hpp"

namespace meshcast::cli {

/// The file's number of a transfer's edge (`edges[k]` of the file; a batch is named by its first).
inline long long named_edge(const pipeline::parsed_pipeline& file, const pipeline::instruction& x) {
  return static_cast<long long>(file.file_edge(static_cast<std::size_t>(x.edge)));
}

/// The --json object: policy, makespan, bubble_fraction, and every stage's instructions in list
/// order with op, mb, (edge, pass, peer for transfers), start, end. `edge` indexes the file's
/// `edges` (`file`: a batch of tensors between two stages is named by its first).
inline void write_pipeline_json(json_writer& j, const pipeline::timeline& t, const pipeline::parsed_pipeline& file) {
  using pipeline::op_kind;
  j.begin_object();
  j.key("policy").value(t.policy);
  j.key("makespan").exact(t.makespan);
  j.key("bubble_fraction").exact(t.bubble_fraction);
  j.key("stages").begin_array();
  for (const pipeline::stage_list& l : t.stages) {
    j.begin_array();
    for (const pipeline::instruction& x : l) {
      j.begin_object();
      j.key("op").value(std::string(to_string(x.op)));
      if (x.is_transfer()) j.key("edge").value(named_edge(file, x));
      j.key("mb").value(static_cast<long long>(x.mb));
      if (x.is_transfer()) {
        j.key("pass").value(std::string(to_string(x.pass)));
        j.key("peer").value(static_cast<long long>(x.peer));
      }
      j.key("start").exact(x.start);
      j.key("end").exact(x.end);
      j.end_object();
    }
    j.end_array();
  }
  j.end_array();
  j.end_object();
}

/// Chrome / Perfetto trace events: one process per stage; one track per stream (with shared
/// streams one, "compute and communication"; with separate streams "compute" and
/// "communication"); one complete event per instruction. Times in microseconds of
/// `time_unit_s`-second units.
inline std::string pipeline_trace(const pipeline::parsed_pipeline& file, const pipeline::timeline& t) {
  const pipeline::description& d = file.d;
  const bool separate = d.streams == pipeline::stream_mode::separate;
  const double us = d.time_unit_s * 1e6;
  json_writer j;
  j.begin_object().key("displayTimeUnit").value("ms").key("traceEvents").begin_array();
  auto meta = [&](const char* what, long long pid, long long tid, const std::string& name) {
    j.begin_object().key("ph").value("M").key("name").value(what).key("pid").value(pid).key("tid").value(tid);
    j.key("args").begin_object().key("name").value(name).end_object().end_object();
  };
  for (std::size_t s = 0; s < t.stages.size(); ++s) {
    const auto pid = static_cast<long long>(s);
    meta("process_name", pid, 0, "stage " + std::to_string(s));
    j.begin_object().key("ph").value("M").key("name").value("process_sort_index").key("pid").value(pid).key("tid").value(0LL);
    j.key("args").begin_object().key("sort_index").value(pid).end_object().end_object();
    if (separate) {
      meta("thread_name", pid, 0, "compute");
      meta("thread_name", pid, 1, "communication");
    } else {
      meta("thread_name", pid, 0, "compute and communication");
    }
  }
  for (std::size_t s = 0; s < t.stages.size(); ++s)
    for (const pipeline::instruction& x : t.stages[s]) {
      std::string name = std::string(to_string(x.op)) + std::to_string(x.mb);
      if (x.is_transfer())
        name = std::string(to_string(x.op)) + " mb" + std::to_string(x.mb) + (x.op == pipeline::op_kind::send ? " to " : " from ") +
               std::to_string(x.peer) + (x.pass == pipeline::pass_kind::backward ? " (backward)" : "");
      j.begin_object().key("ph").value("X").key("cat").value(x.is_compute() ? "compute" : "transfer");
      j.key("name").value(name);
      j.key("pid").value(static_cast<long long>(s)).key("tid").value(separate && x.is_transfer() ? 1LL : 0LL);
      const double ts = x.start * us, dur = (x.end - x.start) * us;
      // A huge time_unit_s makes the microseconds overflow: refuse rather than write null times.
      if (!std::isfinite(ts) || !std::isfinite(dur))
        throw error("the trace's times overflow: " + name + " on stage " + std::to_string(s) + " runs from " +
                    meshcast::detail::number(x.start) + " to " + meshcast::detail::number(x.end) + " units of " +
                    meshcast::detail::number(d.time_unit_s) + " s (time_unit_s), more microseconds than a double holds");
      j.key("ts").exact(ts).key("dur").exact(dur);
      j.key("args").begin_object().key("mb").value(static_cast<long long>(x.mb));
      if (x.is_transfer()) {
        j.key("edge").value(named_edge(file, x)).key("pass").value(std::string(to_string(x.pass)));
        j.key("peer").value(static_cast<long long>(x.peer));
      }
      j.end_object().end_object();
    }
  j.end_array().end_object();
  return j.str();
}

inline void print_pipeline_summary(std::FILE* out, const std::string& file, const pipeline::description& d,
                                   const pipeline::timeline& t) {
  std::fprintf(out, "meshcast-pipeline: %s: %lld stages, %lld microbatches, schedule %s, streams %s, %zu edges\n",
               meshcast::detail::printable(file, file.size()).c_str(), static_cast<long long>(d.stage_count()), static_cast<long long>(d.microbatches),
               std::string(to_string(d.schedule)).c_str(), std::string(to_string(d.streams)).c_str(), d.edges.size());
  std::fprintf(out, "  policy %s: makespan %.6g, bubble fraction %.4f, lower bound %.6g%s, solved in %.3f ms\n",
               t.policy.c_str(), t.makespan, t.bubble_fraction, t.lower_bound, t.proven_optimal ? " (proven optimal)" : "",
               t.solve_ms);
  for (std::size_t s = 0; s < t.stages.size(); ++s) {
    double compute = 0, transfers = 0, end = 0;
    for (const pipeline::instruction& x : t.stages[s]) {
      (x.is_compute() ? compute : transfers) += x.end - x.start;
      end = std::max(end, x.end);
    }
    std::fprintf(out, "  stage %zu: %zu instructions, compute %.6g, transfers %.6g, finishes at %.6g\n", s,
                 t.stages[s].size(), compute, transfers, end);
  }
}

inline void pipeline_usage(std::FILE* out, const std::string& policies) {
  std::fprintf(out,
               "usage: meshcast-pipeline FILE.json [--policy NAME] [--json] [--trace OUT.json] [--time-limit-ms N]\n"
               "                         [--search-limit-ms N] [--seed N]\n"
               "  FILE.json             the pipeline description (stages, microbatches, schedule, streams, edges)\n"
               "  --policy NAME         %s (default %s)\n"
               "  --json                print one JSON object: policy, makespan, bubble_fraction, stages\n"
               "  --trace OUT.json      write a Chrome / Perfetto trace, one track per stage and stream\n"
               "  --time-limit-ms N     limit for the searching policies (default 1000)\n"
               "  --search-limit-ms N   optimal: most time for its search after its seed (default: the rest\n"
               "                        of the time limit)\n"
               "  --seed N              seed for the randomised ones (default 1)\n"
               "Exit status: 0 done, 2 bad input (the message on stderr names it), 1 output could not be written.\n",
               policies.c_str(), std::string(pipeline::default_policy::name).c_str());
}

/// Runs meshcast-pipeline with the policies of `Policies`, printing to `out` and `err`.
template <class Policies = pipeline::builtin_policies>
int pipeline_main(int argc, char** argv, std::FILE* out = stdout, std::FILE* err = stderr) {
  std::string file, policy(pipeline::default_policy::name), trace;
  bool json = false;
  double search_limit_s = -1;
  pipeline::policy_options options;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw error("flag " + detail::printable(arg) + " needs a value");
        return argv[++i];
      };
      if (arg == "--policy") policy = next();
      else if (arg == "--json") json = true;
      else if (arg == "--trace") trace = meshcast_cli::parse_name(arg, next());
      else if (arg == "--time-limit-ms" || arg == "--search-limit-ms") {
        const std::string v = next();
        const double ms = meshcast_cli::whole_number(v).value_or(-1);
        if (!(ms >= 0) || ms > 1e9) throw error(arg + " '" + meshcast::detail::printable(v) + "' is not a number of milliseconds");
        (arg == "--time-limit-ms" ? options.time_limit_s : search_limit_s) = ms / 1000;
      } else if (arg == "--seed") {
        options.seed = meshcast_cli::parse_u64(arg, next());
      } else if (arg == "--help" || arg == "-h") {
        pipeline_usage(out, pipeline::policy_names<Policies>());
        if (std::fflush(out) == 0 && !std::ferror(out)) return 0;
        std::fprintf(err, "meshcast-pipeline: error: cannot write the help to standard output (%s)\n", std::strerror(errno));
        return 1;
      } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
        throw error("unknown flag '" + detail::printable(arg) + "'");
      } else if (file.empty()) {
        file = arg;
      } else {
        throw error("one pipeline file only ('" + detail::printable(file) + "' and '" + detail::printable(arg) + "' given)");
      }
    }
    if (file.empty()) throw error(
          "missing the pipeline file (usage: meshcast-pipeline FILE.json [--policy NAME] [--json] [--trace OUT.json] "
          "[--time-limit-ms N] [--search-limit-ms N] [--seed N])");
    if (!pipeline::has_policy<Policies>(policy)) pipeline::visit_policy<Policies>(policy, [](auto) {});  // throws
    const pipeline::parsed_pipeline parsed = pipeline::load_parsed(file);
    warn_ignored(err, "meshcast-pipeline", file, parsed.ignored, "a pipeline file has");
    const pipeline::description& d = parsed.d;
    const pipeline::timeline t =
        pipeline::visit_policy<Policies>(policy, [&](auto p) {
          if constexpr (requires { p.search_limit_s; }) {
            if (search_limit_s >= 0) p.search_limit_s = search_limit_s;
          } else if (search_limit_s >= 0) {  // taken, as documented, but it changes nothing here: say so
            std::fprintf(err, "meshcast-pipeline: note: --search-limit-ms acts only on a policy that searches after "
                              "its seed (optimal), not on %s\n",
                         std::string(decltype(p)::name).c_str());
          }
          return pipeline::order(d, p, options);
        });
    if (!trace.empty()) {
      const std::string text = pipeline_trace(parsed, t);
      try {
        write_file(trace, text + '\n', "the trace file");
      } catch (const std::exception& e) {
        std::fprintf(err, "meshcast-pipeline: error: %s\n", e.what());
        return 1;
      }
    }
    if (json) {
      json_writer j;
      write_pipeline_json(j, t, parsed);
      std::fwrite(j.str().data(), 1, j.str().size(), out);
      std::fputc('\n', out);
    } else {
      print_pipeline_summary(out, file, d, t);
    }
    if (std::fflush(out) != 0 || std::ferror(out)) {
      std::fprintf(err, "meshcast-pipeline: error: cannot write to standard output (%s)\n", std::strerror(errno));
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(err, "meshcast-pipeline: error: %s\n", e.what());
    return 2;
  }
}

}  // namespace meshcast::cli

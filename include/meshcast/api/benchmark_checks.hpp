// What a benchmark session checks before Google Benchmark sees it (found by review): the
// --benchmark_* flags whose values Google Benchmark takes on trust (min_time=nan or inf ran for
// ever, a bad format word printed the usage and exited with status 0 on every rank, random
// interleaving ran different benchmarks on different ranks at once), and each job a user
// registers (a NaN counter was written into the JSON as NaN, a NaN timeout failed only at run time
// without naming the benchmark, two jobs of one name were both registered).
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "../core/detail/deadline.hpp"
#include "../core/error.hpp"
#include "benchmark_job.hpp"

namespace meshcast::detail {

/// The most repetitions a session runs: each repeats every benchmark for its min_time.
inline constexpr long long max_benchmark_repetitions = 100000;

inline bool has_control_character(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return ascii_control(static_cast<unsigned char>(c)); });
}

/// Throws naming the job unless its name is new (`name_taken`: a registered benchmark has it) and
/// its name, label, timeout and counters can be reported.
inline void check_job(const std::string& name, const timed_job& job, bool name_taken) {
  if (name.empty()) throw error("a benchmark needs a name (Google Benchmark would report it as its suffixes alone)");
  const std::string who = "benchmark '" + printable(name) + "'";
  // Control characters went raw into the JSON report, which then did not parse.
  if (has_control_character(name)) throw error(who + ": its name holds a control character");
  if (name_taken) throw error(who + " is registered twice");
  if (!job.run || !job.wrong) throw error(who + ": a timed_job needs run and wrong");
  if (has_control_character(job.label)) throw error(who + ": its label holds a control character");
  checked_seconds(job.timeout_s, who + ": timed_job::timeout_s");
  const std::pair<double, const char*> counters[] = {
      {job.bytes, "bytes"}, {job.busiest_bytes, "busiest_bytes"}, {job.predicted_s, "predicted_s"}, {job.bound_s, "bound_s"}};
  for (const auto& [value, field] : counters)
    if (!(std::isfinite(value) && value >= 0))
      throw error(who + ": timed_job::" + field + " is " + number(value) + "; it must be a finite number >= 0");
}

namespace benchmark_flag {
// The value of `--benchmark_<name>=value`, or of a bare boolean `--benchmark_<name>` ("true").
inline bool value_of(std::string_view arg, std::string_view name, std::string_view& value) {
  const std::string flag = "--benchmark_" + std::string(name);
  if (arg == flag) {
    value = "true";
    return true;
  }
  if (arg.size() <= flag.size() || arg.substr(0, flag.size()) != flag || arg[flag.size()] != '=') return false;
  value = arg.substr(flag.size() + 1);
  return true;
}

// Google Benchmark's reading of a boolean: false only for 0, f, n, false, no and off.
inline bool truthy(std::string_view v) {
  std::string low(v);
  for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return !(low == "0" || low == "f" || low == "n" || low == "false" || low == "no" || low == "off");
}

inline bool read_double(std::string_view v, double& out) {
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc{} && end == v.data() + v.size();
}

[[noreturn]] inline void refuse(std::string_view arg, const std::string& why) {
  throw error("Google Benchmark's flag '" + printable(arg) + "': " + why);
}

// A time in seconds (Google Benchmark 1.8 takes "0.5s" too) or, from 1.8, an iteration count "100x".
inline void check_min_time(std::string_view arg, std::string_view v, bool zero_allowed) {
  if (!v.empty() && v.back() == 'x') {
    double n = 0;
    if (!read_double(v.substr(0, v.size() - 1), n) || !(n >= 1 && n <= 1e9) || n != std::floor(n))
      refuse(arg, "an iteration count must be a whole number from 1 to 1e9");
    return;
  }
  if (!v.empty() && v.back() == 's') v.remove_suffix(1);
  double s = 0;
  if (!read_double(v, s) || !(s <= max_time_limit_s) || !(zero_allowed ? s >= 0 : s > 0))
    refuse(arg, std::string("it must be a finite number of seconds, ") + (zero_allowed ? "from 0" : "above 0") + " and at most 1e6");
}
}  // namespace benchmark_flag

/// Throws naming the first --benchmark_* flag of argv whose value Google Benchmark would not
/// refuse but that would hang the session, run nothing in silence or desynchronise the ranks.
inline void check_benchmark_flags(int argc, char** argv) {
  using namespace benchmark_flag;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    std::string_view v;
    if (value_of(arg, "min_time", v)) {
      check_min_time(arg, v, false);
    } else if (value_of(arg, "min_warmup_time", v)) {
      check_min_time(arg, v, true);
    } else if (value_of(arg, "repetitions", v)) {
      double n = 0;
      if (!read_double(v, n) || !(n >= 1 && n <= static_cast<double>(max_benchmark_repetitions)) || n != std::floor(n))
        refuse(arg, "repetitions must be a whole number from 1 to " + std::to_string(max_benchmark_repetitions));
    } else if (value_of(arg, "enable_random_interleaving", v)) {
      if (truthy(v)) refuse(arg, "each rank would shuffle the benchmarks its own way and run another one at once");
    } else if (value_of(arg, "format", v) || value_of(arg, "out_format", v)) {
      if (v != "console" && v != "json" && v != "csv") refuse(arg, "the format is one of console, json and csv");
    } else if (value_of(arg, "time_unit", v)) {
      if (v != "ns" && v != "us" && v != "ms" && v != "s") refuse(arg, "the unit is one of ns, us, ms and s");
    }
  }
}

}  // namespace meshcast::detail

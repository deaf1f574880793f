// The flags of the benchmark programs: `--name value` pairs and bare switches, every value checked
// (a count in range, a finite real in range, one of the listed words), an unknown flag or a flag
// without its value refused. Every refusal is a meshcast::error naming the flag and the text.
// --help and -h are taken by every program: it prints its usage to stdout and exits with 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>  // meshcast::error, detail::printable

#include "../examples/cli/flag_values.hpp"  // whole_number, whole_integer

namespace meshcast_bench {

class flags {
 public:
  /// `valued`: the flags that take a value; `switches`: those that stand alone.
  flags(int argc, char** argv, std::set<std::string> valued, std::set<std::string> switches = {}) {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        help_ = true;
      } else if (switches.count(a)) {
        values_[a] = "";
      } else if (valued.count(a)) {
        if (i + 1 >= argc) throw meshcast::error("flag " + meshcast::detail::printable(a) + " needs a value");
        values_[a] = argv[++i];
      } else {
        throw meshcast::error("unknown flag '" + meshcast::detail::printable(a) + "'");
      }
    }
  }

  bool has(const std::string& name) const { return values_.count(name) != 0; }

  /// Whether --help or -h was given: the program prints its usage and exits with status 0.
  bool help() const { return help_; }

  /// A whole number in [lo, hi].
  std::int64_t count(const std::string& name, std::int64_t fallback, std::int64_t lo, std::int64_t hi) const {
    if (!has(name)) return fallback;
    const std::string& t = values_.at(name);
    const std::optional<std::int64_t> v = meshcast_cli::whole_integer(t);
    if (!v || *v < lo || *v > hi)
      throw meshcast::error(name + " '" + meshcast::detail::printable(t) + "' is not a whole number in " + std::to_string(lo) +
                            ".." + std::to_string(hi));
    return *v;
  }

  /// A finite real in [lo, hi].
  double real(const std::string& name, double fallback, double lo, double hi) const {
    if (!has(name)) return fallback;
    const std::string& t = values_.at(name);
    const std::optional<double> v = meshcast_cli::whole_number(t);
    if (!v || !std::isfinite(*v) || *v < lo || *v > hi)
      throw meshcast::error(name + " '" + meshcast::detail::printable(t) + "' is not a number in [" +
                            meshcast::detail::number(lo) + ", " + meshcast::detail::number(hi) + "]");
    return *v;
  }

  /// One of `words`.
  std::string word(const std::string& name, const std::string& fallback, const std::vector<std::string>& words) const {
    if (!has(name)) return fallback;
    const std::string& t = values_.at(name);
    std::string listed;
    for (const std::string& w : words) {
      if (w == t) return t;
      listed += (listed.empty() ? "" : ", ") + w;
    }
    throw meshcast::error(name + " '" + meshcast::detail::printable(t) + "' is not one of " + listed);
  }

  /// Any text but the empty one.
  std::string text(const std::string& name, const std::string& fallback) const {
    if (!has(name)) return fallback;
    if (values_.at(name).empty()) throw meshcast::error(name + " '' names nothing: give a value or leave the flag out");
    return values_.at(name);
  }

 private:
  std::map<std::string, std::string> values_;
  bool help_ = false;
};

}  // namespace meshcast_bench

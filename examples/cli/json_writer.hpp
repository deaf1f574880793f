// A minimal streaming JSON writer for the command-line tools (numbers, strings, arrays, objects).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <charconv>
#include <vector>

#include <meshcast/meshcast.hpp>  // error, detail::printable (also in single_include/)

namespace meshcast::cli {

/// Writes `text` to `path` and checks that every byte reached the file (a full disk, a missing
/// folder or a read-only file is an error naming the path).
inline void write_file(const std::string& path, const std::string& text, const char* what) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw error(std::string("cannot open ") + what + " '" + detail::printable(path) + "': " + std::strerror(errno));
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool flushed = std::fflush(f) == 0;
  const int saved = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !flushed || !closed)
    throw error(std::string("cannot write ") + what + " '" + detail::printable(path) + "': " + std::strerror(saved ? saved : errno));
}

/// Writes `text` to standard output and checks that it got there (e.g. not `> /dev/full`).
inline void write_stdout(const std::string& text) {
  const bool wrote = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  if (!wrote || std::fflush(stdout) != 0 || std::ferror(stdout))
    throw error(std::string("cannot write to standard output: ") + std::strerror(errno));
}

class json_writer {
 public:
  json_writer& begin_object() { return open('{'); }
  json_writer& end_object() { return close('}'); }
  json_writer& begin_array() { return open('['); }
  json_writer& end_array() { return close(']'); }
  json_writer& key(const std::string& k) {
    comma();
    string_literal(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  json_writer& value(long long v) {
    comma();
    out_ += std::to_string(v);
    return *this;
  }
  json_writer& value(double v) {
    comma();
    if (!std::isfinite(v)) {
      out_ += "null";
      return *this;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    out_ += buf;
    return *this;
  }
  /// The shortest text that reads back as exactly `v` ("2", "0.1", "1e-07"); null if not finite.
  json_writer& exact(double v) {
    comma();
    if (!std::isfinite(v)) {
      out_ += "null";
      return *this;
    }
    char buf[32];
    out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
    return *this;
  }
  json_writer& value(const std::string& s) {
    comma();
    string_literal(s);
    return *this;
  }
  json_writer& value(const char* s) { return value(std::string(s)); }
  /// A double with every digit it has (round-trips exactly).
  json_writer& precise(double v) {
    comma();
    if (!std::isfinite(v)) {
      out_ += "null";
      return *this;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out_ += buf;
    return *this;
  }
  json_writer& boolean(bool b) {
    comma();
    out_ += b ? "true" : "false";
    return *this;
  }
  template <class Range>
  json_writer& int_array(const Range& r) {
    begin_array();
    for (auto v : r) value(static_cast<long long>(v));
    return end_array();
  }
  const std::string& str() const { return out_; }

 private:
  json_writer& open(char c) {
    comma();
    out_ += c;
    first_ = true;
    return *this;
  }
  json_writer& close(char c) {
    out_ += c;
    first_ = false;
    return *this;
  }
  void comma() {
    if (after_key_) {
      after_key_ = false;
      first_ = false;
      return;
    }
    if (!first_ && !out_.empty()) out_ += ',';
    first_ = false;
  }
  // RFC 8259 text is UTF-8: a byte of no well-formed sequence (a file name on Linux need not be
  // UTF-8) becomes U+FFFD, as a decoder would read it, so that the document always parses.
  void string_literal(const std::string& s) {
    out_ += '"';
    for (std::size_t i = 0; i < s.size();) {
      const char c = s[i];
      const std::size_t n = detail::utf8_sequence(std::string_view(s).substr(i));
      if (n == 0) {
        out_ += "\\ufffd";
        ++i;
        continue;
      }
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
        out_ += buf;
      } else {
        out_.append(s, i, n);
      }
      i += n;
    }
    out_ += '"';
  }
  std::string out_;
  bool first_ = true;
  bool after_key_ = false;
};

}  // namespace meshcast::cli

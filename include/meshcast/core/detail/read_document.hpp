// Reads an input file for the JSON reader (a manifest, a pipeline description, a model graph) and
// stops at json::max_document_bytes: a file that is larger, or endless like /dev/zero, is refused
// after at most the limit plus one block is held, never read whole into memory first.
#pragma once

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "../error.hpp"
#include "json.hpp"

namespace meshcast::detail {

/// The bytes of the file `path`; `what` (e.g. "the manifest file") names it in every error.
inline std::string read_document(const std::string& path, const std::string& what) {
  const std::string named = what + " '" + printable(path, 1024) + "'";
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("cannot read " + named + (errno ? std::string(": ") + std::strerror(errno) : std::string()));
  std::string text;
  char block[1 << 16];
  while (in.read(block, sizeof block) || in.gcount() > 0) {
    text.append(block, static_cast<std::size_t>(in.gcount()));
    if (text.size() > json::max_document_bytes)
      throw error(named + " is larger than the limit of " + std::to_string(json::max_document_bytes) + " bytes");
  }
  if (in.bad()) throw error("cannot read " + named);
  return text;
}

}  // namespace meshcast::detail

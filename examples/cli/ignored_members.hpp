// The warning every tool gives for the members a file format ignores (pipeline files, model
// graphs, spec files): one line each, naming the file and the member, so that a misspelt key does
// not pass unseen while the format's contract (unknown members are ignored) holds.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>  // detail::printable (also in single_include/)

namespace meshcast::cli {

/// `program: warning: PATH: member "m" is not one FORMAT; ignored`, for each of `members` (their
/// control bytes already escaped by json::unknown_members).
inline void warn_ignored(std::FILE* err, const char* program, const std::string& path, const std::vector<std::string>& members,
                         const char* format) {
  for (const std::string& m : members)
    std::fprintf(err, "%s: warning: %s: member \"%s\" is not one %s; ignored\n", program,
                 meshcast::detail::printable(path, path.size()).c_str(), m.c_str(), format);
}

}  // namespace meshcast::cli

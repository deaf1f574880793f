// Library version, kept in step with the CMake and Meson project versions.
#pragma once

#define MESHCAST_VERSION_MAJOR 0
#define MESHCAST_VERSION_MINOR 1
#define MESHCAST_VERSION_PATCH 0

namespace meshcast {
inline constexpr const char* version_string = "0.1.0";
}  // namespace meshcast

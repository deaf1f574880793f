// How meshcast's type-independent code is linked. Header-only (the default): it is defined in
// the headers, inline. Compiled (MESHCAST_COMPILED, which the meshcast::compiled target sets):
// the front ends' headers only declare it and libmeshcast defines it once, so a program that
// includes <meshcast/mpi.hpp> parses and compiles only what depends on its own types.
#pragma once

#if defined(MESHCAST_COMPILED)
#define MESHCAST_INLINE
#else
#define MESHCAST_INLINE inline
#endif

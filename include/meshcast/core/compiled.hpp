// How meshcast's type-independent code is linked. Header-only (the default): it is defined in
// the headers, inline. Compiled: a front end's header only declares it and a library defines it
// once, so a program that reshards parses and compiles only what depends on its own types.
// MESHCAST_COMPILED (set by the meshcast::compiled target) does so for <meshcast/mpi.hpp>
// (libmeshcast); MESHCAST_COMPILED_NCCL (set by meshcast::compiled_nccl) for <meshcast/nccl.hpp>
// (libmeshcast-nccl). Two switches, because the two libraries need different runtimes (MPI; CUDA
// and NCCL): a program linking one is never asked for the other's.
#pragma once

#if defined(MESHCAST_COMPILED)
#define MESHCAST_INLINE
#else
#define MESHCAST_INLINE inline
#endif

#if defined(MESHCAST_COMPILED_NCCL)
#define MESHCAST_NCCL_INLINE
#else
#define MESHCAST_NCCL_INLINE inline
#endif

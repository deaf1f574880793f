// <meshcast/mpi.hpp>: a public entry point, the one call and the resharders over MPI
// (<meshcast/api/mpi.hpp>). It brings what they run and no more: the default policies (greedy
// under auto), the planner and the executor, or, in compiled mode, declarations only. Programs
// that plan, solve or name other policies include <meshcast/meshcast.hpp> too.
#pragma once

#include "api/mpi.hpp"

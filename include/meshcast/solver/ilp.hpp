// <meshcast/solver/ilp.hpp>: a public entry point; the code lives in <meshcast/schedule/solver/ilp.hpp>.
#pragma once

#include "../schedule/solver/ilp.hpp"

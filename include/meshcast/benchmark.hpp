// <meshcast/benchmark.hpp>: a public entry point; the code lives in <meshcast/api/benchmark.hpp>.
#pragma once

#include "api/benchmark.hpp"

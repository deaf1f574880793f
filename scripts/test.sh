#!/usr/bin/env bash
# Builds and runs meshcast's whole test suite (the command README.md gives and .ci/run calls).
# Extra CMake options may be passed through MESHCAST_CMAKE_ARGS, extra ctest options (a label to
# leave out) through MESHCAST_CTEST_ARGS; the build folder through BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build="${BUILD_DIR:-build/test}"
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" ${MESHCAST_CMAKE_ARGS:-}
cmake --build "$build" --parallel 2
# shellcheck disable=SC2086
ctest --test-dir "$build" --output-on-failure --parallel 2 --timeout 600 ${MESHCAST_CTEST_ARGS:-}

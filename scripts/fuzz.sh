#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz) with clang under ASan+UBSan and runs each for
# FUZZ_SECONDS (default 60) seconds from the committed seed corpus. New inputs go to a scratch
# corpus under the build folder; a crash leaves its input there (crash-*) and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
seconds="${FUZZ_SECONDS:-60}"
build="${BUILD_DIR:-build/fuzz}"
CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHCAST_FUZZ=ON \
  -DMESHCAST_BUILD_TESTS=OFF -DMESHCAST_BUILD_BENCH=OFF -DMESHCAST_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" --parallel 2 --target meshcast-fuzz-parsers meshcast-fuzz-reshard
for harness in parsers reshard; do
  scratch="$build/corpus-$harness"
  mkdir -p "$scratch"
  echo "== fuzzing $harness for $seconds s"
  (cd "$build" && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "./meshcast-fuzz-$harness" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
    "corpus-$harness" "$root/tests/fuzz/corpus/$harness" 2>&1 | tail -n 15)
done

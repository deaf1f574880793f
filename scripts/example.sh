#!/usr/bin/env bash
# Builds the examples and runs the main one: the (2,4) -> (3,4) plan of the seed's resharding case.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build/example -G Ninja -DCMAKE_BUILD_TYPE=Release -DMESHCAST_BUILD_TESTS=OFF -DMESHCAST_BUILD_BENCH=OFF
cmake --build build/example --parallel 2
./build/example/examples/meshcast-example-basic
./build/example/examples/meshcast-plan --shape 1024x512 --dtype-bytes 4 \
  --src-mesh 2x4 --src-spec S0,R --dst-mesh 3x4 --dst-spec R,S01

#!/usr/bin/env bash
# Installs, with apt-get, whatever of meshcast's build and test dependencies a Debian 12 machine lacks.
set -euo pipefail
packages=(g++ cmake make ninja-build python3 doctest-dev libbenchmark-dev meson pkg-config
          libmpich-dev mpich coinor-libcbc-dev libopenblas-dev valgrind clang libclang-rt-14-dev locales)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

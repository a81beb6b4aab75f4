#!/usr/bin/env bash
# Installs the Debian packages ember builds and tests with, if any are missing.
# Used by tools/build.sh (so by tools/run_tests.sh and tools/run_benchmark.sh); safe to run repeatedly.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libeigen3-dev doctest-dev nlohmann-json3-dev libfmt-dev libcli11-dev libxxhash-dev zlib1g-dev
  libopenblas-openmp-dev   # the CPU GEMM for big products (cmake/EmberBlas.cmake says why this build)
  python3-sklearn   # ships the digits data set used by the convergence test and example
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep "install ok installed" >/dev/null; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "ember: installing missing packages: ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

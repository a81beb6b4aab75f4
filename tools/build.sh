#!/usr/bin/env bash
# Configures and builds ember into a build folder (default: build/, Release).
#   tools/build.sh [build-dir] [extra cmake args...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${1:-$root/build}
shift || true

bash "$root/tools/install_deps.sh"
launcher=()
# The CUDA launcher is ignored when the CUDA backend is off.
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$root  # paths relative to the checkout: clones share cache hits
fi
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
cmake --build "$build_dir" --parallel "$(nproc)"

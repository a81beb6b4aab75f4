#!/usr/bin/env bash
# Installs the built ember into a temporary prefix and builds and runs a consumer project that
# finds it with find_package(ember).
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/consumer" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
# An empty kernel cache: the compiled step's kernels are built here, against the installed headers.
EMBER_CACHE_DIR="$work/cache" EMBER_EXPECTED_INCLUDE_DIR="$work/prefix/include/ember" LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/build/consumer"

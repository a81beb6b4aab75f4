#!/usr/bin/env bash
# ctest: the command-line tools start from an installed tree: each finds ember's libraries
# through its install RPATH ($ORIGIN/../lib), not LD_LIBRARY_PATH, and a checkpoint written by
# the installed ember-ckpt verifies.
#   check_installed_tools.sh BUILD_DIR
set -euo pipefail
build_dir=$1
work=$(mktemp -d /tmp/ember-installed-tools-XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
# LD_LIBRARY_PATH without the build tree's lib/ (tools/gpu_check.sh --prebuilt puts it there);
# other folders in it (staged fmt, CUDA's libraries) stay.
build_lib="$(cd "$build_dir" && pwd)/lib"
library_path=$(tr ":" "\n" <<<"${LD_LIBRARY_PATH:-}" | { grep -vxF "$build_lib" || true; } | paste -sd: -)
run() { env LD_LIBRARY_PATH="$library_path" "$@"; }
for tool in ember-bench ember-ckpt ember-ops; do
  run "$work/prefix/bin/$tool" --help >/dev/null
done
run "$work/prefix/bin/ember-ckpt" synth --world 2 --out "$work/checkpoint" --seed 1 --steps 0 >/dev/null
run "$work/prefix/bin/ember-ckpt" verify "$work/checkpoint" >/dev/null
echo "installed tools: all start"

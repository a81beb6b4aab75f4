#!/usr/bin/env bash
# The main job: builds ember and runs the reference (seed) MLP benchmark on the default device.
# Extra flags go to ember-bench; a --model or --mode among them replaces the default (seed,
# eager) instead of repeating it, which CLI11 would refuse.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/tools/build.sh" "$root/build"
# given FLAG ARGS...: whether ARGS has FLAG, as "FLAG VALUE" or "FLAG=VALUE".
given() {
  local flag=$1 arg
  shift
  for arg in "$@"; do [[ $arg == "$flag" || $arg == "$flag="* ]] && return 0; done
  return 1
}
defaults=()
given --model "$@" || defaults+=(--model seed)
given --mode "$@" || defaults+=(--mode eager)
"$root/build/bin/ember-bench" "${defaults[@]}" "$@"

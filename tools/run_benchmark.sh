#!/usr/bin/env bash
# The main job: builds ember and runs the reference (seed) MLP benchmark on the default device.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/tools/build.sh" "$root/build"
"$root/build/bin/ember-bench" --model seed --mode eager "$@"

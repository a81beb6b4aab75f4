#!/usr/bin/env bash
# ctest: tools/gpu_check.sh never passes a run that checked nothing. A misspelt --groups name and
# a --budget without a number are usage errors (exit 2); a --cpu-rehearsal of a pack whose every
# step the budget skips exits non-zero, saying the steps were out of budget (not that the pack
# misses libraries). Runs in a scratch build folder; no GPU, no build.
#   test_gpu_check_args.sh GPU_CHECK_SCRIPT
set -uo pipefail
gpu_check=$1
root=$(cd "$(dirname "$gpu_check")/.." && pwd)
scratch=$(mktemp -d /tmp/ember-gpu-check-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
unset OUT  # gpu_check.sh copies its results to $OUT when set

# expect STATUS PATTERN ARGS...: gpu_check.sh --cpu-rehearsal ARGS exits STATUS, printing PATTERN.
expect() {
  local expected=$1 pattern=$2 status
  shift 2
  bash "$gpu_check" --cpu-rehearsal --build-dir "$scratch/build" "$@" >"$scratch/log" 2>&1
  status=$?
  if [[ $status -ne $expected ]] || ! grep -qE -- "$pattern" "$scratch/log"; then
    echo "gpu_check.sh $*: exit $status (expected $expected), output:"; tail -n 20 "$scratch/log"; exit 1
  fi
}
expect 2 "unknown group 'test' in --groups; the groups: tests,micro," --groups test
expect 2 "--budget needs a value" --budget
expect 2 "--budget takes whole seconds, got 'abc'" --budget abc

# A pack of these sources, and a budget too small for any step.
mkdir -p "$scratch/pack"
echo "sources=$(bash "$root/tools/source_fingerprint.sh" "$root")" >"$scratch/pack/PACK_INFO"
: >"$scratch/pack/build.tar.xz"
expect 1 "[1-9][0-9]* not run for the budget" --prebuilt "$scratch/pack/build.tar.xz" --budget 10
grep -qE "packed binaries find their libraries +SKIP .*out of budget" "$scratch/log" || { cat "$scratch/log"; exit 1; }
if grep -q "miss libraries" "$scratch/log"; then echo "a budget skip was reported as missing libraries"; exit 1; fi
echo "gpu_check arguments: all checks passed"

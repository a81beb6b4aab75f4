#!/usr/bin/env bash
# ctest: tools/run_benchmark.sh forwards its flags to ember-bench, with --model seed and --mode
# eager only where the caller gave none (given twice, CLI11 refuses the run). Runs the script in
# a scratch tree whose build.sh does nothing and whose ember-bench prints its arguments.
#   test_run_benchmark.sh RUN_BENCHMARK_SCRIPT
set -euo pipefail
script=$1
tree=$(mktemp -d /tmp/ember-run-benchmark-XXXXXX)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/tools" "$tree/build/bin"
cp "$script" "$tree/tools/run_benchmark.sh"
echo 'exit 0' >"$tree/tools/build.sh"
printf '#!/usr/bin/env bash\necho "$*"\n' >"$tree/build/bin/ember-bench"
chmod +x "$tree/build/bin/ember-bench"
# expect ARGS... -- EXPECTED: the arguments ember-bench receives.
expect() {
  local args=() expected
  while [[ $1 != -- ]]; do args+=("$1"); shift; done
  expected=$2
  local got
  got=$(bash "$tree/tools/run_benchmark.sh" "${args[@]}")
  [[ $got == "$expected" ]] && return 0
  echo "run_benchmark.sh ${args[*]}: ember-bench got '$got', expected '$expected'"
  exit 1
}
expect -- "--model seed --mode eager"
expect --json --threads 1 -- "--model seed --mode eager --json --threads 1"
expect --model wide --json -- "--mode eager --model wide --json"
expect --mode compiled --warmup 2 -- "--model seed --mode compiled --warmup 2"
expect --model=wide --mode=compiled -- "--model=wide --mode=compiled"
echo "run_benchmark.sh: defaults only where not given"

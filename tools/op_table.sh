#!/usr/bin/env bash
# Runs the conformance cases of every registered op in its own process and prints one line per
# op: PASS, FAIL (with the first failure) or NO-CASES (ops checked by specific tests instead).
# One process per op, so a kernel that corrupts the CUDA context fails only its own op.
#
#   tools/op_table.sh BUILD_DIR cuda|cpu [JOBS] [OUT_FILE]
set -uo pipefail
build_dir=$1
device=$2
jobs=${3:-$(nproc)}
out_file=${4:-$build_dir/op_table.txt}
log_dir="$build_dir/op_table_logs"
rm -rf "$log_dir"
mkdir -p "$log_dir"
export EMBER_POISON_OUTPUTS=1
# JOBS processes at once: one thread each, or they oversubscribe the cores many times over.
export EMBER_NUM_THREADS=1 OMP_NUM_THREADS=1
[[ $device == cuda ]] && export EMBER_CONFORMANCE_DEVICES=cuda

run_one() {
  local op=$1
  EMBER_CONFORMANCE_OPS=$op "$build_dir/bin/test_conformance" -tc='conformance: *' >"$log_dir/$op.log" 2>&1
  local status=$?
  local asserts
  asserts=$(grep -oE 'assertions: *[0-9]+' "$log_dir/$op.log" | grep -oE '[0-9]+' | head -n 1)
  if [[ $status -ne 0 ]]; then
    local first
    first=$(grep -m 1 -E "op '$op'|threw|ERROR|error" "$log_dir/$op.log" | cut -c1-160)
    echo "$op FAIL $first"
  elif [[ ${asserts:-0} -eq 0 ]]; then
    echo "$op NO-CASES"
  else
    echo "$op PASS"
  fi
}
export -f run_one
export build_dir log_dir

# An empty op list (ember-ops failing to start, say) must fail, not pass with nothing run.
if ! names=$("$build_dir/bin/ember-ops" --names) || [[ -z $names ]]; then
  echo "op table on $device: ember-ops --names listed no ops" | tee "$out_file"
  exit 1
fi
xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} <<<"$names" | sort >"$out_file"
pass=$(grep -c ' PASS' "$out_file")
fail=$(grep -c ' FAIL' "$out_file")
none=$(grep -c ' NO-CASES' "$out_file")
cat "$out_file"
echo "op table on $device: $pass pass, $fail fail, $none without table cases (of $(wc -l <"$out_file") ops)"
exit $((fail > 0))
